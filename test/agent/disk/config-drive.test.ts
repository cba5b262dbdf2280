/**
 * The config drive: decoding what Ironic sends, and the partition added at the end of the disk on
 * MBR and GPT disks — read back by our reader and by util-linux's `partx` (libblkid checks the GPT's
 * checksums and its backup table).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONFIG_DRIVE_PARTITION_BYTES, decodeConfigDrive, writeConfigDrive } from '../../../src/agent/disk/config-drive.js';
import { PartitionTableError } from '../../../src/agent/disk/errors.js';
import { crc32, getPartitionUuids } from '../../../src/agent/disk/partition-table.js';
import { ESP_TYPE, gptDisk } from '../../helpers/gpt.js';

const MIB = 1024 * 1024;

/** Enough of an ISO 9660 image for the agent: the primary volume descriptor's magic at 32 KiB. */
function fakeIso(bytes = 256 * 1024): Buffer {
  const iso = randomBytes(bytes);
  iso.fill(0, 0, 0x8000);
  iso[0x8000] = 1;
  iso.write('CD001', 0x8001, 'latin1');
  return iso;
}

/** An MBR disk image with one partition from sector 2048, `imageBytes` long. */
function mbrImage(imageBytes: number): Buffer {
  const image = Buffer.alloc(imageBytes);
  image.writeUInt32LE(0x12345678, 440);
  image[446 + 4] = 0x83;
  image.writeUInt32LE(2048, 446 + 8);
  image.writeUInt32LE(imageBytes / 512 - 2048, 446 + 12);
  image[510] = 0x55;
  image[511] = 0xaa;
  return image;
}

/** A GPT disk image as an image builder leaves it: backup table at the image's own end. */
function gptImage(imageBytes: number): Buffer {
  return gptDisk(imageBytes, [{ start: 2048, sectors: imageBytes / 512 - 2081, type: ESP_TYPE, name: 'EFI' }]);
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-configdrive-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A disk file of `diskBytes` with `image` at its start. */
function disk(image: Buffer, diskBytes: number): string {
  const file = path.join(dir, 'disk');
  const bytes = Buffer.alloc(diskBytes, 0xee);
  image.copy(bytes, 0);
  writeFileSync(file, bytes);
  return file;
}

/** util-linux's view of the table: number, start sector, sectors, name. */
function partx(file: string): string[][] {
  const res = spawnSync('partx', ['--raw', '--noheadings', '--output', 'NR,START,SECTORS,NAME', file], { encoding: 'utf8' });
  expect(res.status, res.stderr).toBe(0);
  return res.stdout.trim().split('\n').map((l) => l.split(' '));
}

describe('config drive: decoding what Ironic sends', () => {
  it('takes gzipped base64 (and plain base64) of an ISO', async () => {
    const iso = fakeIso();
    expect(await decodeConfigDrive(gzipSync(iso).toString('base64'))).toEqual(iso);
    expect(await decodeConfigDrive(iso.toString('base64'))).toEqual(iso);
  });

  it.each([
    ['not base64 at all!', 'not base64 text'],
    [gzipSync(Buffer.from('hello')).toString('base64'), 'the decoded data is no ISO 9660 image'],
    [gzipSync(Buffer.alloc(65 * MIB)).toString('base64'), 'could not be gunzipped'],
  ])('refuses %#, naming configdrive', async (value, message) => {
    await expect(decodeConfigDrive(value)).rejects.toThrow(`configdrive: ${message}`);
  });
});

describe('config drive: the partition at the end of the disk', () => {
  it('MBR: a free primary entry, 64 MiB ending at the end of the disk, the ISO at its start', async () => {
    const file = disk(mbrImage(8 * MIB), 200 * MIB);
    const iso = fakeIso();
    const part = await writeConfigDrive(file, 200 * MIB, iso);
    expect(part).toEqual({ number: 2, start: 136 * MIB, size: CONFIG_DRIVE_PARTITION_BYTES, table: 'msdos' });
    const table = await getPartitionUuids(file);
    expect(table.partitions.map((p) => [p.number, p.type, p.start, p.size])).toEqual([[1, '0x83', MIB, 7 * MIB], [2, '0x83', 136 * MIB, 64 * MIB]]);
    expect(partx(file).map((row) => row.slice(0, 3))).toEqual([['1', '2048', '14336'], ['2', String((136 * MIB) / 512), String((64 * MIB) / 512)]]);
    const bytes = readFileSync(file);
    expect(bytes.subarray(136 * MIB, 136 * MIB + iso.length)).toEqual(iso);
    // The image itself is untouched.
    expect(bytes.readUInt32LE(440)).toBe(0x12345678);
  });

  it('GPT: moves the backup table to the disk\'s end and adds an entry named config-2; libblkid accepts both tables', async () => {
    const file = disk(gptImage(16 * MIB), 200 * MIB);
    const iso = fakeIso();
    const part = await writeConfigDrive(file, 200 * MIB, iso);
    expect(part.table).toBe('gpt');
    expect(part.number).toBe(2);
    const sectors = (200 * MIB) / 512;
    const table = await getPartitionUuids(file);
    expect(table.partitions.map((p) => [p.number, p.name])).toEqual([[1, 'EFI'], [2, 'config-2']]);
    expect(table.partitions[1]!.type).toBe('0fc63daf-8483-4772-8e79-3d69d8477de4');
    expect(part.start + part.size).toBeLessThanOrEqual((sectors - 33) * 512);
    expect(partx(file).map(([nr, , , name]) => [nr, name])).toEqual([['1', 'EFI'], ['2', 'config-2']]);
    const bytes = readFileSync(file);
    expect(bytes.subarray(part.start, part.start + iso.length)).toEqual(iso);
    // The backup header now sits in the disk's last sector, pointing back at the primary; the
    // image's old one is gone.
    const backup = bytes.subarray((sectors - 1) * 512, sectors * 512);
    expect(backup.subarray(0, 8).toString('latin1')).toBe('EFI PART');
    expect(backup.readBigUInt64LE(32)).toBe(1n);
    const stored = backup.readUInt32LE(16);
    const copy = Buffer.from(backup.subarray(0, 92));
    copy.writeUInt32LE(0, 16);
    expect(crc32(copy)).toBe(stored);
    expect(bytes.subarray((16 * MIB) - 512, 16 * MIB).every((b) => b === 0)).toBe(true);
    // The protective MBR covers the whole disk.
    expect(bytes.readUInt32LE(446 + 12)).toBe(sectors - 1);
  });

  it('refuses, writing nothing, when the image leaves no room at the end', async () => {
    const file = disk(mbrImage(150 * MIB), 200 * MIB);
    const before = readFileSync(file);
    await expect(writeConfigDrive(file, 200 * MIB, fakeIso())).rejects.toThrow(PartitionTableError);
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});
