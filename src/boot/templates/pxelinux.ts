/**
 * PXELINUX config (BIOS over TFTP). Paths are relative to the TFTP root, which PXELINUX resolves
 * against the directory it was loaded from — so `pxelinux.0` belongs in the TFTP root.
 */
import type { BootConfigParams } from './params.js';
import { joinParams, NODE_FILES } from './params.js';

/** Renders a node's PXELINUX config with the `deploy` and `boot_ramdisk` labels. */
export function renderPxelinux(p: BootConfigParams): string {
  const dir = p.uuid;
  return [
    `default ${p.label}`,
    '',
    'label deploy',
    `kernel ${dir}/${NODE_FILES.deployKernel}`,
    `append ${joinParams(`initrd=${dir}/${NODE_FILES.deployRamdisk}`, p.appendParams, p.deployParams)}`,
    // ipappend 2 adds BOOTIF=01-<mac>, which the deploy ramdisk uses to find the NIC it booted from.
    'ipappend 2',
    '',
    'label boot_ramdisk',
    `kernel ${dir}/${NODE_FILES.kernel}`,
    `append ${joinParams(`initrd=${dir}/${NODE_FILES.ramdisk}`, 'root=/dev/ram0', p.appendParams, p.ramdiskParams)}`,
    '',
  ].join('\n');
}
