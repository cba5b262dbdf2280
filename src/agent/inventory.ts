/**
 * The hardware inventory of the machine the agent runs on, in the shape ironic-python-agent (IPA)
 * posts to `POST /v1/continue_inspection` as `{"inventory": {...}}`, read from Linux pseudo-files
 * only (the ramdisk is busybox: no lshw, dmidecode, ipmitool, lldpd or udev).
 *
 * Where each part comes from, and where IPA differs:
 * - `cpu`: `/proc/cpuinfo` (IPA runs `lscpu`, which reads the same file). `architecture` is Node's
 *   `process.arch` mapped to uname's spelling.
 * - `memory.total`: MemTotal of `/proc/meminfo` (IPA: psutil, the same number). `physical_mb`: IPA
 *   sums DIMM sizes from dmidecode/lshw; without them we sum the online memory blocks of
 *   `/sys/devices/system/memory` — the RAM the kernel manages, firmware holes excluded, so it is
 *   near the DIMM sum where MemTotal is short of it by the kernel's own reservations. Without
 *   memory block sysfs (CONFIG_MEMORY_HOTPLUG off) it falls back to MemTotal rounded up to a MiB.
 * - `disks`: `listBlockDevices` (`disk/block-devices.ts`, sysfs in place of lsblk and udev).
 * - `interfaces`: `/sys/class/net`, Ethernet (type 1) with a valid MAC, loopback left out — the
 *   MACs `localMacs` looks the node up by. IPA also requires a `device` link (physical NICs); we
 *   keep virtual ones so lookup and inventory agree. `lldp`: the TLVs of the first LLDP frame
 *   heard when asked to listen (`ipa-collect-lldp`, src/agent/lldp.ts), else null. `client_id`
 *   (InfiniBand) and `biosdevname` are null as IPA gives them
 *   on Ethernet without the biosdevname tool.
 * - `system_vendor`: `/sys/class/dmi/id` (IPA: dmidecode/lshw, which read the same SMBIOS tables).
 *   Unreadable fields (product_serial is root-only) are "" as IPA gives them.
 * - `boot`: `/sys/firmware/efi` exists → uefi (as IPA checks); `pxe_interface` is the MAC of the
 *   kernel's `BOOTIF=` (pxelinux `01-aa-bb-…` or iPXE `aa:bb:…`), normalised to `aa:bb:…`.
 * - `bmc_address`, `bmc_v6address`, `bmc_mac`: null; IPA asks the BMC with ipmitool, absent here.
 *
 * Every pseudo-file read is bounded; a missing optional file gives null or "", never an error. Only
 * the disk scan may throw (no `/sys/block`), and its error is passed on.
 */
import { open, readdir, stat } from 'node:fs/promises';
import { endianness, hostname, networkInterfaces } from 'node:os';
import type { NetworkInterfaceInfo } from 'node:os';
import { join } from 'node:path';
import { listBlockDevices } from './disk/block-devices.js';
import type { BlockDevice } from './disk/block-devices.js';
import { collectLldp } from './lldp.js';
import type { CollectLldpOptions, LldpTlv } from './lldp.js';

export interface InventoryOptions {
  /** Directory standing for `/sys`. Default `/sys`. */
  sysRoot?: string;
  /** Directory standing for `/proc`. Default `/proc`. */
  procRoot?: string;
  /** Directory standing for `/dev` (passed to the block device scan). Default `/dev`. */
  devRoot?: string;
  /** Kernel command line text; default read from `${procRoot}/cmdline`. */
  cmdline?: string;
  /** IPv4/IPv6 addresses per interface name; default `addressesByInterface(os.networkInterfaces())`. */
  addresses?: () => Record<string, InterfaceAddresses>;
  /** Listen for LLDP on every interface listed (`ipa-collect-lldp`); default not: `lldp` is null. */
  lldp?: CollectLldpOptions;
}

/** The addresses reported for one interface. */
export interface InterfaceAddresses {
  ipv4?: string | null;
  ipv6?: string | null;
}

export interface InventoryCpu {
  model_name: string | null;
  frequency: string | null; // MHz as text ("2400.000"): the first processor's `cpu MHz`
  count: number; // logical processors (entries of /proc/cpuinfo), at least 1
  architecture: string; // uname's spelling: x86_64, aarch64, ppc64le…
  flags: string[]; // `flags` (x86) or `Features` (Arm) of the first processor
  socket_count?: number; // distinct `physical id` values; absent where cpuinfo has none (Arm)
}

export interface InventoryMemory {
  total: number; // bytes (MemTotal)
  physical_mb: number; // installed RAM in MiB, as near as sysfs tells (see the module comment)
}

export interface InventoryInterface {
  name: string;
  mac_address: string; // lower case aa:bb:cc:dd:ee:ff
  ipv4_address: string | null;
  ipv6_address: string | null; // a global address, else a link-local one without `%scope`
  has_carrier: boolean;
  lldp: LldpTlv[] | null; // null unless asked for (see the module comment)
  vendor: string | null; // PCI vendor id as sysfs gives it ("0x1af4"); null for virtual interfaces
  product: string | null; // PCI device id ("0x1000")
  client_id: null; // InfiniBand only
  biosdevname: null; // no biosdevname tool
  speed_mbps: number | null; // null when unknown (without link the kernel says -1)
}

export interface InventorySystemVendor {
  product_name: string;
  serial_number: string;
  manufacturer: string;
  firmware: { vendor: string; version: string; build_date: string };
}

export interface InventoryBoot {
  current_boot_mode: 'uefi' | 'bios';
  /** MAC of the interface the machine network-booted from (`BOOTIF=`), lower case with colons. */
  pxe_interface: string | null;
}

/** IPA's `inventory` (snake_case: it goes over the wire as is). */
export interface Inventory {
  cpu: InventoryCpu;
  memory: InventoryMemory;
  disks: BlockDevice[];
  interfaces: InventoryInterface[];
  system_vendor: InventorySystemVendor;
  boot: InventoryBoot;
  hostname: string;
  /** No ipmitool to ask the BMC: always null. */
  bmc_address: null;
  bmc_v6address: null;
  bmc_mac: null;
}

const MIB = 2 ** 20;
/** /proc/cpuinfo of a few hundred CPUs; beyond, the tail is cut and `count` undercounts. */
const BIG_FILE = MIB;
const SMALL_FILE = 4096;
const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;

/** At most `limit` bytes of a file (pseudo-files report no size: read until EOF), or null. */
async function readCapped(path: string, limit: number): Promise<string | null> {
  const handle = await open(path, 'r').catch(() => null);
  if (handle === null) return null;
  try {
    const buffer = Buffer.alloc(limit);
    let used = 0;
    while (used < limit) {
      const { bytesRead } = await handle.read(buffer, used, limit - used, null);
      if (bytesRead === 0) break;
      used += bytesRead;
    }
    return buffer.toString('latin1', 0, used).replace(/\0/g, '');
  } catch {
    return null; // EISDIR, or EINVAL from `carrier` of a down interface
  } finally {
    await handle.close();
  }
}

/** A sysfs attribute, trimmed; null when absent, unreadable or empty. */
async function attribute(path: string): Promise<string | null> {
  const text = (await readCapped(path, SMALL_FILE))?.trim();
  return text ? text : null;
}

/** Names in a directory (never paths: joined under their own root only), sorted; [] if absent. */
async function entries(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).sort();
}

/** uname's machine name for Node's `process.arch`. */
export function ipaArchitecture(arch: string, byteOrder: 'BE' | 'LE'): string {
  if (arch === 'x64') return 'x86_64';
  if (arch === 'arm64') return 'aarch64';
  if (arch === 'ppc64') return byteOrder === 'LE' ? 'ppc64le' : 'ppc64';
  return arch;
}

/** The CPU facts of a /proc/cpuinfo text (x86, Arm; others give what keys they share). */
export function parseCpuinfo(text: string, architecture: string): InventoryCpu {
  const first = new Map<string, string>();
  const sockets = new Set<string>();
  let count = 0;
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (/^processor( \d+)?$/.test(key)) count += 1;
    if (key === 'physical id') sockets.add(value);
    if (!first.has(key)) first.set(key, value);
  }
  const flags = first.get('flags') ?? first.get('Features') ?? '';
  return {
    model_name: first.get('model name') || null,
    frequency: first.get('cpu MHz') || null,
    count: Math.max(count, 1),
    architecture,
    flags: flags.split(/\s+/).filter((f) => f !== ''),
    ...(sockets.size > 0 ? { socket_count: sockets.size } : {}),
  };
}

/** The MAC of `BOOTIF=` (last one wins, as for any kernel parameter), or null if malformed. */
export function pxeInterface(cmdline: string): string | null {
  let bootif: string | undefined;
  for (const word of cmdline.trim().split(/\s+/)) {
    if (word.startsWith('BOOTIF=')) bootif = word.slice('BOOTIF='.length);
  }
  const mac = bootif?.toLowerCase();
  if (mac === undefined) return null;
  if (/^01-([0-9a-f]{2}-){5}[0-9a-f]{2}$/.test(mac)) return mac.slice(3).replace(/-/g, ':');
  return MAC.test(mac) ? mac : null;
}

/** Per interface: its first IPv4, its first global IPv6 else its first link-local one (no scope). */
export function addressesByInterface(nets: NodeJS.Dict<NetworkInterfaceInfo[]>): Record<string, InterfaceAddresses> {
  return Object.fromEntries(
    Object.entries(nets).map(([name, infos = []]) => {
      const v6 = infos.filter((i) => i.family === 'IPv6');
      const ipv6 = v6.find((i) => !/^fe[89ab][0-9a-f]:/i.test(i.address)) ?? v6[0];
      const ipv4 = infos.find((i) => i.family === 'IPv4')?.address ?? null;
      return [name, { ipv4, ipv6: ipv6 ? ipv6.address.replace(/%.*$/, '') : null }];
    }),
  );
}

async function memory(sysRoot: string, procRoot: string): Promise<InventoryMemory> {
  const meminfo = (await readCapped(join(procRoot, 'meminfo'), 64 * 1024)) ?? '';
  const total = Number(/^MemTotal:\s+(\d+)\s*kB/m.exec(meminfo)?.[1] ?? 0) * 1024;
  const dir = join(sysRoot, 'devices', 'system', 'memory');
  const blockSize = parseInt((await attribute(join(dir, 'block_size_bytes'))) ?? '', 16);
  let online = 0;
  if (blockSize > 0) {
    for (const name of await entries(dir)) {
      if (/^memory\d+$/.test(name) && (await attribute(join(dir, name, 'state'))) === 'online') online += 1;
    }
  }
  const physical_mb = online > 0 ? Math.round((online * blockSize) / MIB) : Math.ceil(total / MIB);
  return { total, physical_mb };
}

async function interfaces(sysRoot: string, addresses: Record<string, InterfaceAddresses>): Promise<InventoryInterface[]> {
  const dir = join(sysRoot, 'class', 'net');
  const result: InventoryInterface[] = [];
  for (const name of await entries(dir)) {
    if (name === 'lo' || (await attribute(join(dir, name, 'type'))) !== '1') continue;
    const mac = (await attribute(join(dir, name, 'address')))?.toLowerCase() ?? '';
    if (!MAC.test(mac) || mac === '00:00:00:00:00:00') continue;
    // hasOwn: an interface may be called `__proto__` or `constructor`.
    const address = Object.hasOwn(addresses, name) ? addresses[name] : undefined;
    const speed = Number((await attribute(join(dir, name, 'speed'))) ?? NaN);
    result.push({
      name,
      mac_address: mac,
      ipv4_address: address?.ipv4 || null,
      ipv6_address: address?.ipv6?.replace(/%.*$/, '') || null,
      has_carrier: (await attribute(join(dir, name, 'carrier'))) === '1',
      lldp: null,
      vendor: await attribute(join(dir, name, 'device', 'vendor')),
      product: await attribute(join(dir, name, 'device', 'device')),
      client_id: null,
      biosdevname: null,
      speed_mbps: Number.isSafeInteger(speed) && speed >= 0 ? speed : null,
    });
  }
  return result;
}

async function systemVendor(sysRoot: string): Promise<InventorySystemVendor> {
  const dmi = async (field: string) => (await attribute(join(sysRoot, 'class', 'dmi', 'id', field))) ?? '';
  return {
    product_name: await dmi('product_name'),
    serial_number: await dmi('product_serial'),
    manufacturer: await dmi('sys_vendor'),
    firmware: { vendor: await dmi('bios_vendor'), version: await dmi('bios_version'), build_date: await dmi('bios_date') },
  };
}

/** Reads the whole inventory. Throws only what the block device scan throws. */
export async function collectInventory(options: InventoryOptions = {}): Promise<Inventory> {
  const sysRoot = options.sysRoot ?? '/sys';
  const procRoot = options.procRoot ?? '/proc';
  const devRoot = options.devRoot ?? '/dev';
  const cpuinfo = (await readCapped(join(procRoot, 'cpuinfo'), BIG_FILE)) ?? '';
  // Cut at the cap: drop the partial last line rather than read half a value.
  const whole = cpuinfo.length >= BIG_FILE ? cpuinfo.slice(0, cpuinfo.lastIndexOf('\n') + 1) : cpuinfo;
  const cmdline = options.cmdline ?? (await readCapped(join(procRoot, 'cmdline'), 64 * 1024)) ?? '';
  const efi = await stat(join(sysRoot, 'firmware', 'efi')).then((s) => s.isDirectory(), () => false);
  const nics = await interfaces(sysRoot, (options.addresses ?? (() => addressesByInterface(networkInterfaces())))());
  const lldp = options.lldp ? await collectLldp(nics.map((nic) => nic.name), options.lldp) : null;
  for (const nic of nics) nic.lldp = lldp?.[nic.name] ?? null;
  return {
    cpu: parseCpuinfo(whole, ipaArchitecture(process.arch, endianness())),
    memory: await memory(sysRoot, procRoot),
    disks: await listBlockDevices({ sysRoot, devRoot }),
    interfaces: nics,
    system_vendor: await systemVendor(sysRoot),
    boot: { current_boot_mode: efi ? 'uefi' : 'bios', pxe_interface: pxeInterface(cmdline) },
    hostname: hostname(),
    bmc_address: null,
    bmc_v6address: null,
    bmc_mac: null,
  };
}
