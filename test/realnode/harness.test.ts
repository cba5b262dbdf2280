/**
 * The real-node harness without a VM boot: the asset cache (idempotent, race-safe), slots (a crashed
 * run's namespaces, links and VMs are removed by the next run), the BMC that starts and kills its
 * machine, the VM's command line and waitForMarker. The parts that need root and packages skip like the scenarios.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bmcSimulatorAvailable, startBmcSimulator } from '../drivers/bmc-simulator.js';
import { waitUntil } from '../helpers/conductors.js';
import { cachedBuild } from './assets.js';
import { claimSlot, ip, RUNS_DIR } from './network.js';
import { realNodeAvailable } from './requirements.js';
import { defineVm, waitForMarker } from './vm.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-realnode-harness-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the asset cache', () => {
  it('builds once and finds the result on the next call', () => {
    let builds = 0;
    const build = (d: string) => {
      builds++;
      writeFileSync(path.join(d, 'out'), 'content');
    };
    const first = cachedBuild(dir, 'thing-1', 'out', build);
    const second = cachedBuild(dir, 'thing-1', 'out', build);
    expect(first).toBe(path.join(dir, 'thing-1', 'out'));
    expect(second).toBe(first);
    expect(builds).toBe(1);
    expect(readFileSync(first, 'utf8')).toBe('content');
    // No temporary build directory is left behind.
    expect(readdirSync(dir)).toEqual(['thing-1']);
  });

  it('keeps the other run\'s result when another run renamed its build into place first', () => {
    const file = cachedBuild(dir, 'raced', 'out', (d) => {
      // Another run finishes while this one builds.
      cachedBuild(dir, 'raced', 'out', (other) => writeFileSync(path.join(other, 'out'), 'theirs'));
      writeFileSync(path.join(d, 'out'), 'ours');
    });
    expect(readFileSync(file, 'utf8')).toBe('theirs');
    expect(readdirSync(dir)).toEqual(['raced']);
  });

  it('leaves nothing in the cache when a build fails, and refuses keys that are not plain names', () => {
    expect(() => cachedBuild(dir, 'broken', 'out', () => { throw new Error('apt-get download failed'); })).toThrow('apt-get download failed');
    expect(() => cachedBuild(dir, 'empty', 'out', () => undefined)).toThrow('building empty did not produce out');
    expect(readdirSync(dir)).toEqual([]);
    expect(() => cachedBuild(dir, '../escape', 'out', () => undefined)).toThrow(/cache key "..\/escape" must be a plain file name/);
  });
});

describe('waitForMarker', () => {
  it('waits for a log that does not exist yet and returns the match', async () => {
    const log = path.join(dir, 'serial.log');
    setTimeout(() => writeFileSync(log, 'SeaBIOS\r\nNODE-BOOTED cmdline=root=/dev/ram0 x=1\r\n'), 300);
    const { match, ms } = await waitForMarker(log, /NODE-BOOTED cmdline=([^\r\n]*)/, 10_000);
    expect(match[1]).toBe('root=/dev/ram0 x=1');
    expect(ms).toBeGreaterThanOrEqual(250);
  });

  it('fails after the timeout with the last lines of the console', async () => {
    const log = path.join(dir, 'serial.log');
    writeFileSync(log, 'iPXE initialising devices...ok\r\nNo configuration methods succeeded\r\n');
    await expect(waitForMarker(log, /NODE-BOOTED/, 300)).rejects.toThrow(/timed out after 300 ms waiting for \/NODE-BOOTED\/ in \S+; its last lines:\n[\s\S]*No configuration methods succeeded/);
  });
});

describe('defineVm', () => {
  const spec = { name: 'vm', tap: 'irn99tap', mac: '52:54:00:77:63:01', firmware: 'bios' as const };

  it('network-boots with SeaBIOS\'s default (stay at "No bootable device") unless told to reboot after a timeout', () => {
    expect(defineVm({ ...spec, dir }).command).toEqual(expect.arrayContaining(['-boot', 'n']));
    const vm = defineVm({ ...spec, dir, rebootTimeoutMs: 5000 });
    expect(vm.command[vm.command.indexOf('-boot') + 1]).toBe('order=n,reboot-timeout=5000');
  });

  it('refuses a reboot timeout qemu would refuse, naming the field', () => {
    for (const bad of [65536, -1, 1.5]) expect(() => defineVm({ ...spec, dir, rebootTimeoutMs: bad })).toThrow(/rebootTimeoutMs .*0–65535/);
  });
});

const bmcAvailable = await bmcSimulatorAvailable();

describe.skipIf(!bmcAvailable)('the virtual BMC with a machine behind it', () => {
  const ipmitool = (port: number, ...args: string[]) =>
    spawnSync('ipmitool', ['-I', 'lanplus', '-H', '127.0.0.1', '-p', String(port), '-U', 'admin', '-P', 'password', ...args], { encoding: 'utf8', timeout: 30_000 });

  it('starts the machine on power on, kills it on power off, and reads off when it stopped by itself', async () => {
    const marker = path.join(dir, 'ran');
    // The "machine" records its pid, then runs until killed — or exits after a while when told to.
    const bmc = await startBmcSimulator('admin', 'password', { machine: ['/bin/sh', '-c', `echo $$ > ${marker}; sleep "$(cat ${dir}/lifetime 2>/dev/null || echo 600)"`] });
    try {
      expect(ipmitool(bmc.port, 'power', 'status').stdout).toMatch(/Chassis Power is off/);
      expect(ipmitool(bmc.port, 'power', 'on').status).toBe(0);
      await waitUntil(() => existsSync(marker), 10_000, 'the machine to start');
      const pid = Number(readFileSync(marker, 'utf8'));
      expect(existsSync(`/proc/${pid}`)).toBe(true);
      expect(ipmitool(bmc.port, 'power', 'status').stdout).toMatch(/Chassis Power is on/);
      expect(ipmitool(bmc.port, 'power', 'off').status).toBe(0);
      expect(existsSync(`/proc/${pid}`)).toBe(false);
      expect(ipmitool(bmc.port, 'power', 'status').stdout).toMatch(/Chassis Power is off/);

      // A machine that powers itself off (qemu -no-reboot after `poweroff -f`) reads off.
      writeFileSync(path.join(dir, 'lifetime'), '1');
      rmSync(marker);
      expect(ipmitool(bmc.port, 'power', 'on').status).toBe(0);
      await waitUntil(() => existsSync(marker), 10_000, 'the machine to start again');
      await waitUntil(() => /Chassis Power is off/.test(ipmitool(bmc.port, 'power', 'status').stdout), 20_000, 'the machine to stop by itself');
      expect(bmc.events.filter((e) => /^VM started \d+$/.test(e))).toHaveLength(2);
    } finally {
      await bmc.stop();
    }
  });

  it('takes its machine with it when the BMC is killed', async () => {
    const marker = path.join(dir, 'ran');
    const bmc = await startBmcSimulator('admin', 'password', { machine: ['/bin/sh', '-c', `echo $$ > ${marker}; exec sleep 600`] });
    expect(ipmitool(bmc.port, 'power', 'on').status).toBe(0);
    await waitUntil(() => existsSync(marker) && readFileSync(marker, 'utf8').trim() !== '', 10_000, 'the machine to start');
    const pid = Number(readFileSync(marker, 'utf8'));
    await bmc.stop();
    await waitUntil(() => !existsSync(`/proc/${pid}`), 10_000, 'the machine to die with its BMC');
  });
});

// Root, namespaces and the packages, as the scenarios: one skip line outside CI, a failure under it.
describe.skipIf(!realNodeAvailable())('slots', () => {
  it('removes the namespaces, links and VMs of a crashed run before reusing its slot', async () => {
    // A crashed run: a slot file naming a dead pid, its namespace, its bridge, and a "VM" it recorded.
    const dead = spawnSync('/bin/true').pid!;
    const first = claimSlot();
    const { prefix, slot } = first;
    try {
      ip('netns', 'add', `${prefix}-old`);
      ip('link', 'add', `${prefix}br`, 'type', 'bridge');
      const vm = spawn('/bin/bash', ['-c', 'exec -a qemu-system-x86_64 sleep 600'], { stdio: 'ignore' });
      // Only once it runs under that name: a pid whose command line says otherwise is spared (the
      // guard against reused pids), and right after spawn the child may not have exec'd yet.
      const cmdline = () => (existsSync(`/proc/${vm.pid}/cmdline`) ? readFileSync(`/proc/${vm.pid}/cmdline`, 'utf8') : '');
      await waitUntil(() => cmdline().startsWith('qemu-system-x86_64'), 10_000, 'the fake VM to exec');
      writeFileSync(path.join(first.dir, 'old.qemu.pid'), String(vm.pid));
      writeFileSync(path.join(RUNS_DIR, `slot-${slot}.pid`), String(dead));
      const vmExited = new Promise((r) => vm.once('exit', r));

      const second = claimSlot();
      try {
        expect(second.slot).toBe(slot);
        expect(ip('netns', 'list')).not.toContain(`${prefix}-old`);
        expect(ip('-o', 'link', 'show')).not.toContain(`${prefix}br`);
        await vmExited;
        expect(readFileSync(path.join(RUNS_DIR, `slot-${slot}.pid`), 'utf8')).toBe(String(process.pid));
      } finally {
        second.release();
      }
    } finally {
      spawnSync('ip', ['netns', 'del', `${prefix}-old`]);
      spawnSync('ip', ['link', 'del', `${prefix}br`]);
    }
    expect(existsSync(path.join(RUNS_DIR, `slot-${slot}.pid`))).toBe(false);
  });

  it('gives a second live run another slot', () => {
    const a = claimSlot();
    const b = claimSlot();
    try {
      expect(b.slot).not.toBe(a.slot);
      expect(b.net).not.toBe(a.net);
    } finally {
      b.release();
      a.release();
    }
  });
});
