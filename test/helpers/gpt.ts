/**
 * A GPT disk image built byte by byte (UEFI 2.x §5.3): protective MBR, primary header and entry
 * array at LBA 1–33, the backup array and header at the image's end, CRC-32s over both, 512-byte
 * sectors. For tests that need a GPT disk without gdisk or parted.
 */
import { randomUUID } from 'node:crypto';
import { crc32, guidToBytes } from '../../src/agent/disk/partition-table.js';

export const ESP_TYPE = 'c12a7328-f81f-11d2-ba4b-00a0c93ec93b';
export const LINUX_FS_TYPE = '0fc63daf-8483-4772-8e79-3d69d8477de4';

export interface GptPartition {
  /** First sector (LBA). */
  start: number;
  sectors: number;
  type: string;
  name?: string;
  /** The partition's unique GUID; random when left out. */
  uuid?: string;
  /** Bytes put at the partition's start. */
  content?: Buffer;
}

/** A disk image of `bytes` (a multiple of 512) with `partitions` in a 128-entry GPT. */
export function gptDisk(bytes: number, partitions: readonly GptPartition[], diskGuid = randomUUID()): Buffer {
  if (bytes % 512 !== 0) throw new Error('gptDisk: bytes must be whole sectors');
  const sectors = bytes / 512;
  const image = Buffer.alloc(bytes);
  // Protective MBR: one 0xEE entry over the whole disk (clamped to 32 bits).
  image[446 + 4] = 0xee;
  image.writeUInt32LE(1, 446 + 8);
  image.writeUInt32LE(Math.min(sectors - 1, 0xffffffff), 446 + 12);
  image[510] = 0x55;
  image[511] = 0xaa;
  const entries = Buffer.alloc(128 * 128);
  partitions.forEach((p, i) => {
    if (p.start < 34 || p.start + p.sectors > sectors - 33) throw new Error(`gptDisk: partition ${i + 1} is outside the usable sectors`);
    const at = i * 128;
    guidToBytes(p.type).copy(entries, at);
    guidToBytes(p.uuid ?? randomUUID()).copy(entries, at + 16);
    entries.writeBigUInt64LE(BigInt(p.start), at + 32);
    entries.writeBigUInt64LE(BigInt(p.start + p.sectors - 1), at + 40);
    Buffer.from((p.name ?? '').slice(0, 36), 'utf16le').copy(entries, at + 56);
    p.content?.copy(image, p.start * 512, 0, Math.min(p.content.length, p.sectors * 512));
  });
  const header = (current: number, backup: number, entriesLba: number): Buffer => {
    const h = Buffer.alloc(512);
    h.write('EFI PART', 0, 'latin1');
    h.writeUInt32LE(0x00010000, 8);
    h.writeUInt32LE(92, 12);
    h.writeBigUInt64LE(BigInt(current), 24);
    h.writeBigUInt64LE(BigInt(backup), 32);
    h.writeBigUInt64LE(34n, 40);
    h.writeBigUInt64LE(BigInt(sectors - 34), 48);
    guidToBytes(diskGuid).copy(h, 56);
    h.writeBigUInt64LE(BigInt(entriesLba), 72);
    h.writeUInt32LE(128, 80);
    h.writeUInt32LE(128, 84);
    h.writeUInt32LE(crc32(entries), 88);
    h.writeUInt32LE(crc32(h.subarray(0, 92)), 16);
    return h;
  };
  header(1, sectors - 1, 2).copy(image, 512);
  entries.copy(image, 1024);
  entries.copy(image, (sectors - 33) * 512);
  header(sectors - 1, 1, sectors - 33).copy(image, (sectors - 1) * 512);
  return image;
}
