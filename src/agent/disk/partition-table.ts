/**
 * Reading the partition table of a freshly written whole-disk image, for `standby.get_partition_uuids`.
 *
 * IPA answers that command for a whole-disk image with `root uuid` = the MBR disk signature
 * (`0x` + the 4 bytes at offset 440, little-endian — what `hexdump -s 440 -n 4 -e '"0x%08x"'`
 * prints), which the conductor uses as the disk identifier for a local-boot chain entry. This reads
 * that and, from the bytes alone (no blkid, sfdisk or udev in the ramdisk), the GPT disk GUID and
 * every partition's UUID as Linux names them (`PARTUUID`): the unique partition GUID on GPT,
 * `<signature>-<number>` on MBR.
 */
import { open } from 'node:fs/promises';
import { PartitionTableError } from './errors.js';

export interface PartitionInfo {
  /** 1-based, as the kernel numbers it (`sda1`). */
  number: number;
  /** Linux PARTUUID. */
  uuid: string;
  /** GPT partition type GUID, or the MBR type byte as `0x83`. */
  type: string;
  /** GPT partition name (UTF-16 label), null on MBR. */
  name: string | null;
  /** Byte offset of the first sector. */
  start: number;
  /** Length in bytes. */
  size: number;
}

export interface PartitionUuids {
  /** IPA's `root uuid` for whole-disk images: the MBR disk signature, `0x%08x`. */
  'root uuid': string;
  /** The GPT disk GUID, or the MBR signature (`0x%08x`) on an MBR disk. */
  'disk identifier': string;
  /** Unique GUID (GPT) or PARTUUID (MBR type 0xef) of the EFI system partition, if there is one. */
  'efi system partition uuid': string | null;
  table: 'gpt' | 'msdos';
  /** Bytes per logical sector the table was found with (512 or 4096). */
  sector_size: number;
  partitions: PartitionInfo[];
}

const ESP_TYPE = 'c12a7328-f81f-11d2-ba4b-00a0c93ec93b';
/** More than this many entry bytes is not a table any tool writes (128 × 128 is the norm). */
const MAX_ENTRY_BYTES = 1024 * 1024;

let crcTable: Uint32Array | undefined;
/** CRC-32 (IEEE), as the GPT header and entry array checksums use. */
export function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const byte of bytes) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** A GUID as stored on disk (first three fields little-endian) to its canonical lower-case text. */
export function guidToString(bytes: Uint8Array): string {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, 16);
  const hex = (from: number, to: number): string => b.subarray(from, to).toString('hex');
  return [
    b.readUInt32LE(0).toString(16).padStart(8, '0'),
    b.readUInt16LE(4).toString(16).padStart(4, '0'),
    b.readUInt16LE(6).toString(16).padStart(4, '0'),
    hex(8, 10),
    hex(10, 16),
  ].join('-');
}

/** A canonical GUID text to the 16 bytes a GPT stores (first three fields little-endian). */
export function guidToBytes(text: string): Buffer {
  const b = Buffer.from(text.replaceAll('-', ''), 'hex');
  if (b.length !== 16) throw new RangeError(`not a GUID: ${JSON.stringify(text)}`);
  return Buffer.concat([Buffer.from(b.subarray(0, 4)).reverse(), Buffer.from(b.subarray(4, 6)).reverse(), Buffer.from(b.subarray(6, 8)).reverse(), b.subarray(8)]);
}

type Reader = (position: number, length: number) => Promise<Buffer>;

function mbrSignature(sector0: Buffer): string {
  return `0x${sector0.readUInt32LE(440).toString(16).padStart(8, '0')}`;
}

async function parseGpt(read: Reader, sectorSize: number, sector0: Buffer): Promise<PartitionUuids> {
  const header = await read(sectorSize, sectorSize);
  const headerSize = header.readUInt32LE(12);
  if (headerSize < 92 || headerSize > sectorSize) throw new PartitionTableError(`GPT header size ${headerSize} is invalid`);
  const stored = header.readUInt32LE(16);
  const copy = Buffer.from(header.subarray(0, headerSize));
  copy.writeUInt32LE(0, 16);
  if (crc32(copy) !== stored) throw new PartitionTableError('GPT header checksum mismatch (corrupt or truncated image?)');
  const entriesLba = Number(header.readBigUInt64LE(72));
  const count = header.readUInt32LE(80);
  const entrySize = header.readUInt32LE(84);
  if (entrySize < 128 || entrySize % 8 !== 0 || count * entrySize > MAX_ENTRY_BYTES) {
    throw new PartitionTableError(`GPT entry array of ${count} × ${entrySize} bytes is not plausible`);
  }
  const entries = await read(entriesLba * sectorSize, count * entrySize);
  if (crc32(entries) !== header.readUInt32LE(88)) throw new PartitionTableError('GPT partition entry array checksum mismatch');
  const partitions: PartitionInfo[] = [];
  for (let i = 0; i < count; i++) {
    const entry = entries.subarray(i * entrySize, (i + 1) * entrySize);
    if (entry.subarray(0, 16).every((byte) => byte === 0)) continue;
    const first = Number(entry.readBigUInt64LE(32));
    const last = Number(entry.readBigUInt64LE(40));
    const name = entry.subarray(56, 128).toString('utf16le').replace(/\0.*$/s, '');
    partitions.push({
      number: i + 1,
      uuid: guidToString(entry.subarray(16, 32)),
      type: guidToString(entry.subarray(0, 16)),
      name,
      start: first * sectorSize,
      size: (last - first + 1) * sectorSize,
    });
  }
  return {
    'root uuid': mbrSignature(sector0),
    'disk identifier': guidToString(header.subarray(56, 72)),
    'efi system partition uuid': partitions.find((p) => p.type === ESP_TYPE)?.uuid ?? null,
    table: 'gpt',
    sector_size: sectorSize,
    partitions,
  };
}

function parseMbr(sector0: Buffer): PartitionUuids {
  const signature = sector0.readUInt32LE(440).toString(16).padStart(8, '0');
  const partitions: PartitionInfo[] = [];
  for (let i = 0; i < 4; i++) {
    const entry = sector0.subarray(446 + i * 16, 446 + (i + 1) * 16);
    const type = entry[4]!;
    const sectors = entry.readUInt32LE(12);
    if (type === 0 || sectors === 0) continue;
    partitions.push({
      number: i + 1,
      uuid: `${signature}-${String(i + 1).padStart(2, '0')}`,
      type: `0x${type.toString(16).padStart(2, '0')}`,
      name: null,
      start: entry.readUInt32LE(8) * 512,
      size: sectors * 512,
    });
  }
  return {
    'root uuid': `0x${signature}`,
    'disk identifier': `0x${signature}`,
    'efi system partition uuid': partitions.find((p) => p.type === '0xef')?.uuid ?? null,
    table: 'msdos',
    sector_size: 512,
    partitions,
  };
}

/**
 * Reads the partition table at the start of `device` (a block device or an image file). A GPT is
 * looked for at 512-byte and 4096-byte sectors behind its protective MBR; otherwise the four primary
 * MBR entries are read (logical partitions inside an extended one are not listed). Throws
 * `PartitionTableError` when there is no boot signature or the GPT's checksums fail.
 */
export async function getPartitionUuids(device: string): Promise<PartitionUuids> {
  const handle = await open(device, 'r');
  try {
    const read: Reader = async (position, length) => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      if (bytesRead < length) throw new PartitionTableError(`${device} ends at byte ${position + bytesRead}, inside its partition table`);
      return buffer;
    };
    const sector0 = await read(0, 512);
    if (sector0[510] !== 0x55 || sector0[511] !== 0xaa) {
      throw new PartitionTableError(`${device} has no partition table (no 0x55AA boot signature)`);
    }
    const protective = [0, 1, 2, 3].some((i) => sector0[446 + i * 16 + 4] === 0xee);
    if (protective) {
      for (const sectorSize of [512, 4096]) {
        const magic = await read(sectorSize, 8).catch(() => Buffer.alloc(8));
        if (magic.toString('latin1') === 'EFI PART') return await parseGpt(read, sectorSize, sector0);
      }
      throw new PartitionTableError(`${device} has a protective MBR but no GPT header`);
    }
    return parseMbr(sector0);
  } finally {
    await handle.close();
  }
}
