/**
 * The config drive, as IPA writes it: an ISO 9660 image labelled `config-2` (cloud-init's
 * OpenStack data source) on a partition of its own at the end of the disk the image went to.
 *
 * - `decodeConfigDrive`: Ironic hands the agent the config drive as gzipped base64 text, or a URL
 *   of such text; either becomes the ISO's bytes, bounded at 64 MiB (Ironic's limit).
 * - `writeConfigDrive`: adds one 64 MiB partition (IPA's size) ending at the end of the disk —
 *   a free primary entry on an MBR disk; on a GPT disk an entry named `config-2`, after moving the
 *   backup table from the image's end to the disk's end (what `sgdisk -e` does), both headers'
 *   checksums written again — then writes the ISO into it and syncs. Nothing is written when the
 *   table has no room or the space is taken.
 */
import { randomBytes } from 'node:crypto';
import { open } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { gunzipSync } from 'node:zlib';
import { InvalidParameter } from '../../common/errors.js';
import { PartitionTableError } from './errors.js';
import { crc32, getPartitionUuids, guidToBytes } from './partition-table.js';

const MIB = 1024 * 1024;
/** Largest config drive taken (Ironic's documented limit), decoded. */
export const MAX_CONFIG_DRIVE_BYTES = 64 * MIB;
/** The partition's size, as IPA makes it. */
export const CONFIG_DRIVE_PARTITION_BYTES = 64 * MIB;
/** The GPT type of the partition: Linux filesystem data. */
const LINUX_DATA = '0fc63daf-8483-4772-8e79-3d69d8477de4';

/** Downloads `url` (http/https), at most `max` bytes. */
function download(url: URL, max: number, signal?: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).get(url, { timeout: 60_000, ...(signal ? { signal } : {}) }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new InvalidParameter(`configdrive: ${url.href} answered HTTP ${res.statusCode}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > max) {
          res.destroy();
          reject(new InvalidParameter(`configdrive: ${url.href} is larger than ${max} bytes`));
        } else chunks.push(c);
      });
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 60 s')));
    req.on('error', (err) => reject(new InvalidParameter(`configdrive: downloading ${url.href} failed: ${err.message}`)));
  });
}

/**
 * The ISO of a config drive given as Ironic gives it: gzipped base64 text (plain base64 of an ISO
 * is taken too), or an http(s) URL of that text. Throws `InvalidParameter` naming `configdrive`.
 */
export async function decodeConfigDrive(value: string, signal?: AbortSignal): Promise<Buffer> {
  let text = value.trim();
  if (/^https?:\/\//i.test(text)) text = (await download(new URL(text), Math.ceil((MAX_CONFIG_DRIVE_BYTES * 4) / 3) + 1024, signal)).toString('latin1').trim();
  if (text.length > Math.ceil((MAX_CONFIG_DRIVE_BYTES * 4) / 3) + 1024) throw new InvalidParameter(`configdrive: larger than ${MAX_CONFIG_DRIVE_BYTES} bytes`);
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) throw new InvalidParameter('configdrive: not base64 text (expected a gzipped, base64-encoded ISO 9660 image)');
  let data = Buffer.from(compact, 'base64');
  if (data[0] === 0x1f && data[1] === 0x8b) {
    try {
      data = gunzipSync(data, { maxOutputLength: MAX_CONFIG_DRIVE_BYTES });
    } catch (err) {
      throw new InvalidParameter(`configdrive: could not be gunzipped (${(err as Error).message}); at most ${MAX_CONFIG_DRIVE_BYTES} bytes are taken`);
    }
  }
  if (data.length > MAX_CONFIG_DRIVE_BYTES) throw new InvalidParameter(`configdrive: larger than ${MAX_CONFIG_DRIVE_BYTES} bytes`);
  // ISO 9660: the primary volume descriptor at 32 KiB starts with 0x01 "CD001".
  if (data.length < 0x8006 || data.subarray(0x8001, 0x8006).toString('latin1') !== 'CD001') {
    throw new InvalidParameter('configdrive: the decoded data is no ISO 9660 image');
  }
  return data;
}

/** Where the config drive went. */
export interface ConfigDrivePartition {
  /** 1-based partition number (`/dev/sda<n>`). */
  number: number;
  /** Byte offset and length of the partition. */
  start: number;
  size: number;
  table: 'gpt' | 'msdos';
}

/**
 * Adds the config drive's partition at the end of `device` (`deviceBytes` long, the image already
 * written at its start) and writes `iso` into it. Throws `PartitionTableError` (nothing written)
 * when the table has no free entry or the space at the end is taken.
 */
export async function writeConfigDrive(device: string, deviceBytes: number, iso: Buffer): Promise<ConfigDrivePartition> {
  if (iso.length > CONFIG_DRIVE_PARTITION_BYTES) throw new InvalidParameter(`configdrive: ${iso.length} bytes do not fit the ${CONFIG_DRIVE_PARTITION_BYTES / MIB} MiB partition`);
  const table = await getPartitionUuids(device);
  const ss = table.sector_size;
  const sectors = Math.floor(deviceBytes / ss);
  const partSectors = CONFIG_DRIVE_PARTITION_BYTES / ss;
  const align = MIB / ss;
  const handle = await open(device, 'r+');
  try {
    const read = async (position: number, length: number): Promise<Buffer> => {
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, position);
      return buffer;
    };
    const write = async (position: number, data: Buffer): Promise<void> => {
      let done = 0;
      while (done < data.length) done += (await handle.write(data, done, data.length - done, position + done)).bytesWritten;
    };
    const usedEnd = Math.max(0, ...table.partitions.map((p) => (p.start + p.size) / ss));
    let result: ConfigDrivePartition;
    if (table.table === 'msdos') {
      if (sectors > 0xffffffff) throw new PartitionTableError(`${device}: an MBR cannot address the end of a ${deviceBytes}-byte disk for the config drive`);
      const start = Math.floor((sectors - partSectors) / align) * align;
      if (start < usedEnd) throw new PartitionTableError(`${device}: no room for the ${CONFIG_DRIVE_PARTITION_BYTES / MIB} MiB config drive after the image's partitions`);
      const sector0 = await read(0, 512);
      const slot = [0, 1, 2, 3].find((i) => sector0[446 + i * 16 + 4] === 0);
      if (slot === undefined) throw new PartitionTableError(`${device}: all four primary MBR entries are used; no entry is left for the config drive`);
      const entry = Buffer.alloc(16);
      // CHS fields at their "use LBA" maximum, as partitioning tools write them past 8 GiB.
      entry.set([0x00, 0xfe, 0xff, 0xff, 0x83, 0xfe, 0xff, 0xff]);
      entry.writeUInt32LE(start, 8);
      entry.writeUInt32LE(partSectors, 12);
      await write(start * ss, iso);
      // What follows the ISO in the partition is zeroed for a MiB: no stale signature is found there.
      await write(start * ss + iso.length, Buffer.alloc(Math.min(MIB, CONFIG_DRIVE_PARTITION_BYTES - iso.length)));
      await write(446 + slot * 16, entry);
      result = { number: slot + 1, start: start * ss, size: CONFIG_DRIVE_PARTITION_BYTES, table: 'msdos' };
    } else {
      const header = await read(ss, ss);
      const headerSize = header.readUInt32LE(12);
      const entriesLba = Number(header.readBigUInt64LE(72));
      const count = header.readUInt32LE(80);
      const entrySize = header.readUInt32LE(84);
      const entryBytes = count * entrySize;
      const entrySectors = Math.ceil(entryBytes / ss);
      const oldBackup = Number(header.readBigUInt64LE(32));
      const lastUsable = sectors - 2 - entrySectors;
      const start = Math.floor((lastUsable + 1 - partSectors) / align) * align;
      if (start < usedEnd) throw new PartitionTableError(`${device}: no room for the ${CONFIG_DRIVE_PARTITION_BYTES / MIB} MiB config drive after the image's partitions`);
      const entries = await read(entriesLba * ss, entryBytes);
      let slot = -1;
      for (let i = 0; i < count; i++) {
        if (entries.subarray(i * entrySize, i * entrySize + 16).every((b) => b === 0)) {
          slot = i;
          break;
        }
      }
      if (slot < 0) throw new PartitionTableError(`${device}: the GPT has no free entry for the config drive`);
      const entry = entries.subarray(slot * entrySize, (slot + 1) * entrySize);
      entry.fill(0);
      guidToBytes(LINUX_DATA).copy(entry, 0);
      randomBytes(16).copy(entry, 16);
      entry.writeBigUInt64LE(BigInt(start), 32);
      entry.writeBigUInt64LE(BigInt(start + partSectors - 1), 40);
      Buffer.from('config-2', 'utf16le').copy(entry, 56);
      const entriesCrc = crc32(entries);
      const sign = (h: Buffer): Buffer => {
        h.writeUInt32LE(0, 16);
        h.writeUInt32LE(crc32(h.subarray(0, headerSize)), 16);
        return h;
      };
      const primary = Buffer.from(header);
      primary.writeBigUInt64LE(BigInt(sectors - 1), 32);
      primary.writeBigUInt64LE(BigInt(lastUsable), 48);
      primary.writeUInt32LE(entriesCrc, 88);
      const backup = Buffer.from(primary);
      backup.writeBigUInt64LE(BigInt(sectors - 1), 24);
      backup.writeBigUInt64LE(1n, 32);
      backup.writeBigUInt64LE(BigInt(sectors - 1 - entrySectors), 72);
      await write(start * ss, iso);
      await write(start * ss + iso.length, Buffer.alloc(Math.min(MIB, CONFIG_DRIVE_PARTITION_BYTES - iso.length)));
      // The backup table first, at the disk's end; then the primary, which now points at it.
      await write((sectors - 1 - entrySectors) * ss, entries);
      await write((sectors - 1) * ss, sign(backup));
      await write(entriesLba * ss, entries);
      await write(ss, sign(primary));
      // The image's old backup header would be a second, stale GPT at its end.
      if (oldBackup > 0 && oldBackup < start && oldBackup !== sectors - 1) await write(oldBackup * ss, Buffer.alloc(ss));
      // The protective MBR covers the whole disk now.
      const sector0 = await read(0, 512);
      const protective = [0, 1, 2, 3].find((i) => sector0[446 + i * 16 + 4] === 0xee);
      if (protective !== undefined) {
        const size = Buffer.alloc(4);
        size.writeUInt32LE(Math.min(sectors - 1, 0xffffffff));
        await write(446 + protective * 16 + 12, size);
      }
      result = { number: slot + 1, start: start * ss, size: CONFIG_DRIVE_PARTITION_BYTES, table: 'gpt' };
    }
    await handle.sync();
    return result;
  } finally {
    await handle.close();
  }
}
