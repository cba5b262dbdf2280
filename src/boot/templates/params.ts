/** What every boot config template is rendered from: plain values, no I/O. */
import type { BootLabel } from '../types.js';

/** Inputs of the PXELINUX, iPXE and GRUB templates. */
export interface BootConfigParams {
  /** Node uuid: the directory holding the node's images. */
  uuid: string;
  /** The label booted by default. */
  label: BootLabel;
  /** Kernel parameters for every label (Ironic's `pxe_append_params`), already validated. */
  appendParams?: string;
  /** Extra kernel parameters for the deploy ramdisk only (e.g. `ipa-api-url=…`). */
  deployParams?: string;
  /** Extra kernel parameters for the instance ramdisk only (Ironic's `ramdisk_opts`). */
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

/** Image file names inside the node directory, the same in every layout. */
export const NODE_FILES = {
  deployKernel: 'deploy_kernel',
  deployRamdisk: 'deploy_ramdisk',
  kernel: 'kernel',
  ramdisk: 'ramdisk',
  config: 'config',
} as const;
