/**
 * A UEFI boot entry for the image just written (IPA's `install_bootloader` for whole-disk images
 * in UEFI mode, which runs efibootmgr): find the image's loader on its EFI system partition, write
 * a `Boot####` variable naming it (an EFI_LOAD_OPTION: the partition as a hard-drive device path,
 * then the loader's file path), and put it first in `BootOrder` — through efivarfs, whose files
 * are the variables (4 bytes of attributes, then the data, in one write). The kernel leaves
 * `Boot####` and `BootOrder` writable (they are on its list of variables safe to change), so no
 * `chattr` is needed.
 *
 * Which loader, as IPA looks for one: a shim `BOOTX64.CSV` in `\EFI\<vendor>\` names it and its
 * label; else `shimx64.efi`, then `grubx64.efi`, in a vendor directory; else the fallback loader
 * `\EFI\BOOT\BOOTX64.EFI` (which firmware boots without an entry, but an entry makes it first).
 */
import { open, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { FatVolume } from './fat.js';
import type { PartitionReader } from './fat.js';
import { guidToBytes } from './partition-table.js';
import type { PartitionInfo, PartitionUuids } from './partition-table.js';

/** EFI_GLOBAL_VARIABLE: the vendor GUID of `Boot####` and `BootOrder`. */
export const EFI_GLOBAL_GUID = '8be4df61-93ca-11d2-aa0d-00e098032b8c';
/** NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS. */
const BOOT_VARIABLE_ATTRIBUTES = 0x7;
const LOAD_OPTION_ACTIVE = 0x1;

export class UefiBootError extends Error {}

export interface EfiLoader {
  /** The loader's path on the ESP, firmware style: `\EFI\debian\shimx64.efi`. */
  path: string;
  /** The entry's description. */
  label: string;
}

/** Finds the loader a boot entry should name on the FAT file system of an ESP. */
export async function findEfiLoader(volume: FatVolume): Promise<EfiLoader> {
  const vendors = ((await volume.list(['EFI'])) ?? []).filter((e) => e.directory && e.name.toUpperCase() !== 'BOOT');
  for (const vendor of vendors) {
    const entries = (await volume.list(['EFI', vendor.name])) ?? [];
    const csv = entries.find((e) => !e.directory && e.name.toUpperCase() === 'BOOTX64.CSV');
    if (csv === undefined) continue;
    const text = decodeCsv((await volume.readFile(['EFI', vendor.name, csv.name]))!);
    const [file, label] = (text.split(/\r?\n/).find((l) => l.trim() !== '') ?? '').split(',').map((f) => f.trim());
    if (file && entries.some((e) => !e.directory && e.name.toLowerCase() === file.toLowerCase()) && /^[\w.-]+$/.test(file)) {
      return { path: `\\EFI\\${vendor.name}\\${file}`, label: label || vendor.name };
    }
  }
  for (const wanted of ['shimx64.efi', 'grubx64.efi']) {
    for (const vendor of vendors) {
      const found = ((await volume.list(['EFI', vendor.name])) ?? []).find((e) => !e.directory && e.name.toLowerCase() === wanted);
      if (found) return { path: `\\EFI\\${vendor.name}\\${found.name}`, label: vendor.name };
    }
  }
  const fallback = ((await volume.list(['EFI', 'BOOT'])) ?? []).find((e) => !e.directory && e.name.toUpperCase() === 'BOOTX64.EFI');
  if (fallback) return { path: `\\EFI\\BOOT\\${fallback.name}`, label: 'ironring' };
  throw new UefiBootError('the EFI system partition holds no boot loader: no \\EFI\\<vendor>\\BOOTX64.CSV, shimx64.efi or grubx64.efi, and no \\EFI\\BOOT\\BOOTX64.EFI');
}

/** shim's CSV is UTF-16 (little-endian, with a byte-order mark); accept UTF-8 too. */
function decodeCsv(bytes: Buffer): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return bytes.subarray(2).toString('utf16le');
  return bytes.toString('utf8');
}

/**
 * The EFI_LOAD_OPTION of an entry booting `loader` from `esp` of the disk `table` describes: the
 * ESP as a hard-drive media device path (GPT: its unique GUID; MBR: the disk signature), the
 * loader's file path, the end node.
 */
export function loadOption(loader: EfiLoader, esp: PartitionInfo, table: Pick<PartitionUuids, 'table' | 'sector_size' | 'disk identifier'>): Buffer {
  const hd = Buffer.alloc(42);
  hd[0] = 0x04; // media device path
  hd[1] = 0x01; // hard drive
  hd.writeUInt16LE(42, 2);
  hd.writeUInt32LE(esp.number, 4);
  hd.writeBigUInt64LE(BigInt(esp.start / table.sector_size), 8);
  hd.writeBigUInt64LE(BigInt(esp.size / table.sector_size), 16);
  if (table.table === 'gpt') {
    guidToBytes(esp.uuid).copy(hd, 24);
    hd[40] = 0x02; // GPT
    hd[41] = 0x02; // GUID signature
  } else {
    hd.writeUInt32LE(Number.parseInt(table['disk identifier'], 16) >>> 0, 24);
    hd[40] = 0x01; // MBR
    hd[41] = 0x01; // 32-bit signature
  }
  const file = Buffer.from(`${loader.path}\0`, 'utf16le');
  const fileNode = Buffer.alloc(4);
  fileNode[0] = 0x04;
  fileNode[1] = 0x04; // file path
  fileNode.writeUInt16LE(4 + file.length, 2);
  const end = Buffer.from([0x7f, 0xff, 0x04, 0x00]);
  const paths = Buffer.concat([hd, fileNode, file, end]);
  const head = Buffer.alloc(6);
  head.writeUInt32LE(LOAD_OPTION_ACTIVE, 0);
  head.writeUInt16LE(paths.length, 4);
  return Buffer.concat([head, Buffer.from(`${loader.label}\0`, 'utf16le'), paths]);
}

export interface BootEntry {
  /** `Boot0004`. */
  variable: string;
  /** False when an identical entry was there already (it is moved first in BootOrder). */
  created: boolean;
  bootOrder: string[];
}

const hex4 = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');

/**
 * Writes `option` as a `Boot####` variable in `efivars` (the efivarfs mount) — reusing one with the
 * same data — and puts it first in `BootOrder`.
 */
export async function addBootEntry(efivars: string, option: Buffer): Promise<BootEntry> {
  let names: string[];
  try {
    names = await readdir(efivars);
  } catch (err) {
    throw new UefiBootError(`cannot read the firmware's variables at ${efivars} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the machine did not boot in UEFI mode, or efivarfs is not mounted`);
  }
  const pattern = new RegExp(`^Boot([0-9A-F]{4})-${EFI_GLOBAL_GUID}$`, 'i');
  const used = new Set<number>();
  let number: number | null = null;
  for (const name of names) {
    const m = pattern.exec(name);
    if (m === null) continue;
    const n = Number.parseInt(m[1]!, 16);
    used.add(n);
    if (number === null && (await readFile(path.join(efivars, name))).subarray(4).equals(option)) number = n;
  }
  const created = number === null;
  if (number === null) {
    number = 0;
    while (used.has(number)) number++;
    if (number > 0xffff) throw new UefiBootError('every Boot#### variable is taken');
    await writeVariable(path.join(efivars, `Boot${hex4(number)}-${EFI_GLOBAL_GUID}`), option);
  }
  const orderFile = path.join(efivars, `BootOrder-${EFI_GLOBAL_GUID}`);
  let order: number[] = [];
  try {
    const data = (await readFile(orderFile)).subarray(4);
    for (let i = 0; i + 1 < data.length; i += 2) order.push(data.readUInt16LE(i));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  order = [number, ...order.filter((n) => n !== number)];
  const data = Buffer.alloc(order.length * 2);
  order.forEach((n, i) => data.writeUInt16LE(n, i * 2));
  await writeVariable(orderFile, data);
  return { variable: `Boot${hex4(number)}`, created, bootOrder: order.map((n) => `Boot${hex4(n)}`) };
}

/** One write of attributes and data, as efivarfs requires (no truncation: it replaces the variable). */
async function writeVariable(file: string, data: Buffer): Promise<void> {
  const attrs = Buffer.alloc(4);
  attrs.writeUInt32LE(BOOT_VARIABLE_ATTRIBUTES, 0);
  const handle = await open(file, 'w');
  try {
    const bytes = Buffer.concat([attrs, data]);
    const { bytesWritten } = await handle.write(bytes, 0, bytes.length, null);
    if (bytesWritten !== bytes.length) throw new UefiBootError(`${path.basename(file)}: the firmware took ${bytesWritten} of ${bytes.length} bytes`);
  } catch (err) {
    if (err instanceof UefiBootError) throw err;
    throw new UefiBootError(`writing ${path.basename(file)} failed: ${(err as Error).message} (the firmware refused the variable, or its store is full)`);
  } finally {
    await handle.close();
  }
}

/**
 * The whole command: the ESP of `device` (by `espUuid`, else the table's), its loader, the entry.
 * `read` reads the device.
 */
export async function installUefiBootEntry(read: (position: number, length: number) => Promise<Buffer>, table: PartitionUuids, espUuid: string | null, efivars: string): Promise<BootEntry & EfiLoader> {
  const uuid = espUuid ?? table['efi system partition uuid'];
  if (uuid === null) throw new UefiBootError('the image has no EFI system partition, so there is no loader to register');
  const esp = table.partitions.find((p) => p.uuid.toLowerCase() === uuid.toLowerCase());
  if (esp === undefined) throw new UefiBootError(`no partition ${uuid} on the disk written (it has ${table.partitions.map((p) => p.uuid).join(', ') || 'none'})`);
  const onEsp: PartitionReader = (position, length) => {
    if (position < 0 || position + length > esp.size) throw new UefiBootError(`the ESP's file system points past its partition (byte ${position + length} of ${esp.size})`);
    return read(esp.start + position, length);
  };
  const volume = await FatVolume.open(onEsp, esp.size);
  const loader = await findEfiLoader(volume);
  const entry = await addBootEntry(efivars, loadOption(loader, esp, table));
  return { ...entry, ...loader };
}
