/**
 * iPXE scripts: the per-node config (served from `http_root/<uuid>/config`, images by absolute
 * `http_url` URLs) and the global `boot.ipxe` every iPXE client is pointed at by DHCP, which chains
 * the per-MAC config of whichever NIC has one.
 */
import { InvalidBootInput } from '../errors.js';
import type { BootConfigParams } from './params.js';
import { joinParams, NODE_FILES } from './params.js';

/** Renders a node's iPXE script with the `deploy` and `boot_ramdisk` labels. */
export function renderIpxe(p: BootConfigParams): string {
  if (p.httpUrl === undefined) throw new InvalidBootInput('httpUrl', 'is required for iPXE configs');
  const base = `${p.httpUrl}/${p.uuid}`;
  const timeout = p.ipxeTimeoutMs !== undefined && p.ipxeTimeoutMs > 0 ? `--timeout ${Math.round(p.ipxeTimeoutMs)} ` : '';
  return [
    '#!ipxe',
    '',
    `goto ${p.label}`,
    '',
    ':deploy',
    'imgfree',
    // On a failed download iPXE retries the label rather than falling through to the next one.
    `kernel ${timeout}${joinParams(`${base}/${NODE_FILES.deployKernel}`, p.appendParams, p.deployParams, 'BOOTIF=${mac}', `initrd=${NODE_FILES.deployRamdisk}`)} || goto deploy`,
    `initrd ${timeout}${base}/${NODE_FILES.deployRamdisk} || goto deploy`,
    'boot',
    '',
    ':boot_ramdisk',
    'imgfree',
    `kernel ${timeout}${joinParams(`${base}/${NODE_FILES.kernel}`, 'root=/dev/ram0', p.appendParams, p.ramdiskParams, `initrd=${NODE_FILES.ramdisk}`)} || goto boot_ramdisk`,
    `initrd ${timeout}${base}/${NODE_FILES.ramdisk} || goto boot_ramdisk`,
    'boot',
    '',
  ].join('\n');
}

/**
 * The global `http_root/boot.ipxe`: tries each NIC in turn and chains `pxelinux.cfg/<mac-hexhyp>`
 * (relative to its own URL), so one DHCP boot file serves every node and every NIC.
 */
export function renderBootIpxe(): string {
  return [
    '#!ipxe',
    '',
    '# Written by ironring. Boots the first NIC that has a per-MAC config under pxelinux.cfg/.',
    'set netid:int32 -1',
    ':loop',
    'inc netid',
    'isset ${net${netid}/mac} || goto loop_done',
    'echo Trying pxelinux.cfg/${net${netid}/mac:hexhyp}',
    'chain pxelinux.cfg/${net${netid}/mac:hexhyp} || goto loop',
    '',
    ':loop_done',
    'echo No boot configuration found for any NIC of this machine.',
    'echo Press any key to reboot...',
    'prompt --timeout 180',
    'reboot',
    '',
  ].join('\n');
}
