/**
 * A read-only FAT12/16/32 reader, enough to find a boot loader on an EFI system partition without
 * mounting it: the deploy ramdisk has no vfat or nls modules, and the agent only needs to list
 * `EFI/*` and read a small file (shim's `BOOTX64.CSV`).
 *
 * Bounded against a hostile image: sizes come from the boot sector and are checked against the
 * partition; directory walks stop at `MAX_DIRECTORY_ENTRIES`, cluster chains at the cluster count
 * (a loop in the FAT ends there), and files read at most `MAX_FILE_BYTES`.
 */

/** Reads `length` bytes at `position` of the partition. */
export type PartitionReader = (position: number, length: number) => Promise<Buffer>;

export class FatError extends Error {}

/** A directory entry: its long name when it has one, else the 8.3 name. */
export interface FatEntry {
  name: string;
  directory: boolean;
  cluster: number;
  size: number;
}

const MAX_DIRECTORY_ENTRIES = 4096;
const MAX_FILE_BYTES = 1024 * 1024;

interface Geometry {
  bytesPerSector: number;
  clusterBytes: number;
  fatOffset: number;
  fatBits: 12 | 16 | 32;
  rootOffset: number;
  rootEntries: number;
  rootCluster: number;
  dataOffset: number;
  clusters: number;
}

export class FatVolume {
  private constructor(
    private readonly read: PartitionReader,
    private readonly geometry: Geometry,
  ) {}

  /** Opens the FAT file system of a partition of `size` bytes; `FatError` when it is not one. */
  static async open(read: PartitionReader, size: number): Promise<FatVolume> {
    const boot = await read(0, 512);
    if (boot.readUInt16LE(510) !== 0xaa55) throw new FatError('no boot sector signature: not a FAT file system');
    const bytesPerSector = boot.readUInt16LE(11);
    const sectorsPerCluster = boot[13]!;
    const reserved = boot.readUInt16LE(14);
    const fats = boot[16]!;
    const rootEntries = boot.readUInt16LE(17);
    const totalSectors = boot.readUInt16LE(19) || boot.readUInt32LE(32);
    const fatSectors = boot.readUInt16LE(22) || boot.readUInt32LE(36);
    if (![512, 1024, 2048, 4096].includes(bytesPerSector) || sectorsPerCluster === 0 || (sectorsPerCluster & (sectorsPerCluster - 1)) !== 0 || fats === 0 || reserved === 0 || fatSectors === 0) {
      throw new FatError('the boot sector does not describe a FAT file system');
    }
    if (totalSectors * bytesPerSector > size) throw new FatError(`the file system (${totalSectors * bytesPerSector} bytes) is larger than its partition (${size})`);
    const rootSectors = Math.ceil((rootEntries * 32) / bytesPerSector);
    const dataSector = reserved + fats * fatSectors + rootSectors;
    if (dataSector >= totalSectors) throw new FatError('the boot sector leaves no data area');
    const clusters = Math.floor((totalSectors - dataSector) / sectorsPerCluster);
    // The FAT type follows from the cluster count alone (Microsoft's rule).
    const fatBits = clusters < 4085 ? 12 : clusters < 65525 ? 16 : 32;
    return new FatVolume(read, {
      bytesPerSector,
      clusterBytes: sectorsPerCluster * bytesPerSector,
      fatOffset: reserved * bytesPerSector,
      fatBits,
      rootOffset: (reserved + fats * fatSectors) * bytesPerSector,
      rootEntries: fatBits === 32 ? 0 : rootEntries,
      rootCluster: fatBits === 32 ? boot.readUInt32LE(44) : 0,
      dataOffset: dataSector * bytesPerSector,
      clusters,
    });
  }

  /** The entries of the directory at `path` (`[]` the root, `['EFI']`…); null when it does not exist. */
  async list(path: readonly string[]): Promise<FatEntry[] | null> {
    let entries = await this.rootEntries();
    for (const part of path) {
      const next = entries.find((e) => e.directory && e.name.toLowerCase() === part.toLowerCase());
      if (next === undefined) return null;
      entries = parseDirectory(await this.readChain(next.cluster, MAX_DIRECTORY_ENTRIES * 32));
    }
    return entries;
  }

  /** A file's bytes (at most 1 MiB); null when it does not exist. */
  async readFile(path: readonly string[]): Promise<Buffer | null> {
    const entries = await this.list(path.slice(0, -1));
    const file = entries?.find((e) => !e.directory && e.name.toLowerCase() === path.at(-1)!.toLowerCase());
    if (file === undefined) return null;
    if (file.size > MAX_FILE_BYTES) throw new FatError(`${path.join('/')} is larger than ${MAX_FILE_BYTES} bytes`);
    return (await this.readChain(file.cluster, file.size)).subarray(0, file.size);
  }

  private async rootEntries(): Promise<FatEntry[]> {
    const g = this.geometry;
    if (g.fatBits === 32) return parseDirectory(await this.readChain(g.rootCluster, MAX_DIRECTORY_ENTRIES * 32));
    return parseDirectory(await this.read(g.rootOffset, Math.min(g.rootEntries, MAX_DIRECTORY_ENTRIES) * 32));
  }

  /** The clusters of a chain from `first`, concatenated, up to `limit` bytes. */
  private async readChain(first: number, limit: number): Promise<Buffer> {
    const g = this.geometry;
    const parts: Buffer[] = [];
    let bytes = 0;
    let cluster = first;
    for (let hops = 0; cluster >= 2 && cluster < g.clusters + 2 && bytes < limit; hops++) {
      if (hops > g.clusters) throw new FatError('a cluster chain loops');
      parts.push(await this.read(g.dataOffset + (cluster - 2) * g.clusterBytes, g.clusterBytes));
      bytes += g.clusterBytes;
      cluster = await this.next(cluster);
    }
    return Buffer.concat(parts);
  }

  private async next(cluster: number): Promise<number> {
    const g = this.geometry;
    switch (g.fatBits) {
      case 12: {
        const offset = g.fatOffset + Math.floor(cluster * 1.5);
        const pair = (await this.read(offset, 2)).readUInt16LE(0);
        const value = cluster & 1 ? pair >> 4 : pair & 0xfff;
        return value >= 0xff8 ? 0 : value;
      }
      case 16: {
        const value = (await this.read(g.fatOffset + cluster * 2, 2)).readUInt16LE(0);
        return value >= 0xfff8 ? 0 : value;
      }
      case 32: {
        const value = (await this.read(g.fatOffset + cluster * 4, 4)).readUInt32LE(0) & 0x0fffffff;
        return value >= 0x0ffffff8 ? 0 : value;
      }
    }
  }
}

/** The entries of a directory's bytes, long names assembled; `.`, `..`, deleted entries and volume labels left out. */
function parseDirectory(bytes: Buffer): FatEntry[] {
  const entries: FatEntry[] = [];
  let longName: string[] = [];
  for (let off = 0; off + 32 <= bytes.length && entries.length < MAX_DIRECTORY_ENTRIES; off += 32) {
    const first = bytes[off]!;
    if (first === 0) break;
    const attr = bytes[off + 11]!;
    if (first === 0xe5) {
      longName = [];
      continue;
    }
    if (attr === 0x0f) {
      // A long-name slot: 13 UTF-16 units in three runs; slots come last-first.
      const units = Buffer.concat([bytes.subarray(off + 1, off + 11), bytes.subarray(off + 14, off + 26), bytes.subarray(off + 28, off + 32)]);
      let text = '';
      for (let i = 0; i + 1 < units.length; i += 2) {
        const unit = units.readUInt16LE(i);
        if (unit === 0 || unit === 0xffff) break;
        text += String.fromCharCode(unit);
      }
      if (first & 0x40) longName = [];
      longName.unshift(text);
      continue;
    }
    if (attr & 0x08) {
      longName = [];
      continue;
    }
    // Windows NT's case flags (byte 12): an all-lower-case 8.3 name is stored upper-case with a
    // flag rather than with a long name (mtools and Windows do this).
    const caseFlags = bytes[off + 12]!;
    let base = bytes.toString('latin1', off, off + 8).trimEnd();
    let ext = bytes.toString('latin1', off + 8, off + 11).trimEnd();
    if (caseFlags & 0x08) base = base.toLowerCase();
    if (caseFlags & 0x10) ext = ext.toLowerCase();
    const short = ext === '' ? base : `${base}.${ext}`;
    const name = longName.length > 0 ? longName.join('') : short;
    longName = [];
    if (short === '.' || short === '..') continue;
    const cluster = (bytes.readUInt16LE(off + 20) << 16) | bytes.readUInt16LE(off + 26);
    entries.push({ name, directory: (attr & 0x10) !== 0, cluster: cluster >>> 0, size: bytes.readUInt32LE(off + 28) });
  }
  return entries;
}
