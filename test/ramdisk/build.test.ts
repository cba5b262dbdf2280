/**
 * The parts of the deploy ramdisk's build that need no kernel package: module dependencies read
 * from `.modinfo`, load order, decompression, and the scripts /init runs. The whole build is run
 * (and booted) by test/realnode/direct-deploy.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectModules, moduleDepends, RAMDISK_INIT, RamdiskBuildError, UDHCPC_SCRIPT } from '../../src/ramdisk/build.js';

/** A fake module: an ELF-ish blob with a .modinfo string table. */
const ko = (name: string, depends: string[]) => Buffer.from(`\x7fELF...\0license=GPL\0depends=${depends.join(',')}\0name=${name}\0vermagic=6.1.0\0`, 'latin1');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-modules-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('deploy ramdisk: kernel modules', () => {
  it('reads depends= from .modinfo, dashes as underscores', () => {
    expect(moduleDepends(ko('virtio_net', ['net_failover', 'virtio-ring']))).toEqual(['net_failover', 'virtio_ring']);
    expect(moduleDepends(ko('virtio_ring', []))).toEqual([]);
    expect(moduleDepends(Buffer.from('no modinfo here'))).toEqual([]);
  });

  it('copies the wanted modules that exist, dependencies first, decompressed; skips built-in ones', () => {
    const tree = path.join(dir, 'lib', 'modules', '6.1.0', 'kernel');
    mkdirSync(path.join(tree, 'drivers', 'net'), { recursive: true });
    mkdirSync(path.join(tree, 'drivers', 'virtio'), { recursive: true });
    writeFileSync(path.join(tree, 'drivers', 'net', 'virtio_net.ko'), ko('virtio_net', ['net_failover', 'virtio_ring']));
    writeFileSync(path.join(tree, 'drivers', 'net', 'net_failover.ko'), ko('net_failover', ['failover']));
    writeFileSync(path.join(tree, 'drivers', 'net', 'failover.ko'), ko('failover', []));
    // An xz-compressed module, as newer Debian kernels ship them.
    writeFileSync(path.join(tree, 'drivers', 'virtio', 'virtio_ring.ko'), ko('virtio_ring', []));
    const xz = spawnSync('xz', ['-z', path.join(tree, 'drivers', 'virtio', 'virtio_ring.ko')]);
    expect(xz.status, 'xz (xz-utils) compresses the fake module').toBe(0);
    const out = path.join(dir, 'out');
    mkdirSync(out);
    const order = collectModules(path.join(dir, 'lib', 'modules', '6.1.0'), ['virtio_net', 'virtio_pci'], out);
    expect(order).toEqual(['failover', 'net_failover', 'virtio_ring', 'virtio_net']);
    expect(readdirSync(out).sort()).toEqual(['failover.ko', 'net_failover.ko', 'virtio_net.ko', 'virtio_ring.ko']);
    expect(readFileSync(path.join(out, 'virtio_ring.ko'))).toEqual(ko('virtio_ring', []));
  });

  it('refuses a dependency loop instead of recursing for ever', () => {
    mkdirSync(path.join(dir, 'm'));
    writeFileSync(path.join(dir, 'm', 'a.ko'), ko('a', ['b']));
    writeFileSync(path.join(dir, 'm', 'b.ko'), ko('b', ['a']));
    mkdirSync(path.join(dir, 'out'));
    expect(() => collectModules(path.join(dir, 'm'), ['a'], path.join(dir, 'out'))).toThrow(RamdiskBuildError);
  });
});

describe('deploy ramdisk: scripts', () => {
  it('are valid shell, and /init starts the agent again when it exits', () => {
    for (const script of [RAMDISK_INIT, UDHCPC_SCRIPT]) {
      const file = path.join(dir, 'script');
      writeFileSync(file, script);
      const check = spawnSync('/bin/sh', ['-n', file], { encoding: 'utf8' });
      expect(check.status, check.stderr).toBe(0);
    }
    expect(RAMDISK_INIT).toMatch(/while true; do\n\s+NODE_OPTIONS= \/usr\/bin\/node \/opt\/ironring\/dist\/agent\/main\.js/);
    expect(RAMDISK_INIT).toContain('mount -t devtmpfs');
  });

  it('the DHCP script configures the lease it is given', () => {
    // Run the script with a fake `ip` that records its calls.
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'ip'), `#!/bin/sh\necho "ip $*" >> ${dir}/calls\n`, { mode: 0o755 });
    const script = path.join(dir, 'udhcpc.script');
    writeFileSync(script, UDHCPC_SCRIPT.replace(': > /etc/resolv.conf', `: > ${dir}/resolv.conf`).replace('>> /etc/resolv.conf', `>> ${dir}/resolv.conf`), { mode: 0o755 });
    const run = spawnSync('/bin/sh', [script, 'bound'], { env: { PATH: `${bin}:/usr/bin:/bin`, interface: 'eth0', ip: '10.0.0.5', mask: '24', router: '10.0.0.1 10.0.0.2', dns: '10.0.0.53' }, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n')).toEqual(['ip addr flush dev eth0', 'ip addr add 10.0.0.5/24 dev eth0', 'ip route add default via 10.0.0.1 dev eth0']);
    expect(readFileSync(path.join(dir, 'resolv.conf'), 'utf8')).toBe('nameserver 10.0.0.53\n');
  });
});
