/**
 * PXELINUX config (BIOS over TFTP). Paths are relative to the TFTP root, which PXELINUX resolves
 * against the directory it was loaded from — so `pxelinux.0` belongs in the TFTP root.
 */
import type { BootLabel } from '../types.js';
import type { BootConfigParams } from './params.js';
import { joinParams, NODE_FILES, renderedLabels } from './params.js';

/** Renders a node's PXELINUX config with the `deploy` and/or `boot_ramdisk` labels. */
export function renderPxelinux(p: BootConfigParams): string {
  const dir = p.uuid;
  const entries: Record<BootLabel, string[]> = {
    deploy: [
      'label deploy',
      `kernel ${dir}/${NODE_FILES.deployKernel}`,
      `append ${joinParams(`initrd=${dir}/${NODE_FILES.deployRamdisk}`, p.appendParams, p.deployParams)}`,
      // ipappend 2 adds BOOTIF=01-<mac>, which the deploy ramdisk uses to find the NIC it booted from.
      'ipappend 2',
      '',
    ],
    boot_ramdisk: [
      'label boot_ramdisk',
      `kernel ${dir}/${NODE_FILES.kernel}`,
      `append ${joinParams(`initrd=${dir}/${NODE_FILES.ramdisk}`, 'root=/dev/ram0', p.appendParams, p.ramdiskParams)}`,
      '',
    ],
    // The BIOS's first hard disk.
    localboot: ['label localboot', 'localboot 0', ''],
  };
  return [`default ${p.label}`, '', ...renderedLabels(p).flatMap((label) => entries[label])].join('\n');
}
