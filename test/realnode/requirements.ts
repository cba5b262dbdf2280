/**
 * Whether the real-node tests can run here: root with network namespaces and /dev/net/tun, the
 * Debian packages of the VM and its boot programs, the BMC and dnsmasq, and the kernel download.
 * Like the PostgreSQL tests and every Debian peer: when something is missing the tests skip with ONE
 * printed line naming all of it, except under `CI=true`, where they fail.
 */
import { requirePeerGroup } from '../helpers/peers.js';
import { bootAssets } from './assets.js';
import { networkProblems } from './network.js';

/** Every Debian package the lab uses (all in TEST_PEERS; .ci/run installs them too). */
export const REAL_NODE_PACKAGES = [
  'qemu-system-x86',
  'ipxe-qemu',
  'ipxe',
  'busybox-static',
  'pxelinux',
  'syslinux-common',
  'ovmf',
  'dnsmasq-base',
  'ipmitool',
  'python3-pyghmi',
  'binutils',
  'zstd',
  'xz-utils',
  'genisoimage',
  'python3-ironicclient',
  'qemu-utils',
  'dosfstools',
  'mtools',
  'syslinux',
  'systemd-boot-efi',
] as const;

let answer: boolean | undefined;

/** Checks once per test file; builds (or finds cached) the kernel and ramdisk on the way. */
export function realNodeAvailable(): boolean {
  if (answer !== undefined) return answer;
  const problems = networkProblems();
  let ok = requirePeerGroup('the real-node tests', REAL_NODE_PACKAGES, problems);
  if (ok) {
    try {
      bootAssets();
    } catch (err) {
      ok = requirePeerGroup('the real-node tests', [], [`the boot assets cannot be built: ${(err as Error).message}`]);
    }
  }
  answer = ok;
  return ok;
}
