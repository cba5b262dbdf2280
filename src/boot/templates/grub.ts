/**
 * GRUB config (UEFI over TFTP). Paths are relative to the TFTP root, as Ironic writes them; GRUB
 * passes them to the TFTP server as they are. `linux`/`initrd` rather than Ironic's `linuxefi`,
 * which upstream GRUB (2.06+) does not have: its `linux` boots EFI-stub kernels itself.
 */
import type { BootLabel } from '../types.js';
import type { BootConfigParams } from './params.js';
import { joinParams, NODE_FILES, renderedLabels } from './params.js';

/** Renders a node's GRUB config with the `deploy` and/or `boot_ramdisk` menu entries. */
export function renderGrub(p: BootConfigParams): string {
  const dir = p.uuid;
  const entries: Record<BootLabel, string[]> = {
    deploy: [
      'menuentry "deploy" {',
      `    linux ${joinParams(`${dir}/${NODE_FILES.deployKernel}`, p.appendParams, p.deployParams)}`,
      `    initrd ${dir}/${NODE_FILES.deployRamdisk}`,
      '}',
      '',
    ],
    boot_ramdisk: [
      'menuentry "boot_ramdisk" {',
      `    linux ${joinParams(`${dir}/${NODE_FILES.kernel}`, 'root=/dev/ram0', p.appendParams, p.ramdiskParams)}`,
      `    initrd ${dir}/${NODE_FILES.ramdisk}`,
      '}',
      '',
    ],
  };
  return [`set default=${p.label}`, 'set timeout=5', 'set hidden_timeout_quiet=false', '', ...renderedLabels(p).flatMap((label) => entries[label])].join('\n');
}
