/**
 * The agent's UEFI boot entry: its FAT reader against file systems made by dosfstools and mtools
 * (FAT12, FAT16, FAT32, long names, directories and files over several clusters), the loader IPA
 * would pick, the EFI_LOAD_OPTION's bytes, and the variables written into an efivarfs-like
 * directory (a new Boot#### first in BootOrder; the same entry again reused).
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FatError, FatVolume } from '../../../src/agent/disk/fat.js';
import { getPartitionUuids } from '../../../src/agent/disk/partition-table.js';
import { addBootEntry, EFI_GLOBAL_GUID, findEfiLoader, installUefiBootEntry, loadOption, UefiBootError } from '../../../src/agent/disk/uefi-boot.js';
import { ESP_TYPE, gptDisk } from '../../helpers/gpt.js';

const tools = ['mkfs.fat', 'mmd', 'mcopy'].every((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0);
if (!tools && process.env.CI === 'true') throw new Error('dosfstools and mtools are needed (the CI installs them)');
if (!tools) console.log('skipping the UEFI boot entry tests: dosfstools and mtools are not installed (apt-get install dosfstools mtools)');

const run = (cmd: string, args: string[]) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
};

describe.skipIf(!tools)('UEFI boot entries', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-uefi-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A FAT file system of `kib` KiB (`bits`: 12, 16 or 32) holding `files` (path → content). */
  function fatImage(name: string, bits: 12 | 16 | 32, kib: number, files: Record<string, Buffer | string>): Buffer {
    const file = path.join(dir, `${name}.fat`);
    rmSync(file, { force: true });
    run('mkfs.fat', ['-C', '-F', String(bits), '-n', 'ESP', file, String(kib)]);
    const dirs = new Set<string>();
    for (const p of Object.keys(files)) {
      const parts = p.split('/').slice(0, -1);
      for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
    }
    for (const d of [...dirs].sort()) run('mmd', ['-i', file, `::/${d}`]);
    for (const [p, content] of Object.entries(files)) {
      const local = path.join(dir, 'content');
      writeFileSync(local, content);
      run('mcopy', ['-i', file, local, `::/${p}`]);
    }
    return readFileSync(file);
  }
  const volumeOf = (image: Buffer) => FatVolume.open(async (pos, len) => image.subarray(pos, pos + len), image.length);
  const csv = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);

  it.each([
    [12, 2048],
    [16, 16 * 1024],
    [32, 40 * 1024],
  ] as const)('reads FAT%i: long names, a directory and a file spanning clusters', async (bits, kib) => {
    const big = Buffer.alloc(70_000, 7);
    big.write('end', big.length - 3);
    const files: Record<string, Buffer | string> = { 'EFI/debian/shimx64.efi': 'shim', 'EFI/debian/A Rather Long Name For A File.bin': big };
    for (let i = 0; i < 60; i++) files[`EFI/debian/extra-loader-number-${i}.efi`] = `x${i}`;
    const volume = await volumeOf(fatImage(`fat${bits}`, bits, kib, files));
    const entries = (await volume.list(['EFI', 'debian']))!;
    expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['shimx64.efi', 'A Rather Long Name For A File.bin', 'extra-loader-number-59.efi']));
    expect(entries).toHaveLength(62);
    expect((await volume.readFile(['efi', 'DEBIAN', 'A Rather Long Name For A File.bin']))!.equals(big)).toBe(true);
    expect((await volume.readFile(['EFI', 'debian', 'extra-loader-number-42.efi']))!.toString()).toBe('x42');
    expect(await volume.list(['EFI', 'fedora'])).toBeNull();
    expect(await volume.readFile(['EFI', 'debian', 'missing.efi'])).toBeNull();
  });

  it('refuses what is not a FAT file system, or one larger than its partition', async () => {
    await expect(FatVolume.open(async (pos, len) => Buffer.alloc(len), 1 << 20)).rejects.toThrow(FatError);
    const image = fatImage('small', 16, 16 * 1024, {});
    await expect(FatVolume.open(async (pos, len) => image.subarray(pos, pos + len), image.length / 2)).rejects.toThrow('is larger than its partition');
  });

  it("picks the loader as IPA does: shim's BOOTX64.CSV, else shimx64.efi, else grubx64.efi, else the fallback", async () => {
    const loader = async (files: Record<string, Buffer | string>) => findEfiLoader(await volumeOf(fatImage('pick', 16, 16 * 1024, files)));
    expect(await loader({ 'EFI/debian/BOOTX64.CSV': csv('shimx64.efi,Debian GNU/Linux,,This is the boot entry for debian\n'), 'EFI/debian/shimx64.efi': 's', 'EFI/debian/grubx64.efi': 'g', 'EFI/BOOT/BOOTX64.EFI': 'f' })).toEqual({
      path: '\\EFI\\debian\\shimx64.efi',
      label: 'Debian GNU/Linux',
    });
    expect(await loader({ 'EFI/ubuntu/grubx64.efi': 'g', 'EFI/ubuntu/shimx64.efi': 's' })).toEqual({ path: '\\EFI\\ubuntu\\shimx64.efi', label: 'ubuntu' });
    expect(await loader({ 'EFI/ironring/grubx64.efi': 'g' })).toEqual({ path: '\\EFI\\ironring\\grubx64.efi', label: 'ironring' });
    expect(await loader({ 'EFI/BOOT/BOOTX64.EFI': 'f' })).toEqual({ path: '\\EFI\\BOOT\\BOOTX64.EFI', label: 'ironring' });
    await expect(loader({ 'EFI/tools/shell.efi': 'x' })).rejects.toThrow('holds no boot loader');
  });

  it('writes the EFI_LOAD_OPTION: active, the label, the ESP as a GPT hard-drive node, the file path, the end', () => {
    const uuid = randomUUID();
    const option = loadOption({ path: '\\EFI\\ironring\\grubx64.efi', label: 'ironring' }, { number: 1, uuid, type: ESP_TYPE, name: 'EFI system', start: 1024 * 1024, size: 40 * 1024 * 1024 }, { table: 'gpt', sector_size: 512, 'disk identifier': randomUUID() });
    expect(option.readUInt32LE(0)).toBe(1);
    const label = Buffer.from('ironring\0', 'utf16le');
    expect(option.subarray(6, 6 + label.length).equals(label)).toBe(true);
    const paths = option.subarray(6 + label.length);
    expect(option.readUInt16LE(4)).toBe(paths.length);
    expect([paths[0], paths[1], paths.readUInt16LE(2)]).toEqual([4, 1, 42]);
    expect(paths.readUInt32LE(4)).toBe(1);
    expect(paths.readBigUInt64LE(8)).toBe(2048n);
    expect(paths.readBigUInt64LE(16)).toBe(81920n);
    // The partition's GUID as GPT stores it (the first three fields little-endian).
    const hex = uuid.replaceAll('-', '');
    expect(paths.subarray(24, 28).toString('hex')).toBe(Buffer.from(hex.slice(0, 8), 'hex').reverse().toString('hex'));
    expect(paths.subarray(32, 40).toString('hex')).toBe(hex.slice(16));
    expect([paths[40], paths[41]]).toEqual([2, 2]);
    const file = Buffer.from('\\EFI\\ironring\\grubx64.efi\0', 'utf16le');
    expect([paths[42], paths[43], paths.readUInt16LE(44)]).toEqual([4, 4, 4 + file.length]);
    expect(paths.subarray(46, 46 + file.length).equals(file)).toBe(true);
    expect([...paths.subarray(46 + file.length)]).toEqual([0x7f, 0xff, 4, 0]);
  });

  it('adds Boot#### first in BootOrder, reuses the same entry the next time, and says when there are no variables', async () => {
    const efivars = path.join(dir, 'efivars');
    rmSync(efivars, { recursive: true, force: true });
    mkdirSync(efivars);
    const variable = (data: number[] | Buffer) => Buffer.concat([Buffer.from([7, 0, 0, 0]), Buffer.isBuffer(data) ? data : Buffer.from(data)]);
    writeFileSync(path.join(efivars, `Boot0000-${EFI_GLOBAL_GUID}`), variable(Buffer.from('network')));
    writeFileSync(path.join(efivars, `Boot0001-${EFI_GLOBAL_GUID}`), variable(Buffer.from('disk')));
    writeFileSync(path.join(efivars, `BootOrder-${EFI_GLOBAL_GUID}`), variable([1, 0, 0, 0]));
    const option = Buffer.from('the load option');
    expect(await addBootEntry(efivars, option)).toEqual({ variable: 'Boot0002', created: true, bootOrder: ['Boot0002', 'Boot0001', 'Boot0000'] });
    expect(readFileSync(path.join(efivars, `Boot0002-${EFI_GLOBAL_GUID}`)).equals(variable(option))).toBe(true);
    expect([...readFileSync(path.join(efivars, `BootOrder-${EFI_GLOBAL_GUID}`))]).toEqual([7, 0, 0, 0, 2, 0, 1, 0, 0, 0]);
    expect(await addBootEntry(efivars, option)).toEqual({ variable: 'Boot0002', created: false, bootOrder: ['Boot0002', 'Boot0001', 'Boot0000'] });
    await expect(addBootEntry(path.join(dir, 'no-efivars'), option)).rejects.toThrow(/did not boot in UEFI mode, or efivarfs is not mounted/);
  });

  it('registers the loader of the ESP of a GPT disk image, and refuses a disk without one', async () => {
    const fat = fatImage('disk-esp', 16, 16 * 1024, { 'EFI/ironring/grubx64.efi': 'g' });
    const disk = path.join(dir, 'disk.img');
    writeFileSync(disk, gptDisk(20 * 1024 * 1024, [{ start: 2048, sectors: fat.length / 512, type: ESP_TYPE, name: 'EFI system', content: fat }]));
    const table = await getPartitionUuids(disk);
    const efivars = path.join(dir, 'efivars-disk');
    mkdirSync(efivars, { recursive: true });
    const handle = await open(disk, 'r');
    try {
      const read = async (pos: number, len: number) => {
        const b = Buffer.alloc(len);
        await handle.read(b, 0, len, pos);
        return b;
      };
      const entry = await installUefiBootEntry(read, table, null, efivars);
      expect(entry).toMatchObject({ variable: 'Boot0000', created: true, path: '\\EFI\\ironring\\grubx64.efi', label: 'ironring', bootOrder: ['Boot0000'] });
      await expect(installUefiBootEntry(read, { ...table, 'efi system partition uuid': null }, null, efivars)).rejects.toThrow(UefiBootError);
      await expect(installUefiBootEntry(read, table, randomUUID(), efivars)).rejects.toThrow('no partition');
    } finally {
      await handle.close();
    }
  });
});
