import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PartitionTableError } from '../../../src/agent/disk/errors.js';
import { crc32, getPartitionUuids, guidToBytes, guidToString } from '../../../src/agent/disk/partition-table.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ironring-ptable-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const guidBytes = guidToBytes;

const ESP = 'c12a7328-f81f-11d2-ba4b-00a0c93ec93b';
const LINUX = '0fc63daf-8483-4772-8e79-3d69d8477de4';
const DISK_GUID = '8f1a3c5e-2b4d-4e6f-9a0b-1c2d3e4f5a6b';
const ESP_GUID = '11111111-2222-4333-8444-555555555555';
const ROOT_GUID = 'a1b2c3d4-e5f6-4789-8abc-def012345678';

/** A 4 MiB whole-disk image with a GPT: an ESP and a root partition, at `sector` bytes per sector. */
function gptImage(sector = 512, options: { corruptHeader?: boolean } = {}): Buffer {
  const size = 4 * 1024 * 1024;
  const lbas = size / sector;
  const img = Buffer.alloc(size);
  // Protective MBR.
  img[446 + 4] = 0xee;
  img.writeUInt32LE(1, 446 + 8);
  img.writeUInt32LE(lbas - 1, 446 + 12);
  img[510] = 0x55;
  img[511] = 0xaa;
  // Entries at LBA 2.
  const entries = Buffer.alloc(128 * 128);
  const entry = (i: number, type: string, unique: string, first: number, last: number, name: string) => {
    const e = entries.subarray(i * 128, (i + 1) * 128);
    guidBytes(type).copy(e, 0);
    guidBytes(unique).copy(e, 16);
    e.writeBigUInt64LE(BigInt(first), 32);
    e.writeBigUInt64LE(BigInt(last), 40);
    Buffer.from(name, 'utf16le').copy(e, 56);
  };
  const firstUsable = 2 + Math.ceil(entries.length / sector);
  entry(0, ESP, ESP_GUID, firstUsable, lbas / 2 - 1, 'EFI System');
  entry(1, LINUX, ROOT_GUID, lbas / 2, lbas - firstUsable, 'root');
  entries.copy(img, 2 * sector);
  const h = img.subarray(sector, sector + 92);
  h.write('EFI PART', 0, 'latin1');
  h.writeUInt32LE(0x00010000, 8);
  h.writeUInt32LE(92, 12);
  h.writeBigUInt64LE(1n, 24);
  h.writeBigUInt64LE(BigInt(lbas - 1), 32);
  h.writeBigUInt64LE(BigInt(firstUsable), 40);
  h.writeBigUInt64LE(BigInt(lbas - firstUsable), 48);
  guidBytes(DISK_GUID).copy(h, 56);
  h.writeBigUInt64LE(2n, 72);
  h.writeUInt32LE(128, 80);
  h.writeUInt32LE(128, 84);
  h.writeUInt32LE(crc32(entries), 88);
  h.writeUInt32LE((crc32(h) ^ (options.corruptHeader ? 1 : 0)) >>> 0, 16);
  return img;
}

/** A 4 MiB MBR image with signature 0x1234abcd: a FAT boot partition (active) and a Linux one. */
function mbrImage(): Buffer {
  const img = Buffer.alloc(4 * 1024 * 1024);
  img.writeUInt32LE(0x1234abcd, 440);
  const part = (i: number, type: number, start: number, sectors: number, active = false) => {
    const o = 446 + i * 16;
    img[o] = active ? 0x80 : 0;
    img[o + 4] = type;
    img.writeUInt32LE(start, o + 8);
    img.writeUInt32LE(sectors, o + 12);
  };
  part(0, 0x0c, 2048, 2048, true);
  part(1, 0x83, 4096, 4096);
  img[510] = 0x55;
  img[511] = 0xaa;
  return img;
}

async function file(name: string, bytes: Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

/** blkid's view of a whole-disk image (util-linux, on every Debian): an independent reader of the same bytes. */
function blkid(path: string): Record<string, string> | null {
  const r = spawnSync('blkid', ['-p', '-o', 'export', path], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return null;
  return Object.fromEntries(r.stdout.trim().split('\n').map((l) => l.split('=', 2) as [string, string]));
}

describe('partition UUIDs of a written whole-disk image', () => {
  it('reads a GPT: disk GUID, each partition GUID and the ESP', async () => {
    const path = await file('gpt.img', gptImage());
    const result = await getPartitionUuids(path);
    expect(result).toEqual({
      'root uuid': '0x00000000',
      'disk identifier': DISK_GUID,
      'efi system partition uuid': ESP_GUID,
      table: 'gpt',
      sector_size: 512,
      partitions: [
        { number: 1, uuid: ESP_GUID, type: ESP, name: 'EFI System', start: 34 * 512, size: (4095 - 34 + 1) * 512 },
        { number: 2, uuid: ROOT_GUID, type: LINUX, name: 'root', start: 4096 * 512, size: (8158 - 4096 + 1) * 512 },
      ],
    });
    expect(blkid(path)).toMatchObject({ PTTYPE: 'gpt', PTUUID: DISK_GUID });
  });

  it('finds a GPT laid out with 4096-byte sectors', async () => {
    const result = await getPartitionUuids(await file('gpt4k.img', gptImage(4096)));
    expect(result.sector_size).toBe(4096);
    expect(result.partitions.map((p) => p.uuid)).toEqual([ESP_GUID, ROOT_GUID]);
    expect(result.partitions[1]!.start).toBe(512 * 4096);
  });

  it('reads an MBR: the signature as IPA\'s root uuid and Linux PARTUUIDs', async () => {
    const path = await file('mbr.img', mbrImage());
    const result = await getPartitionUuids(path);
    expect(result).toEqual({
      'root uuid': '0x1234abcd',
      'disk identifier': '0x1234abcd',
      'efi system partition uuid': null,
      table: 'msdos',
      sector_size: 512,
      partitions: [
        { number: 1, uuid: '1234abcd-01', type: '0x0c', name: null, start: 2048 * 512, size: 2048 * 512 },
        { number: 2, uuid: '1234abcd-02', type: '0x83', name: null, start: 4096 * 512, size: 4096 * 512 },
      ],
    });
    expect(blkid(path)).toMatchObject({ PTTYPE: 'dos', PTUUID: '1234abcd' });
  });

  it('refuses a GPT whose header checksum fails, and bytes with no partition table', async () => {
    await expect(getPartitionUuids(await file('bad.img', gptImage(512, { corruptHeader: true })))).rejects.toThrow(
      'GPT header checksum mismatch',
    );
    const blank = await file('blank.img', Buffer.alloc(64 * 1024));
    await expect(getPartitionUuids(blank)).rejects.toThrow(PartitionTableError);
    await expect(getPartitionUuids(blank)).rejects.toThrow('has no partition table (no 0x55AA boot signature)');
  });

  it('formats GUIDs with the first three fields little-endian, as blkid does', () => {
    expect(guidToString(guidBytes(DISK_GUID))).toBe(DISK_GUID);
    expect(guidBytes(ESP).subarray(0, 4).toString('hex')).toBe('28732ac1');
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
  });
});
