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
 * How a machine that meets a failure keeps trying, counted over everything it runs from power-on
 * to boot: iPXE settings live until the machine reboots and survive `chain`, so `boot.ipxe` and the
 * per-node scripts share one count (`ir_tries`) and one pause (`ir_delay`, seconds, doubling up to
 * the cap: 2, 4, 8, 16, 16). After `attempts` failed tries the machine reboots, so no path loops
 * for ever and a missing image costs the HTTP server a few requests a minute, never a tight loop.
 *
 * A try does not always ask the same server again. The node's files follow the ring at once: after
 * a hand-off the old owner deletes them (404) or has stopped (connection refused), and only DHCP
 * knows who answers for the machine now. So a per-node script retries its own label once (a
 * transient failure on a live owner), then runs `dhcp` again and chains `${filename}`: the
 * `boot.ipxe` of whoever answers now. A reboot would ask DHCP too, at the cost of the firmware's
 * POST and PXE start (20–60 s).
 */
export const IPXE_RETRY = { attempts: 5, firstDelaySeconds: 2, maxDelaySeconds: 16 } as const;

/** How long `boot.ipxe` shows that it gives up before it reboots, in milliseconds (iPXE's unit). */
export const BOOT_IPXE_REBOOT_MS = 10_000;

/** The settings the retry count and pause live in; kept across `chain`, so set only when unset. */
const RETRY_STATE = [
  `isset \${ir_tries} || set ir_tries:int32 0`,
  `isset \${ir_delay} || set ir_delay:int32 ${IPXE_RETRY.firstDelaySeconds}`,
];

/**
 * One counted try: gives up at `attempts` (to `giveUp`), else counts it, says `what` and waits the
 * current pause, doubling it for the next try.
 */
function countedTry(what: string, giveUp: string): string[] {
  const { attempts, maxDelaySeconds } = IPXE_RETRY;
  return [
    `iseq \${ir_tries} ${attempts} && goto ${giveUp} ||`,
    'inc ir_tries',
    `echo ${what}: retry \${ir_tries} of ${attempts} in \${ir_delay} seconds`,
    'sleep ${ir_delay} ||',
    `iseq \${ir_delay} ${maxDelaySeconds} || inc ir_delay \${ir_delay}`,
  ];
}

/**
 * Asks the wire again who boots this machine: the `dhcp` answer names the current owner's
 * `boot.ipxe` (a ProxyDHCP answer replaces the one from before; a dnsmasq answer carries the
 * owner's entry). `onFail` handles a DHCP with no answer, a missing file name, a refused chain.
 */
function askDhcpAgain(onFail: string): string[] {
  return [
    'echo Asking DHCP again: the node may have a new owner',
    `dhcp || goto ${onFail}`,
    `chain \${filename} || goto ${onFail}`,
    // A chained script that ends without booting comes back here: that counts as a failed try too.
    `goto ${onFail}`,
  ];
}

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
    // The first BIOS disk; where that fails (UEFI, no such disk), `exit 1` hands back to the
    // firmware with an error, on which UEFI firmware goes on to its next boot entry.
    localboot: () => [':localboot', 'echo Booting from the local disk', 'sanboot --no-describe --drive 0x80 || goto localboot_exit', ':localboot_exit', 'exit 1', ''],
  };
  const { attempts } = IPXE_RETRY;
  return [
    '#!ipxe',
    '',
    ...RETRY_STATE,
    // Failures of this script, from this server: the first is retried here, the next asks DHCP.
    'set ir_here:int32 0',
    `goto ${p.label}`,
    '',
    ...renderedLabels(p).flatMap((label) => entries[label]()),
    '# A failed download or boot waits, then tries its label once more from this server; a second',
    '# failure asks DHCP who boots the machine now (after a hand-off the old owner has deleted these',
    `# files or stopped). After ${attempts} tries in all, counted across chains, the machine reboots.`,
    ':retry',
    ...countedTry('Boot of ${retry_label} failed', 'retry_give_up'),
    'inc ir_here',
    'iseq ${ir_here} 1 && goto ${retry_label} ||',
    ...askDhcpAgain('retry'),
    '',
    ':retry_give_up',
    `echo Boot of \${retry_label} failed again after ${attempts} retries, rebooting`,
    'reboot',
    '',
  ].join('\n');
}

/**
 * The global `http_root/boot.ipxe`: tries each NIC in turn and chains `pxelinux.cfg/<mac-hexhyp>`
 * (relative to its own URL), so one DHCP boot file serves every node and every NIC. When no NIC has
 * a config here, the server that answered DHCP is (no longer) the node's owner — a hand-off moved
 * the files — so it asks DHCP again after the shared pause and chains the `boot.ipxe` named now.
 * After the shared number of tries it shows that it gives up and reboots, key or no key.
 */
export function renderBootIpxe(): string {
  const { attempts } = IPXE_RETRY;
  return [
    '#!ipxe',
    '',
    '# Written by ironring. Boots the first NIC that has a per-MAC config under pxelinux.cfg/.',
    ...RETRY_STATE,
    'set netid:int32 -1',
    ':loop',
    'inc netid',
    'isset ${net${netid}/mac} || goto loop_done',
    'echo Trying pxelinux.cfg/${net${netid}/mac:hexhyp}',
    'chain pxelinux.cfg/${net${netid}/mac:hexhyp} || goto loop',
    '',
    ':loop_done',
    ...countedTry('No boot configuration here for any NIC of this machine', 'give_up'),
    ...askDhcpAgain('loop_done'),
    '',
    ':give_up',
    `echo No boot configuration found after ${attempts} retries.`,
    // prompt fails when its timeout passes; `||` keeps that from ending the script before `reboot`.
    `prompt --timeout ${BOOT_IPXE_REBOOT_MS} Press any key to reboot now, or wait ${BOOT_IPXE_REBOOT_MS / 1000} seconds... ||`,
    'reboot',
    '',
  ].join('\n');
}
