/**
 * The agent's `erase_devices`: every byte of each disk overwritten (random passes, then zeros read
 * back), on fake machines whose disks are files; the passes as Ironic's conductor hands them over;
 * and what it refuses.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../src/agent/agent-commands.js';
import type { CommandContext } from '../../../src/agent/agent-commands.js';
import { eraseDevice } from '../../../src/agent/disk/erase-device.js';
import { fakeMachine } from '../../helpers/fake-machine.js';

const MIB = 1024 * 1024;

describe('erase_devices', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ironring-erase-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('overwrites every byte, a random pass then zeros, and counts the passes', async () => {
    // 9 MiB + 512: not a multiple of the 4 MiB block, so the last partial block is covered too.
    const machine = await fakeMachine(join(dir, 'm'), 9 * MIB + 512, 0x11);
    const passes: number[] = [];
    const done = await eraseDevice(machine.disk, { iterations: 2, zeroize: true, progress: (pass) => passes.push(pass) }, machine.sysRoot);
    expect(done).toMatchObject({ bytes: 9 * MIB + 512, passes: 3 });
    expect(passes).toEqual([1, 2, 3]);
    const disk = await readFile(machine.disk);
    expect(disk.length).toBe(9 * MIB + 512);
    expect(disk.every((b) => b === 0)).toBe(true);
  });

  it('random passes alone leave no byte of the old pattern in place (up to chance)', async () => {
    const machine = await fakeMachine(join(dir, 'm'), 4 * MIB, 0x11);
    await eraseDevice(machine.disk, { iterations: 1, zeroize: false }, machine.sysRoot);
    const disk = await readFile(machine.disk);
    // A random byte equals 0x11 with chance 1/256: about 16 Ki of 4 MiB, never most of them.
    const same = disk.reduce((n, b) => n + (b === 0x11 ? 1 : 0), 0);
    expect(same).toBeLessThan(disk.length / 128);
    expect(disk.every((b) => b === 0)).toBe(false);
  });

  it('refuses a pass count out of range, or nothing to do', async () => {
    const machine = await fakeMachine(join(dir, 'm'), MIB, 0x11);
    await expect(eraseDevice(machine.disk, { iterations: 11, zeroize: true }, machine.sysRoot)).rejects.toThrow('iterations: 11');
    await expect(eraseDevice(machine.disk, { iterations: 0, zeroize: false }, machine.sysRoot)).rejects.toThrow('nothing to do');
  });

  it('runs as the agent\'s clean step with the passes from the node\'s driver_internal_info, and refuses bad ones', async () => {
    const machine = await fakeMachine(join(dir, 'm'), 2 * MIB, 0x11);
    const lines: string[] = [];
    const context = { sysRoot: machine.sysRoot, devRoot: machine.devRoot, signal: new AbortController().signal, log: (l: string) => lines.push(l) } as unknown as CommandContext;
    const step = { step: 'erase_devices', interface: 'deploy', priority: 10 };
    const run = (info: Record<string, unknown>) => COMMANDS['clean.execute_clean_step']!.run({ step, node: { driver_internal_info: info }, ports: [], clean_version: {} }, context);
    expect(await run({ agent_erase_devices_iterations: 0, agent_erase_devices_zeroize: true })).toEqual({ clean_result: null, clean_step: step });
    expect((await readFile(machine.disk)).every((b) => b === 0)).toBe(true);
    expect(lines).toEqual([expect.stringMatching(/^erase_devices: \/dev\/vda overwritten 1 time\(s\), 2097152 bytes, in [\d.]+ s$/)]);
    await expect(run({ agent_erase_devices_iterations: 0, agent_erase_devices_zeroize: false })).rejects.toThrow('would erase nothing');
    await expect(run({ agent_erase_devices_iterations: 'many' })).rejects.toThrow('agent_erase_devices_iterations: "many" is not a whole number');
  });

  it("leaves alone the disks the node's properties.skip_block_devices names (root device hints), in both erase steps", async () => {
    const machine = await fakeMachine(join(dir, 'm'), 2 * MIB, 0x11);
    const lines: string[] = [];
    const context = { sysRoot: machine.sysRoot, devRoot: machine.devRoot, signal: new AbortController().signal, log: (l: string) => lines.push(l) } as unknown as CommandContext;
    const run = (step: string, skip: unknown) => COMMANDS['clean.execute_clean_step']!.run({ step: { step, interface: 'deploy' }, node: { properties: { skip_block_devices: skip } } }, context);
    for (const step of ['erase_devices', 'erase_devices_metadata']) {
      await run(step, [{ name: '/dev/sdz' }, { name: '/dev/vda' }]);
      expect((await readFile(machine.disk)).every((b) => b === 0x11)).toBe(true);
    }
    expect(lines).toEqual(['erasing the disk: /dev/vda skipped (properties.skip_block_devices)', 'erasing the metadata: /dev/vda skipped (properties.skip_block_devices)']);
    await expect(run('erase_devices', [{ colour: 'blue' }])).rejects.toThrow('node.properties.skip_block_devices[0]:');
    await expect(run('erase_devices', 'vda')).rejects.toThrow('expected a list');
    // A hint that matches nothing leaves the disk to the erase.
    await run('erase_devices', [{ name: '/dev/sdz' }]);
    expect((await readFile(machine.disk)).every((b) => b === 0)).toBe(true);
  });
});
