/**
 * Real Debian programs the tests talk to as peers (TFTP clients, ipmitool, the stock `baremetal`
 * client, dnsmasq…), in one table, and the one check every such test uses.
 *
 * `npm test` first runs scripts/install-test-peers.ts, which installs the missing packages of
 * {@link TEST_PEERS} when it can (root with apt-get). A peer still missing then makes the tests
 * that need it skip with one printed line naming the Debian package — except under `CI=true`, where
 * they fail, as the PostgreSQL tests do (test/helpers/databases.ts).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/** One program a test runs as a real peer, and the Debian package that provides it. */
export interface PeerSpec {
  /** The program: a name looked up on PATH (and in the sbin directories), or an absolute path. */
  readonly command: string;
  /** The Debian package that provides it (what apt-get installs and the skip line names). */
  readonly package: string;
  /** Arguments of a run that must exit 0 for the peer to count as usable (e.g. a python import). */
  readonly probe?: readonly string[];
}

/**
 * Every peer some test needs. requirePeer() refuses a peer missing from this table, so the install
 * step (which reads only this table) always knows everything the suite will ask for.
 */
export const TEST_PEERS: readonly PeerSpec[] = [
  { command: 'curl', package: 'curl' },
  { command: 'tftp', package: 'tftp-hpa' },
  { command: 'atftp', package: 'atftp' },
  { command: 'ipmitool', package: 'ipmitool' },
  // Debian's modules live in the system python, not in a pyenv/venv python that may come first on PATH.
  { command: '/usr/bin/python3', package: 'python3-pyghmi', probe: ['-c', 'import pyghmi.ipmi.bmc'] },
  // The ring OpenStack Ironic places nodes with: test/ring/tooz-live.test.ts queries it live, and the
  // take-over checker's tooz judge is checked against it.
  { command: '/usr/bin/python3', package: 'python3-tooz', probe: ['-c', 'import tooz.hashring'] },
  { command: 'baremetal', package: 'python3-ironicclient', probe: ['--version'] },
  { command: 'dnsmasq', package: 'dnsmasq-base' },
  // udhcpc, the DHCP client of test/boot/dhcp-dnsmasq.test.ts.
  { command: 'busybox', package: 'busybox-static' },
  // A real machine (test/realnode/): qemu under TCG, its NIC's iPXE ROM, the ramdisk's busybox (above),
  // PXELINUX for BIOS over TFTP, OVMF and iPXE's snponly.efi for UEFI. Packages that ship files, not
  // programs, are probed with `test -f`. The kernel is downloaded (apt-get download), not installed.
  { command: 'qemu-system-x86_64', package: 'qemu-system-x86' },
  { command: '/usr/bin/test', package: 'ipxe-qemu', probe: ['-f', '/usr/lib/ipxe/qemu/efi-virtio.rom'] },
  { command: '/usr/bin/test', package: 'ipxe', probe: ['-f', '/usr/lib/ipxe/snponly.efi'] },
  { command: '/usr/bin/test', package: 'pxelinux', probe: ['-f', '/usr/lib/PXELINUX/pxelinux.0'] },
  { command: '/usr/bin/test', package: 'syslinux-common', probe: ['-f', '/usr/lib/syslinux/modules/bios/ldlinux.c32'] },
  { command: '/usr/bin/test', package: 'ovmf', probe: ['-f', '/usr/share/OVMF/OVMF_CODE_4M.fd'] },
  // The deploy ramdisk's build (src/ramdisk/build.ts): strip node, pack with zstd, unpack .ko.xz modules.
  { command: 'strip', package: 'binutils' },
  { command: 'zstd', package: 'zstd' },
  { command: 'xz', package: 'xz-utils' },
  // The config drive of the direct deploy's real-VM scenario (an ISO 9660 image labelled config-2).
  { command: 'genisoimage', package: 'genisoimage' },
  // qcow2 instance images: the conductor converts them (src/boot/instance-images.ts) and tests make them.
  { command: 'qemu-img', package: 'qemu-utils' },
  // The direct deploy's OS image (test/realnode/os-image.ts): a FAT partition with syslinux.
  { command: 'mkfs.fat', package: 'dosfstools' },
  { command: 'mcopy', package: 'mtools' },
  { command: 'syslinux', package: 'syslinux' },
  // Its UEFI variant: a unified kernel image (systemd's EFI stub + kernel + initramfs) as the ESP's fallback loader.
  { command: '/usr/bin/test', package: 'systemd-boot-efi', probe: ['-f', '/usr/lib/systemd/boot/efi/linuxx64.efi.stub'] },
  // A real peer driving ironring agent (test/interop/): OpenStack Ironic 21.4 itself, API and conductor.
  { command: 'ironic-conductor', package: 'ironic-common' },
  // The dashboard's browser tests (test/web/): headless chromium driven by playwright-core.
  { command: 'chromium', package: 'chromium' },
];

// dnsmasq and friends install to sbin, which an ordinary user's PATH often lacks.
const SBIN_DIRS = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/** The absolute path `command` runs as, or null when it is nowhere on PATH (or the sbin directories). */
export function findCommand(command: string, envPath = process.env.PATH ?? ''): string | null {
  const candidates = command.includes('/')
    ? [command]
    : [...envPath.split(path.delimiter).filter((d) => d !== ''), ...SBIN_DIRS].map((d) => path.join(d, command));
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not there or not executable: try the next directory
    }
  }
  return null;
}

/** Null when the peer is usable; otherwise why not, in a few words. */
export function peerProblem(spec: PeerSpec): string | null {
  const file = findCommand(spec.command);
  if (file === null) return spec.command.includes('/') ? `${spec.command} not found` : `${spec.command} not found on PATH`;
  if (spec.probe === undefined) return null;
  const res = spawnSync(file, [...spec.probe], { encoding: 'utf8', timeout: 30_000 });
  if (res.error) return `${spec.command} ${spec.probe.join(' ')}: ${res.error.message}`;
  if (res.status !== 0) return `${spec.command} ${spec.probe.join(' ')} exited ${res.status}: ${(res.stderr.trim().split('\n').pop() ?? '').slice(0, 200)}`;
  return null;
}

/** The peers of {@link TEST_PEERS} that are not usable here, each with why. */
export function missingPeers(peers: readonly PeerSpec[] = TEST_PEERS): { spec: PeerSpec; problem: string }[] {
  return peers.flatMap((spec) => {
    const problem = peerProblem(spec);
    return problem === null ? [] : [{ spec, problem }];
  });
}

const answers = new Map<string, boolean>();

/**
 * Whether a group of tests that needs several peers (by Debian package, each in {@link TEST_PEERS})
 * and other conditions can run here. Unlike requirePeer it prints ONE line for the whole group,
 * naming everything missing — or, under `CI=true`, throws it. `problems` are conditions outside the
 * table (not root, no network namespaces…), each a few words.
 */
export function requirePeerGroup(purpose: string, packages: readonly string[], problems: readonly string[] = []): boolean {
  const specs = packages.map((pkg) => {
    const spec = TEST_PEERS.find((p) => p.package === pkg);
    if (spec === undefined) throw new Error(`requirePeerGroup(${purpose}): add ${pkg} to TEST_PEERS in test/helpers/peers.ts, so that npm test installs it`);
    return spec;
  });
  const missing = missingPeers(specs);
  const reasons = [...problems, ...missing.map((m) => m.problem)];
  if (reasons.length === 0) return true;
  const install = missing.length === 0 ? '' : ` (install the Debian packages ${[...new Set(missing.map((m) => m.spec.package))].join(' ')})`;
  const line = `${purpose}: ${reasons.join('; ')}${install}`;
  if (process.env.CI === 'true') throw new Error(`required under CI: ${line}`);
  console.warn(`skipping ${line}`);
  return false;
}

/**
 * Whether the tests that run `command` (from Debian package `pkg`) can run here:
 * `describe.skipIf(!requirePeer('atftp', 'atftp'))(…)`. When the peer is missing it prints one
 * line naming the package (once per test file) and returns false — or, under `CI=true`, throws,
 * so that the test file fails instead of skipping.
 */
export function requirePeer(command: string, pkg: string): boolean {
  const spec = TEST_PEERS.find((p) => p.command === command && p.package === pkg);
  if (spec === undefined) throw new Error(`requirePeer(${command}, ${pkg}): add it to TEST_PEERS in test/helpers/peers.ts, so that npm test installs it`);
  const key = `${command}\0${pkg}`;
  const known = answers.get(key);
  if (known !== undefined) return known;
  const problem = peerProblem(spec);
  if (problem !== null && process.env.CI === 'true') {
    throw new Error(`the Debian package ${pkg} is required under CI but unusable: ${problem} (apt-get install ${pkg})`);
  }
  if (problem !== null) console.warn(`skipping the tests that need ${command}: ${problem} (install the Debian package ${pkg})`);
  answers.set(key, problem === null);
  return problem === null;
}
