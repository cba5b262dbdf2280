/**
 * The metadata erase (IPA's `erase_devices_metadata` clean step) on disk files holding real file
 * systems: util-linux's `blkid --probe` finds FAT and swap in two MBR partitions before, and nothing
 * at the disk or either partition after; the table is gone; the bytes between the zeroed ends are
 * untouched (it is not a full erase). Through the agent's command API too, on a fake machine.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../src/agent/agent-commands.js';
import type { CommandContext } from '../../../src/agent/agent-commands.js';
import { ERASE_BYTES, eraseDeviceMetadata, getPartitionUuids } from '../../../src/agent/disk/index.js';
import { fakeMachine } from '../../helpers/fake-machine.js';
import { requirePeer } from '../../helpers/peers.js';

const MIB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ironring-erase-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What libblkid finds at byte `offset` of `file` (TYPE=…), or null. */
function probe(file: string, offset: number): string | null {
  const res = spawnSync('blkid', ['--probe', '--offset', String(offset), '--output', 'export', file], { encoding: 'utf8' });
  return /^TYPE=(.*)$/m.exec(res.stdout)?.[1] ?? null;
}

/** A 32 MiB disk: an MBR with FAT in 1–13 MiB and swap in 13–29 MiB, 0x11 elsewhere. */
async function disk(): Promise<string> {
  const image = Buffer.alloc(32 * MIB, 0x11);
  image.fill(0, 0, 512);
  const entry = (slot: number, type: number, startMib: number, mib: number) => {
    const at = 446 + slot * 16;
    image[at + 4] = type;
    image.writeUInt32LE(startMib * 2048, at + 8);
    image.writeUInt32LE(mib * 2048, at + 12);
  };
  entry(0, 0x0c, 1, 12);
  entry(1, 0x82, 13, 16);
  image.writeUInt32LE(0x2a2a2a2a, 440);
  image[510] = 0x55;
  image[511] = 0xaa;
  const fat = join(dir, 'fat.img');
  const made = spawnSync('mkfs.fat', ['-C', fat, String(12 * 1024)], { encoding: 'utf8' });
  expect(made.status, made.stderr).toBe(0);
  (await readFile(fat)).copy(image, 1 * MIB);
  const swap = join(dir, 'swap.img');
  await writeFile(swap, Buffer.alloc(16 * MIB));
  const sw = spawnSync('mkswap', [swap], { encoding: 'utf8' });
  expect(sw.status, sw.stderr).toBe(0);
  (await readFile(swap)).copy(image, 13 * MIB);
  const file = join(dir, 'disk');
  await writeFile(file, image);
  return file;
}

describe.skipIf(!requirePeer('mkfs.fat', 'dosfstools'))('erase_devices_metadata', () => {
  it('zeroes both ends of each partition and of the disk: no table and no signature is left, the rest stays', async () => {
    const file = await disk();
    expect((await getPartitionUuids(file)).partitions).toHaveLength(2);
    expect([probe(file, 1 * MIB), probe(file, 13 * MIB)]).toEqual(['vfat', 'swap']);
    const before = await readFile(file);

    const erased = await eraseDeviceMetadata(file);
    expect(erased.partitions).toBe(2);
    expect(erased.regions).toEqual([
      [1 * MIB, ERASE_BYTES],
      [12 * MIB, ERASE_BYTES],
      [13 * MIB, ERASE_BYTES],
      [28 * MIB, ERASE_BYTES],
      [0, ERASE_BYTES],
      [31 * MIB, ERASE_BYTES],
    ]);
    await expect(getPartitionUuids(file)).rejects.toThrow('has no partition table');
    expect([probe(file, 0), probe(file, 1 * MIB), probe(file, 13 * MIB)]).toEqual([null, null, null]);
    const after = await readFile(file);
    for (const [offset, length] of erased.regions) expect(after.subarray(offset, offset + length).every((b) => b === 0)).toBe(true);
    // Between the zeroed ends the data is as it was: a metadata erase, not a full one.
    for (const [from, to] of [[2, 12], [14, 28], [29, 31]]) {
      expect(sha(after.subarray(from! * MIB, to! * MIB))).toBe(sha(before.subarray(from! * MIB, to! * MIB)));
    }
  });

  it('erases a file system made on the whole disk (no table), and a disk smaller than two MiB', async () => {
    const whole = join(dir, 'whole');
    expect(spawnSync('mkfs.fat', ['-C', whole, String(8 * 1024)]).status).toBe(0);
    expect(probe(whole, 0)).toBe('vfat');
    expect((await eraseDeviceMetadata(whole)).regions).toEqual([
      [0, ERASE_BYTES],
      [7 * MIB, ERASE_BYTES],
    ]);
    expect(probe(whole, 0)).toBeNull();
    const tiny = join(dir, 'tiny');
    await writeFile(tiny, Buffer.alloc(MIB + 4096, 0x55));
    expect((await eraseDeviceMetadata(tiny)).regions).toEqual([
      [0, MIB],
      [4096, MIB],
    ]);
    expect((await readFile(tiny)).every((b) => b === 0)).toBe(true);
  });

  it('runs as the agent\'s clean step on every disk, and refuses steps it does not run', async () => {
    const machine = await fakeMachine(join(dir, 'm'), 8 * MIB, 0x11);
    const image = await readFile(await disk());
    await writeFile(machine.disk, image.subarray(0, 8 * MIB));
    const context = { sysRoot: machine.sysRoot, devRoot: machine.devRoot, signal: new AbortController().signal } as unknown as CommandContext;
    expect(await COMMANDS['clean.get_clean_steps']!.run({}, context)).toEqual({
      clean_steps: {
        GenericHardwareManager: [
          { step: 'erase_devices_metadata', priority: 99, interface: 'deploy', reboot_requested: false, abortable: true, argsinfo: null },
          { step: 'erase_devices', priority: 10, interface: 'deploy', reboot_requested: false, abortable: true, argsinfo: null },
        ],
      },
      hardware_manager_version: { generic_hardware_manager: '1.2' },
    });
    const step = { step: 'erase_devices_metadata', interface: 'deploy', priority: 99 };
    expect(COMMANDS['clean.execute_clean_step']!.async).toBe(true);
    expect(await COMMANDS['clean.execute_clean_step']!.run({ step, node: {}, ports: [], clean_version: {} }, context)).toEqual({ clean_result: null, clean_step: step });
    await expect(getPartitionUuids(machine.disk)).rejects.toThrow('has no partition table');
    await expect(COMMANDS['clean.execute_clean_step']!.run({ step: { step: 'erase_devices_express', interface: 'deploy' } }, context)).rejects.toThrow(
      'clean step "erase_devices_express" is not one this agent runs (it runs erase_devices_metadata, erase_devices)',
    );
  });
});
