/**
 * The wire of a real-node test: a Linux bridge in the host namespace with the test's own /24, one
 * network namespace per conductor joined to it by a veth pair, and a tap device for the VM. Every
 * name starts with the run's prefix and every address lies in 10.77.<slot>.0/24, a range used only
 * inside what the test creates (no forwarding, no route out: the VM cannot reach anything else).
 *
 * A run claims a slot (a file holding its pid) so that two runs at once get different names and
 * subnets; a slot whose pid is dead was left by a crashed run, and the next run that claims it
 * first removes that run's leftovers: processes it recorded, namespaces and links with its prefix.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Where slots and their state (pid files, logs, data) live. */
export const RUNS_DIR = path.join(tmpdir(), 'ironring-realnode-runs');
const MAX_SLOTS = 40;

/** Runs `ip …`; throws with its stderr on failure. */
export function ip(...args: string[]): string {
  const res = spawnSync('ip', args, { encoding: 'utf8', timeout: 30_000 });
  if (res.error) throw new Error(`ip ${args.join(' ')}: ${res.error.message}`);
  if (res.status !== 0) throw new Error(`ip ${args.join(' ')} exited ${res.status}: ${res.stderr.trim()}`);
  return res.stdout;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether this process may build the wire: root, with `ip`, network namespaces and /dev/net/tun. */
export function networkProblems(): string[] {
  if (process.getuid?.() !== 0) return ['not root (network namespaces, a bridge and a tap device need it)'];
  const probe = `irnprobe${process.pid % 100000}`;
  const res = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (res.error) return [`no ip command (iproute2): ${res.error.message}`];
  if (res.status !== 0) return [`cannot create a network namespace: ${res.stderr.trim()}`];
  spawnSync('ip', ['netns', 'del', probe]);
  return existsSync('/dev/net/tun') ? [] : ['no /dev/net/tun (qemu needs a tap device)'];
}

/** Kills a pid recorded in `file` when it still runs `expected` (guards against a reused pid). */
export function killRecorded(file: string, expected: RegExp): void {
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    if (expected.test(cmdline)) process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/** Removes everything named with `prefix`: processes in its namespaces, the namespaces, its links. */
export function removeByPrefix(prefix: string): void {
  const namespaces = ip('netns', 'list')
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`${prefix}-`));
  for (const ns of namespaces) {
    // Processes of a crashed run still inside (dnsmasq, a conductor): ours, found by namespace.
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout.split('\n').filter((p) => /^\d+$/.test(p));
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    spawnSync('ip', ['netns', 'del', ns]);
  }
  const links = ip('-o', 'link', 'show')
    .split('\n')
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? '')
    .filter((n) => n.startsWith(prefix));
  for (const link of links) spawnSync('ip', ['link', 'del', link]);
}

/** A claimed slot: its number, name prefix, subnet and state directory. */
export interface Slot {
  slot: number;
  prefix: string;
  /** `10.77.<slot>` — append `.<host>`. */
  net: string;
  /** Directory of this run's files (pid files, logs, data directories), emptied at claim. */
  dir: string;
  release(): void;
}

/** Claims the lowest free slot, first cleaning up after a crashed run that held it. */
export function claimSlot(): Slot {
  mkdirSync(RUNS_DIR, { recursive: true });
  for (let slot = 1; slot <= MAX_SLOTS; slot++) {
    const lock = path.join(RUNS_DIR, `slot-${slot}.pid`);
    // Two digits, so that no prefix is the start of another (irn01 / irn10).
    const prefix = `irn${String(slot).padStart(2, '0')}`;
    const dir = path.join(RUNS_DIR, prefix);
    let fd: number;
    try {
      fd = openSync(lock, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(lock, 'utf8').trim() || '0');
      if (owner > 0 && alive(owner)) continue;
      // The run that held it crashed: clean up after it, then release its slot and try again.
      cleanUpRun(prefix, dir);
      rmSync(lock, { force: true });
      slot--;
      continue;
    }
    writeSync(fd, String(process.pid));
    closeSync(fd);
    cleanUpRun(prefix, dir);
    mkdirSync(dir, { recursive: true });
    return {
      slot,
      prefix,
      net: `10.77.${slot}`,
      dir,
      release: () => {
        cleanUpRun(prefix, dir);
        rmSync(lock, { force: true });
      },
    };
  }
  throw new Error(`all ${MAX_SLOTS} real-node slots under ${RUNS_DIR} are held by live runs`);
}

/** Kills the VMs a run recorded (`*.qemu.pid`), removes its namespaces and links, and its files. */
function cleanUpRun(prefix: string, dir: string): void {
  if (existsSync(dir)) {
    for (const f of readdirSync(dir)) if (f.endsWith('.qemu.pid')) killRecorded(path.join(dir, f), /qemu-system/);
  }
  removeByPrefix(prefix);
  rmSync(dir, { recursive: true, force: true });
}

/** One namespace on the bridge. */
export interface Namespace {
  name: string;
  /** The interface inside it, on the bridge. */
  iface: string;
  /** Its IPv4 address on the bridge. */
  address: string;
  /**
   * Its IPv6 address on the bridge, in the lab's unique-local /64 `fd77:0:<slot>::/64` (the prefix
   * a lab dnsmasq advertises: see dnsmasq.ts, "router advertisements").
   */
  ipv6: string;
  /** That /64, as `fd77:0:<slot>::`. */
  ipv6Prefix: string;
}

/** The bridge, the VM's tap and the namespaces on them. */
export interface LabNetwork {
  slot: Slot;
  bridge: string;
  /** The host's address on the bridge: what the namespaces reach the test process (API, BMC) by. */
  hostAddress: string;
  /** The tap device the VM's NIC uses. */
  tap: string;
  /** Creates namespace `<prefix>-<name>` with address `<net>.<host>` on the bridge. */
  addNamespace(name: string, host: number): Namespace;
  /** Removes one namespace (and its veth pair). */
  removeNamespace(ns: Namespace): void;
}

/** Builds the bridge (with the host address) and the tap; namespaces come with addNamespace. */
export function createLabNetwork(slot: Slot): LabNetwork {
  const bridge = `${slot.prefix}br`;
  const tap = `${slot.prefix}tap`;
  const hostAddress = `${slot.net}.1`;
  ip('link', 'add', bridge, 'type', 'bridge');
  // No STP and no forward delay: the bridge passes frames the moment a port is up (a DHCP
  // DISCOVER in the first seconds after power-on would otherwise be dropped).
  ip('link', 'set', bridge, 'type', 'bridge', 'stp_state', '0', 'forward_delay', '0');
  ip('addr', 'add', `${hostAddress}/24`, 'dev', bridge);
  ip('link', 'set', bridge, 'up');
  ip('tuntap', 'add', 'dev', tap, 'mode', 'tap');
  ip('link', 'set', tap, 'master', bridge);
  ip('link', 'set', tap, 'up');
  return {
    slot,
    bridge,
    hostAddress,
    tap,
    addNamespace(name, host) {
      if (!/^[a-z0-9]{1,4}$/.test(name)) throw new Error(`namespace name ${JSON.stringify(name)}: 1–4 lower-case letters or digits (interface names are short)`);
      if (!Number.isInteger(host) || host < 2 || host > 99) throw new Error(`namespace host ${host}: an integer in 2–99 (.1 is the host, .100 and up are DHCP leases)`);
      const ns = `${slot.prefix}-${name}`;
      const outside = `${slot.prefix}${name}h`;
      const inside = `${slot.prefix}${name}n`;
      const address = `${slot.net}.${host}`;
      const ipv6Prefix = `fd77:0:${slot.slot}::`;
      const ipv6 = `${ipv6Prefix}${host}`;
      ip('netns', 'add', ns);
      // No duplicate address detection inside: the namespace's link-local address is usable at once,
      // so that its dnsmasq's router advertisements (sent from it) go out from the first solicitation.
      // Set before the veth exists, which takes the namespace's defaults when it is created in it.
      ip('netns', 'exec', ns, 'sysctl', '-q', '-w', 'net.ipv6.conf.default.accept_dad=0');
      ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', ns);
      ip('link', 'set', outside, 'master', bridge);
      ip('link', 'set', outside, 'up');
      ip('-n', ns, 'addr', 'add', `${address}/24`, 'dev', inside);
      ip('-n', ns, 'addr', 'add', `${ipv6}/64`, 'dev', inside, 'nodad');
      ip('-n', ns, 'link', 'set', inside, 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      return { name: ns, iface: inside, address, ipv6, ipv6Prefix };
    },
    removeNamespace(ns) {
      spawnSync('ip', ['netns', 'del', ns.name]);
    },
  };
}
