/** What every boot config template is rendered from: plain values, no I/O. */
import type { BootLabel } from '../types.js';
import { ALL_BOOT_LABELS, BOOT_LABELS } from '../types.js';
import { InvalidBootInput } from '../errors.js';

/** Inputs of the PXELINUX, iPXE and GRUB templates. */
export interface BootConfigParams {
  /** Node uuid: the directory holding the node's images. */
  uuid: string;
  /** The label booted by default. */
  label: BootLabel;
  /**
   * The labels the config holds: those whose images the node has, so a config never names a file
   * that is not there. Must include `label`. Default: both.
   */
  labels?: readonly BootLabel[];
  /** Kernel parameters for every label (Ironic's `pxe_append_params`), already validated. */
  appendParams?: string;
  /** Kernel parameters of the deploy ramdisk only (e.g. `ipa-api-url=…`, `driver_info.kernel_append_params`). */
  deployParams?: string;
  /** Kernel parameters of the instance ramdisk only (Ironic's `ramdisk_opts`, `instance_info.kernel_append_params`). */
  ramdiskParams?: string;
  /** Base URL of the HTTP boot server without trailing slash; required by the iPXE template. */
  httpUrl?: string;
  /** iPXE download timeout in milliseconds (`kernel --timeout`); 0 or absent: iPXE's default. */
  ipxeTimeoutMs?: number;
}

/** Joins parameter groups with single spaces, skipping empty ones. */
export function joinParams(...parts: (string | undefined)[]): string {
  return parts.filter((p): p is string => p !== undefined && p.trim() !== '').map((p) => p.trim()).join(' ');
}

/** The labels to render, in template order; throws when the active label is not among them. */
export function renderedLabels(p: BootConfigParams): BootLabel[] {
  const wanted: readonly BootLabel[] = p.labels ?? BOOT_LABELS;
  if (!wanted.includes(p.label)) throw new InvalidBootInput('label', `${p.label} is not among the labels the config holds (${wanted.join(', ') || 'none'})`);
  return ALL_BOOT_LABELS.filter((l) => wanted.includes(l));
}

/** Image file names inside the node directory, the same in every layout. */
export const NODE_FILES = {
  deployKernel: 'deploy_kernel',
  deployRamdisk: 'deploy_ramdisk',
  kernel: 'kernel',
  ramdisk: 'ramdisk',
  config: 'config',
} as const;
