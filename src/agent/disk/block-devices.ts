/**
 * Block device discovery from sysfs, as the deploy agent sees the machine's disks.
 *
 * IPA lists disks with `lsblk` and asks udev for serials and WWNs; the ramdisk ironring builds has
 * neither (busybox, no udev daemon), so this reads the same facts straight from `/sys/block` — the
 * source lsblk and udev read them from — and returns records shaped like IPA's `BlockDevice`, so the
 * conductor, the inventory and the root device hints see the fields Ironic expects.
 *
 * The root directory is injectable (`sysRoot`, `devRoot`): tests build a fake tree.
 */
import { readFile, readdir, readlink } from 'node:fs/promises';
import { basename, join, resolve as resolvePath } from 'node:path';

/** One whole disk, IPA's `BlockDevice` fields (snake_case: they go over the wire in the inventory). */
export interface BlockDevice {
  /** `/dev/sda`, `/dev/nvme0n1`, `/dev/vda`. */
  name: string;
  /** Size in bytes (sysfs counts 512-byte sectors whatever the logical block size). */
  size: number;
  model: string | null;
  vendor: string | null;
  serial: string | null;
  /** `0x…` for SCSI/SATA NAA identifiers (as udev's ID_WWN), the kernel's `eui.…`/`nvme.…` for NVMe. */
  wwn: string | null;
  wwn_with_extension: string | null;
  wwn_vendor_extension: string | null;
  rotational: boolean;
  /** SCSI address `host:channel:target:lun`, null for NVMe and virtio. */
  hctl: string | null;
  /** `/dev/disk/by-path/…` link that points at this disk, when udev (or the ramdisk) made one. */
  by_path: string | null;
  logical_sectors: number | null;
  physical_sectors: number | null;
  /** Removable media flag. IPA keeps such disks (USB disks are flagged removable too); so do we. */
  removable: boolean;
}

/** A device the listing left out, and why (for the error that lists what was seen). */
export interface SkippedDevice {
  name: string;
  reason: string;
}

export interface ScanOptions {
  /** Directory standing for `/sys`. Default `/sys`. */
  sysRoot?: string;
  /** Directory standing for `/dev`. Default `/dev`. */
  devRoot?: string;
}

export interface ScanResult {
  /** Disks an image may be written to, sorted by kernel name (lsblk's order). */
  devices: BlockDevice[];
  skipped: SkippedDevice[];
}

/**
 * Kernel names that are never disks to deploy on: RAM disks and zram (IPA skips them explicitly),
 * loop devices and CD/DVD drives (lsblk types `loop` and `rom`, which IPA's `disk` filter drops),
 * floppies (IPA's `ignore_floppy`), device-mapper volumes (lsblk types `lvm`, `crypt`, `mpath`).
 * md RAID volumes stay: IPA treats them as disks.
 */
const NEVER_DISKS: ReadonlyArray<[RegExp, string]> = [
  [/^ram\d/, 'RAM disk'],
  [/^zram\d/, 'zram device'],
  [/^loop\d/, 'loop device'],
  [/^sr\d/, 'optical drive'],
  [/^fd\d/, 'floppy'],
  [/^dm-\d/, 'device-mapper volume'],
];

/** Bounded read of one sysfs attribute, trimmed; null when absent or empty. */
async function attribute(path: string): Promise<string | null> {
  try {
    const text = (await readFile(path, 'latin1')).slice(0, 4096).replace(/\0/g, '').trim();
    return text === '' ? null : text;
  } catch {
    return null;
  }
}

async function firstAttribute(paths: string[]): Promise<string | null> {
  for (const p of paths) {
    const value = await attribute(p);
    if (value !== null) return value;
  }
  return null;
}

/**
 * Unit serial number from SCSI VPD page 0x80 (`device/vpd_pg80`): a 4-byte header whose bytes 2–3
 * give the length, then the ASCII serial. libata exposes it for SATA disks too.
 */
async function vpdSerial(path: string): Promise<string | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch {
    return null;
  }
  if (bytes.length < 4 || bytes[1] !== 0x80) return null;
  const length = bytes.readUInt16BE(2);
  const serial = bytes.subarray(4, 4 + length).toString('latin1').replace(/\0/g, '').trim();
  return serial === '' ? null : serial;
}

/**
 * The three WWN fields from the kernel's `wwid` string, as udev's scsi_id fills ID_WWN,
 * ID_WWN_WITH_EXTENSION and ID_WWN_VENDOR_EXTENSION: an NAA identifier `naa.<16 hex>` is the WWN
 * itself; `naa.<32 hex>` (NAA 6, registered extended) is the WWN followed by the vendor extension.
 * NVMe namespaces keep the kernel's form (`eui.…`, `nvme.…`), which is what udev copies into ID_WWN.
 */
export function wwnFields(wwid: string | null): Pick<BlockDevice, 'wwn' | 'wwn_with_extension' | 'wwn_vendor_extension'> {
  const none = { wwn: null, wwn_with_extension: null, wwn_vendor_extension: null };
  if (wwid === null) return none;
  const naa = /^naa\.([0-9a-f]+)$/i.exec(wwid);
  if (naa) {
    const hex = naa[1]!.toLowerCase();
    if (hex.length <= 16) return { wwn: `0x${hex}`, wwn_with_extension: `0x${hex}`, wwn_vendor_extension: null };
    return { wwn: `0x${hex.slice(0, 16)}`, wwn_with_extension: `0x${hex}`, wwn_vendor_extension: `0x${hex.slice(16)}` };
  }
  if (/^(eui|nvme|uuid)\./i.test(wwid)) return { wwn: wwid, wwn_with_extension: wwid, wwn_vendor_extension: null };
  // `t10.` vendor identifiers are not WWNs; udev leaves ID_WWN unset for them.
  return none;
}

/** Maps `/dev/<kernel name>` to the `/dev/disk/by-path/…` link that resolves to it. */
async function byPathLinks(devRoot: string): Promise<Map<string, string>> {
  const dir = join(devRoot, 'disk', 'by-path');
  const links = new Map<string, string>();
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return links;
  }
  for (const name of names.sort()) {
    try {
      const target = basename(resolvePath(dir, await readlink(join(dir, name))));
      // Several links can name one disk (e.g. `-ata-1` and `-ata-1.0`): keep the first by name.
      if (!links.has(target)) links.set(target, `/dev/disk/by-path/${name}`);
    } catch {
      // Not a link: not ours to interpret.
    }
  }
  return links;
}

/** Reads every whole disk under `<sysRoot>/block`, keeping what an image may be written to. */
export async function scanBlockDevices(options: ScanOptions = {}): Promise<ScanResult> {
  const sysRoot = options.sysRoot ?? '/sys';
  const devRoot = options.devRoot ?? '/dev';
  const blockDir = join(sysRoot, 'block');
  const names = (await readdir(blockDir)).sort();
  const byPath = await byPathLinks(devRoot);
  const devices: BlockDevice[] = [];
  const skipped: SkippedDevice[] = [];
  for (const kname of names) {
    const name = `/dev/${kname}`;
    const never = NEVER_DISKS.find(([pattern]) => pattern.test(kname));
    if (never) {
      skipped.push({ name, reason: never[1] });
      continue;
    }
    const dir = join(blockDir, kname);
    // SCSI peripheral type 5 is a CD/DVD drive whatever its kernel name.
    if ((await attribute(join(dir, 'device', 'type'))) === '5') {
      skipped.push({ name, reason: 'optical drive' });
      continue;
    }
    // A path of a multipathed NVMe namespace (`nvme0c0n1`): the namespace itself is listed too.
    if ((await attribute(join(dir, 'hidden'))) === '1') {
      skipped.push({ name, reason: 'hidden (NVMe multipath path)' });
      continue;
    }
    const sectors = Number(await attribute(join(dir, 'size')));
    if (!Number.isSafeInteger(sectors) || sectors <= 0) {
      skipped.push({ name, reason: 'empty (size 0)' });
      continue;
    }
    if ((await attribute(join(dir, 'ro'))) === '1') {
      skipped.push({ name, reason: 'read-only' });
      continue;
    }
    const serial =
      (await firstAttribute([join(dir, 'device', 'serial'), join(dir, 'serial')])) ??
      (await vpdSerial(join(dir, 'device', 'vpd_pg80')));
    const wwid = await firstAttribute([join(dir, 'wwid'), join(dir, 'device', 'wwid')]);
    let hctl: string | null = null;
    try {
      hctl = (await readdir(join(dir, 'device', 'scsi_device')))[0] ?? null;
    } catch {
      hctl = null;
    }
    const logical = Number(await attribute(join(dir, 'queue', 'logical_block_size')));
    const physical = Number(await attribute(join(dir, 'queue', 'physical_block_size')));
    devices.push({
      name,
      size: sectors * 512,
      model: await attribute(join(dir, 'device', 'model')),
      vendor: await attribute(join(dir, 'device', 'vendor')),
      serial,
      ...wwnFields(wwid),
      rotational: (await attribute(join(dir, 'queue', 'rotational'))) === '1',
      hctl,
      by_path: byPath.get(kname) ?? null,
      logical_sectors: logical > 0 ? logical : null,
      physical_sectors: physical > 0 ? physical : null,
      removable: (await attribute(join(dir, 'removable'))) === '1',
    });
  }
  return { devices, skipped };
}

/** The disks an image may be written to (see `scanBlockDevices` for what is left out). */
export async function listBlockDevices(options: ScanOptions = {}): Promise<BlockDevice[]> {
  return (await scanBlockDevices(options)).devices;
}
