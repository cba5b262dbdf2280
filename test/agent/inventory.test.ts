import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { NetworkInterfaceInfo } from 'node:os';
import { endianness, hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addressesByInterface, collectInventory, ipaArchitecture, parseCpuinfo, pxeInterface } from '../../src/agent/inventory.js';
import type { InventoryOptions } from '../../src/agent/inventory.js';
import { fakeMachine } from '../helpers/fake-machine.js';

const MIB = 2 ** 20;
const DISK_BYTES = 4 * MIB;
let root: string;
let sys: string;
let proc: string;
let dev: string;

/** Writes files (relative path → content) under `dir`, each ending in a newline as sysfs does. */
async function files(dir: string, contents: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(contents)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), `${content}\n`);
  }
}

function cpu(n: number, socket: number): string {
  return [
    `processor\t: ${n}`,
    'vendor_id\t: GenuineIntel',
    'model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz',
    `cpu MHz\t\t: ${n === 0 ? '2100.000' : '3900.123'}`,
    `physical id\t: ${socket}`,
    'flags\t\t: fpu vme de pse sse4_2 avx2 ',
    '',
  ].join('\n');
}

/** Two CPUs on two sockets, 512 MiB in 128 MiB blocks, NICs of every kind, DMI, one virtio disk. */
async function x86Machine(): Promise<void> {
  await fakeMachine(root, DISK_BYTES);
  await files(proc, {
    cpuinfo: `${cpu(0, 0)}\n${cpu(1, 1)}`,
    meminfo: 'MemTotal:         500000 kB\nMemFree:          100000 kB',
    cmdline: 'initrd=deploy.initramfs ipa-api-url=http://192.0.2.1:6385 BOOTIF=01-52-54-00-12-34-56 quiet',
  });
  const memory = join(sys, 'devices', 'system', 'memory');
  await files(memory, { block_size_bytes: '8000000', auto_online_blocks: 'online', probe: '' });
  for (const [n, state] of [[0, 'online'], [1, 'online'], [2, 'online'], [3, 'online'], [4, 'offline']] as const) {
    await files(join(memory, `memory${n}`), { state });
  }
  const net = join(sys, 'class', 'net');
  await files(join(net, 'eth0'), {
    type: '1',
    address: '52:54:00:12:34:56'.toUpperCase(),
    carrier: '1',
    speed: '1000',
    'device/vendor': '0x1af4',
    'device/device': '0x1000',
  });
  await files(join(net, 'eth1'), { type: '1', address: '52:54:00:ab:cd:ef', carrier: '0', speed: '-1', 'device/vendor': '0x8086', 'device/device': '0x10d3' });
  await files(join(net, 'lo'), { type: '772', address: '00:00:00:00:00:00', carrier: '1' });
  // Type 772 under another name: left out by type, not by name.
  await files(join(net, 'lo1'), { type: '772', address: '52:54:00:00:00:01', carrier: '1' });
  await files(join(net, 'ib0'), { type: '32', address: '80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:0b:0c', carrier: '1' });
  await files(join(net, 'dummy0'), { type: '1', address: '00:00:00:00:00:00' });
  await files(join(sys, 'class', 'dmi', 'id'), {
    product_name: 'Standard PC (Q35 + ICH9, 2009)',
    product_serial: '  SN-0042  ',
    sys_vendor: 'QEMU',
    bios_vendor: 'EFI Development Kit II / OVMF',
    bios_version: '0.0.0',
    bios_date: '02/06/2015',
  });
  await mkdir(join(sys, 'firmware', 'efi', 'efivars'), { recursive: true });
}

const addresses: InventoryOptions['addresses'] = () => ({
  eth0: { ipv4: '192.0.2.10', ipv6: 'fe80::5054:ff:fe12:3456%eth0' },
  lo: { ipv4: '127.0.0.1', ipv6: '::1' },
});

const options = (extra: InventoryOptions = {}): InventoryOptions => ({ sysRoot: sys, procRoot: proc, devRoot: dev, addresses, ...extra });

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'ironring-inventory-'));
  sys = join(root, 'sys');
  proc = join(root, 'proc');
  dev = join(root, 'dev');
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('hardware inventory', () => {
  it('reads every field of IPA’s inventory from /proc and /sys', async () => {
    await x86Machine();
    expect(await collectInventory(options())).toEqual({
      cpu: {
        model_name: 'Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz',
        frequency: '2100.000',
        count: 2,
        architecture: ipaArchitecture(process.arch, endianness()),
        flags: ['fpu', 'vme', 'de', 'pse', 'sse4_2', 'avx2'],
        socket_count: 2,
      },
      memory: { total: 500000 * 1024, physical_mb: 512 },
      disks: [
        {
          name: '/dev/vda',
          size: DISK_BYTES,
          model: null,
          vendor: null,
          serial: null,
          wwn: null,
          wwn_with_extension: null,
          wwn_vendor_extension: null,
          rotational: true,
          hctl: null,
          by_path: null,
          logical_sectors: null,
          physical_sectors: null,
          removable: false,
        },
      ],
      interfaces: [
        {
          name: 'eth0',
          mac_address: '52:54:00:12:34:56',
          ipv4_address: '192.0.2.10',
          ipv6_address: 'fe80::5054:ff:fe12:3456',
          has_carrier: true,
          lldp: null,
          vendor: '0x1af4',
          product: '0x1000',
          client_id: null,
          biosdevname: null,
          speed_mbps: 1000,
        },
        {
          name: 'eth1',
          mac_address: '52:54:00:ab:cd:ef',
          ipv4_address: null,
          ipv6_address: null,
          has_carrier: false,
          lldp: null,
          vendor: '0x8086',
          product: '0x10d3',
          client_id: null,
          biosdevname: null,
          speed_mbps: null,
        },
      ],
      system_vendor: {
        product_name: 'Standard PC (Q35 + ICH9, 2009)',
        serial_number: 'SN-0042',
        manufacturer: 'QEMU',
        firmware: { vendor: 'EFI Development Kit II / OVMF', version: '0.0.0', build_date: '02/06/2015' },
      },
      boot: { current_boot_mode: 'uefi', pxe_interface: '52:54:00:12:34:56' },
      hostname: hostname(),
      bmc_address: null,
      bmc_v6address: null,
      bmc_mac: null,
    });
  });

  it('listens for LLDP on every interface it lists when asked, and reports what each heard', async () => {
    await x86Machine();
    const asked: string[][] = [];
    const frame = Buffer.from('0180c200000e02000000000188cc020704aabbccddeeff0000', 'hex');
    const { interfaces } = await collectInventory(
      options({ lldp: { timeoutSeconds: 1, listen: async (names) => (asked.push(names), names.map((n) => ({ frame: n === 'eth0' ? frame : null, error: null }))) } }),
    );
    expect(asked).toEqual([['eth0', 'eth1']]);
    expect(interfaces.map((i) => [i.name, i.lldp])).toEqual([['eth0', [[1, '04aabbccddeeff'], [0, '']]], ['eth1', []]]);
  });

  it('boots bios without /sys/firmware/efi, and takes iPXE’s BOOTIF=${mac} form from the given command line', async () => {
    await x86Machine();
    await rm(join(sys, 'firmware'), { recursive: true });
    const { boot } = await collectInventory(options({ cmdline: 'ipa-api-url=http://x BOOTIF=52:54:00:AB:CD:EF\n' }));
    expect(boot).toEqual({ current_boot_mode: 'bios', pxe_interface: '52:54:00:ab:cd:ef' });
  });

  it('gives empty strings for DMI fields when /sys/class/dmi is missing, or one is unreadable', async () => {
    await x86Machine();
    // A directory in place of the file: reading fails as product_serial does for non-root.
    await rm(join(sys, 'class', 'dmi', 'id', 'product_serial'));
    await mkdir(join(sys, 'class', 'dmi', 'id', 'product_serial'));
    expect((await collectInventory(options())).system_vendor).toMatchObject({ serial_number: '', manufacturer: 'QEMU' });
    await rm(join(sys, 'class', 'dmi'), { recursive: true });
    expect((await collectInventory(options())).system_vendor).toEqual({
      product_name: '',
      serial_number: '',
      manufacturer: '',
      firmware: { vendor: '', version: '', build_date: '' },
    });
  });

  it('reports no PXE interface for a garbage or absent BOOTIF', async () => {
    await x86Machine();
    const pxe = async (cmdline: string) => (await collectInventory(options({ cmdline }))).boot.pxe_interface;
    expect(await pxe('BOOTIF=garbage')).toBeNull();
    expect(await pxe('quiet')).toBeNull();
    expect(pxeInterface('BOOTIF=')).toBeNull();
    expect(pxeInterface('BOOTIF=02-52-54-00-12-34-56')).toBeNull();
    expect(pxeInterface('BOOTIF=52-54-00-12-34-56')).toBeNull();
    expect(pxeInterface('BOOTIF=52:54:00:12:34')).toBeNull();
    expect(pxeInterface('BOOTIF=01-52-54-00-12-34-56-78')).toBeNull();
    // The last BOOTIF wins, as for any kernel parameter.
    expect(pxeInterface('BOOTIF=01-52-54-00-12-34-56 BOOTIF=01-52-54-00-AA-BB-CC')).toBe('52:54:00:aa:bb:cc');
  });

  it('falls back to MemTotal rounded up to a MiB without memory block sysfs', async () => {
    await x86Machine();
    await rm(join(sys, 'devices', 'system', 'memory'), { recursive: true });
    expect((await collectInventory(options())).memory).toEqual({ total: 500000 * 1024, physical_mb: Math.ceil((500000 * 1024) / MIB) });
  });

  it('does not fail without cpuinfo, meminfo or cmdline: one CPU, no memory, no PXE interface', async () => {
    await x86Machine();
    await rm(proc, { recursive: true });
    await rm(join(sys, 'devices'), { recursive: true });
    const inventory = await collectInventory(options());
    expect(inventory.cpu).toEqual({ model_name: null, frequency: null, count: 1, architecture: inventory.cpu.architecture, flags: [] });
    expect(inventory.memory).toEqual({ total: 0, physical_mb: 0 });
    expect(inventory.boot.pxe_interface).toBeNull();
  });

  it('passes on the block device scan’s error', async () => {
    await x86Machine();
    await rm(join(sys, 'block'), { recursive: true });
    await expect(collectInventory(options())).rejects.toThrow(/ENOENT/);
  });

  it('reads at most 1 MiB of /proc/cpuinfo, dropping the cut line', async () => {
    await x86Machine();
    const entry = cpu(0, 0);
    const many = Array.from({ length: Math.ceil((2 * MIB) / entry.length) }, (_, n) => cpu(n, n % 4)).join('\n');
    await writeFile(join(proc, 'cpuinfo'), many);
    const { cpu: info } = await collectInventory(options());
    const entries = many.slice(0, MIB).split('processor').length - 1;
    expect(info.count).toBeGreaterThan(100);
    expect(info.count).toBeLessThanOrEqual(entries);
    expect(info.socket_count).toBe(4);
  });

  it('looks an interface called __proto__ up as its own name', async () => {
    await x86Machine();
    await files(join(sys, 'class', 'net', '__proto__'), { type: '1', address: '52:54:00:00:00:99' });
    const { interfaces } = await collectInventory(options({ addresses: () => JSON.parse('{"__proto__": {"ipv4": "192.0.2.99"}}') as Record<string, { ipv4: string }> }));
    expect(interfaces.map((i) => [i.name, i.ipv4_address])).toEqual([
      ['__proto__', '192.0.2.99'],
      ['eth0', null],
      ['eth1', null],
    ]);
  });
});

describe('inventory parts', () => {
  it('reads Arm cpuinfo: Features as flags, no model name or sockets', () => {
    const arm = 'processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes\nCPU implementer\t: 0x41\n\nprocessor\t: 1\nFeatures\t: fp asimd\n';
    expect(parseCpuinfo(arm, 'aarch64')).toEqual({ model_name: null, frequency: null, count: 2, architecture: 'aarch64', flags: ['fp', 'asimd', 'evtstrm', 'aes'] });
  });

  it('spells the architecture as uname does', () => {
    expect(ipaArchitecture('x64', 'LE')).toBe('x86_64');
    expect(ipaArchitecture('arm64', 'LE')).toBe('aarch64');
    expect(ipaArchitecture('ppc64', 'LE')).toBe('ppc64le');
    expect(ipaArchitecture('ppc64', 'BE')).toBe('ppc64');
    expect(ipaArchitecture('s390x', 'BE')).toBe('s390x');
    expect(ipaArchitecture('riscv64', 'LE')).toBe('riscv64');
  });

  it('prefers a global IPv6 address to a link-local one, and drops the scope of a link-local one', () => {
    const info = (family: 'IPv4' | 'IPv6', address: string): NetworkInterfaceInfo =>
      ({ family, address, netmask: '', mac: '52:54:00:12:34:56', internal: false, cidr: null, ...(family === 'IPv6' ? { scopeid: 0 } : {}) }) as NetworkInterfaceInfo;
    expect(
      addressesByInterface({
        eth0: [info('IPv6', 'fe80::1'), info('IPv4', '192.0.2.10'), info('IPv6', '2001:db8::10'), info('IPv4', '192.0.2.11')],
        eth1: [info('IPv6', 'fe80::2%eth1')],
        eth2: [],
        eth3: undefined,
      }),
    ).toEqual({
      eth0: { ipv4: '192.0.2.10', ipv6: '2001:db8::10' },
      eth1: { ipv4: null, ipv6: 'fe80::2' },
      eth2: { ipv4: null, ipv6: null },
      eth3: { ipv4: null, ipv6: null },
    });
  });
});
