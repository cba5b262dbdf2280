/**
 * The peers helper and npm test's install step, on a PATH of our own making: a fake `apt-get` that
 * records what it is asked and "installs" programs as shell scripts, so nothing touches the real
 * package system.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Peers from './peers.js';

type PeersModule = typeof Peers;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const SCRIPT = path.join(ROOT, 'scripts/install-test-peers.ts');

let dir: string;
let bin: string;
const saved = { PATH: process.env.PATH, CI: process.env.CI };

function executable(file: string, body: string): void {
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-peers-'));
  bin = path.join(dir, 'bin');
  mkdirSync(bin);
  vi.resetModules(); // requirePeer remembers its answers per module instance
});
afterEach(() => {
  process.env.PATH = saved.PATH;
  if (saved.CI === undefined) delete process.env.CI;
  else process.env.CI = saved.CI;
  vi.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

async function freshPeers(): Promise<PeersModule> {
  return import('./peers.js');
}

describe('requirePeer', () => {
  it('skips with one line naming the Debian package when the program is missing', async () => {
    process.env.PATH = bin;
    delete process.env.CI;
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const { requirePeer } = await freshPeers();
    expect(requirePeer('atftp', 'atftp')).toBe(false);
    expect(requirePeer('atftp', 'atftp')).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/^skipping the tests that need atftp: atftp not found on PATH \(install the Debian package atftp\)$/);
  });

  it('fails under CI=true instead of skipping', async () => {
    process.env.PATH = bin;
    process.env.CI = 'true';
    const { requirePeer } = await freshPeers();
    expect(() => requirePeer('tftp', 'tftp-hpa')).toThrow(/Debian package tftp-hpa is required under CI but unusable: tftp not found on PATH/);
  });

  it('runs the tests when the program is on PATH, and checks its probe', async () => {
    process.env.PATH = bin;
    process.env.CI = 'true';
    executable(path.join(bin, 'atftp'), 'exit 0');
    executable(path.join(bin, 'baremetal'), 'echo "broken install" >&2; exit 3');
    const { requirePeer } = await freshPeers();
    expect(requirePeer('atftp', 'atftp')).toBe(true);
    expect(() => requirePeer('baremetal', 'python3-ironicclient')).toThrow(/baremetal --version exited 3: broken install/);
  });

  it('refuses a peer that is not in TEST_PEERS, which the install step would not know about', async () => {
    const { requirePeer } = await freshPeers();
    expect(() => requirePeer('nc', 'netcat-openbsd')).toThrow(/add it to TEST_PEERS/);
  });
});

describe('requirePeerGroup', () => {
  it('skips a group with ONE line naming every problem and every missing package', async () => {
    process.env.PATH = bin;
    delete process.env.CI;
    executable(path.join(bin, 'dnsmasq'), 'exit 0');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const { requirePeerGroup } = await freshPeers();
    expect(requirePeerGroup('the real-node tests', ['qemu-system-x86', 'dnsmasq-base', 'atftp'], ['not root'])).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toBe(
      'skipping the real-node tests: not root; qemu-system-x86_64 not found on PATH; atftp not found on PATH (install the Debian packages qemu-system-x86 atftp)',
    );
  });

  it('fails under CI=true, and runs when nothing is missing', async () => {
    process.env.PATH = bin;
    process.env.CI = 'true';
    executable(path.join(bin, 'dnsmasq'), 'exit 0');
    const { requirePeerGroup } = await freshPeers();
    expect(requirePeerGroup('the real-node tests', ['dnsmasq-base'])).toBe(true);
    expect(() => requirePeerGroup('the real-node tests', ['dnsmasq-base'], ['no /dev/net/tun'])).toThrow(/^required under CI: the real-node tests: no \/dev\/net\/tun$/);
    expect(() => requirePeerGroup('the real-node tests', ['netcat-openbsd'])).toThrow(/add netcat-openbsd to TEST_PEERS/);
  });
});

describe('npm test install step (scripts/install-test-peers.ts)', () => {
  function runScript(env: NodeJS.ProcessEnv): { code: number | null; stdout: string; stderr: string } {
    const res = spawnSync(process.execPath, [TSX, SCRIPT], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
    return { code: res.status, stdout: res.stdout, stderr: res.stderr };
  }

  it('installs the missing peers with apt-get, saying which in one line first', () => {
    const log = path.join(dir, 'apt.log');
    // The fake apt-get "installs" each package's program into bin/ and records its argv.
    executable(
      path.join(bin, 'apt-get'),
      `echo "$@" >> ${log}
for a in "$@"; do case "$a" in
  atftp) printf '#!/bin/sh\\n' > ${bin}/atftp; chmod 755 ${bin}/atftp;;
  tftp-hpa) printf '#!/bin/sh\\n' > ${bin}/tftp; chmod 755 ${bin}/tftp;;
esac; done`,
    );
    for (const p of ['curl', 'ipmitool', 'baremetal', 'dnsmasq', 'busybox', 'qemu-system-x86_64', 'strip', 'zstd', 'xz', 'genisoimage', 'qemu-img', 'mkfs.fat', 'mcopy', 'syslinux', 'ironic-conductor', 'chromium']) executable(path.join(bin, p), 'exit 0');
    // /usr/bin/python3 with pyghmi, and the files the real-node packages ship (probed by absolute
    // path), are outside our PATH's reach: present or not, they are reported honestly.
    const res = runScript({ PATH: bin, IRONRING_TEST_INSTALL_PEERS: '' });
    if (process.getuid?.() !== 0) {
      expect(res.stdout).toMatch(/^test peers: not installing .*atftp.* \(not root/m);
      return;
    }
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^test peers: installing the Debian packages the tests use as real peers: apt-get install -y --no-install-recommends tftp-hpa atftp( python3-pyghmi)?( python3-tooz)?( ipxe-qemu)?( ipxe)?( pxelinux)?( syslinux-common)?( ovmf)?( systemd-boot-efi)?$/);
    expect(readFileSync(log, 'utf8')).toMatch(/^-o DPkg::Lock::Timeout=300 -o Acquire::Retries=1 install -y -qq --no-install-recommends tftp-hpa atftp/m);
    expect(existsSync(path.join(bin, 'atftp'))).toBe(true);
  });

  it('says in one line what it could not install and exits 0, leaving the decision to the tests', () => {
    executable(path.join(bin, 'apt-get'), 'echo "E: Unable to locate package curl" >&2; exit 100');
    const res = runScript({ PATH: bin, IRONRING_TEST_INSTALL_PEERS: '' });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^test peers: not installing curl tftp-hpa atftp ipmitool .*python3-ironicclient.* \((not root|apt-get (install|update) failed, exit 100: E: Unable to locate package curl)/m);
  });

  it('does nothing but say so with IRONRING_TEST_INSTALL_PEERS=0', () => {
    const log = path.join(dir, 'apt.log');
    executable(path.join(bin, 'apt-get'), `echo "$@" >> ${log}`);
    const res = runScript({ PATH: bin, IRONRING_TEST_INSTALL_PEERS: '0' });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^test peers: not installing .*atftp.* \(IRONRING_TEST_INSTALL_PEERS=0\)/m);
    expect(existsSync(log)).toBe(false);
  });
});
