/**
 * iPXE scripts: the per-node config (served from `http_root/<uuid>/config`, images by absolute
 * `http_url` URLs) and the global `boot.ipxe` every iPXE client is pointed at by DHCP, which chains
 * the per-MAC config of whichever NIC has one.
 *
 * iPXE's own rules these scripts live by (ipxe.org/scripting, ipxe.org/cmd): a command that fails
 * ends the script unless the line handles it with `||`; `prompt --timeout` counts milliseconds,
 * `sleep` whole seconds; lines are split on whitespace with no quoting, and the tokens `||`, `&&`,
 * `;` and anything from a token starting with `#` are syntax, not arguments.
 */
import { InvalidBootInput } from '../errors.js';
import type { BootLabel } from '../types.js';
import type { BootConfigParams } from './params.js';
import { joinParams, NODE_FILES, renderedLabels } from './params.js';

/**
 * Download retries of a per-node script, and the pause before each (seconds, doubling up to the
 * cap): 2, 4, 8, 16, 16. A missing image or a gone server then costs the HTTP server six requests
 * a minute at most instead of a tight loop; after the last retry the machine reboots, so it asks
 * DHCP again — by then the node's new owner may be the one answering.
 */
export const IPXE_RETRY = { attempts: 5, firstDelaySeconds: 2, maxDelaySeconds: 16 } as const;

/** How long `boot.ipxe` shows "no configuration" before it reboots, in milliseconds (iPXE's unit). */
export const BOOT_IPXE_REBOOT_MS = 10_000;

/**
 * Why iPXE would read `params` as script syntax rather than pass them to the kernel, or null when
 * it would not: a `||`, `&&` or `;` token would run what follows as a command, a token starting
 * with `#` would drop the rest of the line (`initrd=…` and the retry). iPXE has no quoting to escape
 * them with. `${…}` is left alone: iPXE expands settings there, as in `BOOTIF=${mac}`.
 */
export function ipxeParamsProblem(params: string): string | null {
  for (const token of params.split(/\s+/)) {
    if (token === '||' || token === '&&' || token === ';') return `must not contain the token ${token}: iPXE would run what follows as a command`;
    if (token.startsWith('#')) return `must not contain a word starting with # (${token}): iPXE would drop the rest of the kernel line`;
  }
  return null;
}

/** Renders a node's iPXE script with the `deploy` and/or `boot_ramdisk` labels. */
export function renderIpxe(p: BootConfigParams): string {
  if (p.httpUrl === undefined) throw new InvalidBootInput('httpUrl', 'is required for iPXE configs');
  const base = `${p.httpUrl}/${p.uuid}`;
  const timeout = p.ipxeTimeoutMs !== undefined && p.ipxeTimeoutMs > 0 ? `--timeout ${Math.round(p.ipxeTimeoutMs)} ` : '';
  const entry = (label: BootLabel, kernelLine: string, initrd: string): string[] => [
    `:${label}`,
    `set retry_label ${label}`,
    'imgfree',
    // `initrd=<name>` on the command line is how an EFI-stub kernel finds the initrd iPXE loaded;
    // the name is the last segment of the initrd URL.
    `kernel ${timeout}${kernelLine} initrd=${initrd} || goto retry`,
    `initrd ${timeout}${base}/${initrd} || goto retry`,
    'boot || goto retry',
    '',
  ];
  const entries: Record<BootLabel, () => string[]> = {
    deploy: () =>
      entry('deploy', joinParams(`${base}/${NODE_FILES.deployKernel}`, p.appendParams, p.deployParams, 'BOOTIF=${mac}'), NODE_FILES.deployRamdisk),
    boot_ramdisk: () => entry('boot_ramdisk', joinParams(`${base}/${NODE_FILES.kernel}`, 'root=/dev/ram0', p.appendParams, p.ramdiskParams), NODE_FILES.ramdisk),
  };
  const { attempts, firstDelaySeconds, maxDelaySeconds } = IPXE_RETRY;
  return [
    '#!ipxe',
    '',
    'set retries:int32 0',
    `set retry_delay:int32 ${firstDelaySeconds}`,
    `goto ${p.label}`,
    '',
    ...renderedLabels(p).flatMap((label) => entries[label]()),
    `# A failed download or boot waits, then tries its label again; after ${attempts} retries the machine`,
    '# reboots and asks DHCP again (the node may have a new owner by then).',
    ':retry',
    `iseq \${retries} ${attempts} && goto retry_give_up ||`,
    'inc retries',
    `echo Boot of \${retry_label} failed: retry \${retries} of ${attempts} in \${retry_delay} seconds`,
    'sleep ${retry_delay} ||',
    `iseq \${retry_delay} ${maxDelaySeconds} || inc retry_delay \${retry_delay}`,
    'goto ${retry_label}',
    '',
    ':retry_give_up',
    `echo Boot of \${retry_label} failed ${attempts + 1} times, rebooting`,
    'reboot',
    '',
  ].join('\n');
}

/**
 * The global `http_root/boot.ipxe`: tries each NIC in turn and chains `pxelinux.cfg/<mac-hexhyp>`
 * (relative to its own URL), so one DHCP boot file serves every node and every NIC. When no NIC has
 * a config it reboots after a pause, whether or not a key is pressed: the machine DHCPs again and
 * finds the config once the node's owner has written it.
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
    // prompt fails when its timeout passes; `||` keeps that from ending the script before `reboot`.
    `prompt --timeout ${BOOT_IPXE_REBOOT_MS} Press any key to reboot now, or wait ${BOOT_IPXE_REBOOT_MS / 1000} seconds... ||`,
    'reboot',
    '',
  ].join('\n');
}
