/**
 * IPA's `erase_devices_metadata` clean step: what makes a disk's last user invisible to the next
 * one without overwriting every byte — partition tables, file-system, RAID and LVM signatures.
 *
 * IPA runs `wipefs --all` on each partition and disk and zaps both GPT copies (`sgdisk -Z`). The
 * ramdisk ironring builds has neither tool, so this zeroes where those signatures live: the first
 * and the last MiB of every partition the table lists (ext2/3/4, XFS, btrfs, swap, LVM and md 1.1
 * and 1.2 superblocks sit in the first MiB; md 0.90 and 1.0 in the last 128 KiB), then the first and
 * the last MiB of the disk (MBR, the primary GPT, the backup GPT, and signatures of a file system
 * made on the whole disk). Everything is synced before the step reports success, and the disk is
 * read back: a partition table still found is an error.
 */
import { open } from 'node:fs/promises';
import { deviceBytes } from './image-writer.js';
import { getPartitionUuids } from './partition-table.js';

const MIB = 1024 * 1024;
/** Bytes zeroed at each end of each partition and of the disk. */
export const ERASE_BYTES = MIB;

export interface ErasedMetadata {
  device: string;
  /** Partitions whose ends were zeroed (from the table found before). */
  partitions: number;
  /** Byte ranges zeroed, [offset, length]. */
  regions: Array<[number, number]>;
}

/** Zeroes the metadata regions of `device` (a block device or, in tests, a file) and syncs. */
export async function eraseDeviceMetadata(device: string, sysRoot = '/sys'): Promise<ErasedMetadata> {
  const size = await deviceBytes(device, sysRoot);
  let partitions: Array<{ start: number; size: number }> = [];
  try {
    partitions = (await getPartitionUuids(device)).partitions;
  } catch {
    // No table, or one that does not parse: the disk's own ends still go.
  }
  const regions: Array<[number, number]> = [];
  const ends = (start: number, length: number) => {
    const begin = Math.max(0, Math.min(start, size));
    const end = Math.max(begin, Math.min(start + length, size));
    const n = Math.min(ERASE_BYTES, end - begin);
    if (n === 0) return;
    regions.push([begin, n]);
    if (end - n > begin) regions.push([end - n, n]);
  };
  for (const p of partitions) ends(p.start, p.size);
  ends(0, size);

  const zeros = Buffer.alloc(ERASE_BYTES);
  const handle = await open(device, 'r+');
  try {
    for (const [offset, length] of regions) {
      let done = 0;
      while (done < length) {
        const { bytesWritten } = await handle.write(zeros, 0, length - done, offset + done);
        if (bytesWritten <= 0) throw new Error(`${device} accepted no bytes at offset ${offset + done}`);
        done += bytesWritten;
      }
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  const left = await getPartitionUuids(device).then(
    (t) => t,
    () => null,
  );
  if (left !== null) throw new Error(`${device} still shows a ${left.table} partition table after its metadata was erased`);
  return { device, partitions: partitions.length, regions };
}
