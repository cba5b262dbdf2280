import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listBlockDevices, scanBlockDevices, wwnFields } from '../../../src/agent/disk/block-devices.js';
import { DeviceNotFound } from '../../../src/agent/disk/errors.js';
import { chooseRootDevice } from '../../../src/agent/disk/root-device-hints.js';

const GIB = 2 ** 30;
let root: string;
let sys: string;
let dev: string;

/** One entry of the fake `/sys/block`: file contents by path relative to `/sys/block/<kname>`. */
async function disk(kname: string, files: Record<string, string | Buffer>, scsiAddress?: string): Promise<void> {
  const dir = join(sys, 'block', kname);
  await mkdir(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), typeof content === 'string' ? `${content}\n` : content);
  }
  if (scsiAddress) await mkdir(join(dir, 'device', 'scsi_device', scsiAddress), { recursive: true });
}

async function byPath(link: string, target: string): Promise<void> {
  await mkdir(join(dev, 'disk', 'by-path'), { recursive: true });
  await symlink(`../../${target}`, join(dev, 'disk', 'by-path', link));
}

/** SCSI VPD page 0x80 as the kernel exposes it: header, length, ASCII serial padded with blanks. */
function vpd80(serial: string): Buffer {
  const body = Buffer.from(`${serial}    `, 'latin1');
  return Buffer.concat([Buffer.from([0, 0x80, 0, body.length]), body]);
}

const sectors = (bytes: number) => String(bytes / 512);

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'ironring-sysfs-'));
  sys = join(root, 'sys');
  dev = join(root, 'dev');
  await mkdir(join(sys, 'block'), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A machine with one of each kind the brief lists, plus the kinds IPA never deploys to. */
async function mixedMachine(): Promise<void> {
  await disk('nvme0n1', {
    size: sectors(500 * GIB),
    'queue/rotational': '0',
    'queue/logical_block_size': '512',
    'queue/physical_block_size': '4096',
    'device/model': 'Samsung SSD 970 EVO Plus 500GB           ',
    'device/serial': '   S4EVNX0N123456   ',
    wwid: 'eui.0025385b01234567',
    removable: '0',
    ro: '0',
  });
  await byPath('pci-0000:01:00.0-nvme-1', 'nvme0n1');
  await disk(
    'sda',
    {
      size: '1953525168',
      'queue/rotational': '1',
      'device/model': 'ST1000DM010-2EP1',
      'device/vendor': 'ATA     ',
      'device/vpd_pg80': vpd80('Z9A1B2C3'),
      'device/wwid': 'naa.5000c500a1b2c3d4',
      'device/type': '0',
      removable: '0',
      ro: '0',
    },
    '0:0:0:0',
  );
  await byPath('pci-0000:00:17.0-ata-1.0', 'sda');
  await byPath('pci-0000:00:17.0-ata-1', 'sda');
  await byPath('pci-0000:00:17.0-ata-1-part1', 'sda1');
  await disk('vda', { size: sectors(20 * GIB), 'queue/rotational': '1', serial: 'ironring-disk0', 'device/vendor': '0x1af4', removable: '0', ro: '0' });
  await byPath('pci-0000:00:05.0', 'vda');
  await disk('sdb', { size: sectors(2 * GIB), 'queue/rotational': '1', 'device/model': 'Virtual Floppy', ro: '1', removable: '1' }, '1:0:0:0');
  await disk(
    'sdc',
    { size: sectors(16 * GIB), 'queue/rotational': '1', 'device/model': 'Cruzer Blade', 'device/vendor': 'SanDisk', removable: '1', ro: '0' },
    '6:0:0:0',
  );
  await byPath('pci-0000:00:14.0-usb-0:1:1.0-scsi-0:0:0:0', 'sdc');
  await disk('vdb', { size: sectors(1 * GIB), 'queue/rotational': '1', ro: '0' });
  await disk('sdd', { size: '0', ro: '0' }, '2:0:0:0');
  await disk('sr0', { size: '2097152', 'device/type': '5', ro: '0' }, '3:0:0:0');
  await disk('sr1', { size: '2097152', ro: '0' });
  await disk('loop0', { size: sectors(8 * GIB), ro: '0' });
  await disk('ram0', { size: sectors(8 * GIB), ro: '0' });
  await disk('zram0', { size: sectors(8 * GIB), ro: '0' });
  await disk('dm-0', { size: sectors(8 * GIB), ro: '0' });
  await disk('fd0', { size: '8', ro: '0' });
  await disk('nvme0c0n1', { size: sectors(500 * GIB), hidden: '1', ro: '0' });
}

describe('block devices from sysfs', () => {
  it('lists NVMe, SATA, virtio and USB disks with IPA-shaped records, in kernel name order', async () => {
    await mixedMachine();
    const devices = await listBlockDevices({ sysRoot: sys, devRoot: dev });
    expect(devices.map((d) => d.name)).toEqual(['/dev/nvme0n1', '/dev/sda', '/dev/sdc', '/dev/vda', '/dev/vdb']);
    expect(devices[0]).toEqual({
      name: '/dev/nvme0n1',
      size: 500 * GIB,
      model: 'Samsung SSD 970 EVO Plus 500GB',
      vendor: null,
      serial: 'S4EVNX0N123456',
      wwn: 'eui.0025385b01234567',
      wwn_with_extension: 'eui.0025385b01234567',
      wwn_vendor_extension: null,
      rotational: false,
      hctl: null,
      by_path: '/dev/disk/by-path/pci-0000:01:00.0-nvme-1',
      logical_sectors: 512,
      physical_sectors: 4096,
      removable: false,
    });
    const sda = devices[1]!;
    expect(sda).toMatchObject({
      size: 1953525168 * 512,
      model: 'ST1000DM010-2EP1',
      vendor: 'ATA',
      serial: 'Z9A1B2C3',
      wwn: '0x5000c500a1b2c3d4',
      rotational: true,
      hctl: '0:0:0:0',
      // Two links name sda: the first by name wins; the partition's link is not the disk's.
      by_path: '/dev/disk/by-path/pci-0000:00:17.0-ata-1',
    });
    expect(devices[3]).toMatchObject({ name: '/dev/vda', serial: 'ironring-disk0', vendor: '0x1af4', model: null, hctl: null, by_path: '/dev/disk/by-path/pci-0000:00:05.0' });
    expect(devices[2]).toMatchObject({ name: '/dev/sdc', removable: true, vendor: 'SanDisk', hctl: '6:0:0:0' });
  });

  it('leaves out read-only, empty, hidden, RAM, zram, loop, optical, floppy and device-mapper devices, saying why', async () => {
    await mixedMachine();
    const { skipped } = await scanBlockDevices({ sysRoot: sys, devRoot: dev });
    expect(Object.fromEntries(skipped.map((s) => [s.name, s.reason]))).toEqual({
      '/dev/dm-0': 'device-mapper volume',
      '/dev/fd0': 'floppy',
      '/dev/loop0': 'loop device',
      '/dev/nvme0c0n1': 'hidden (NVMe multipath path)',
      '/dev/ram0': 'RAM disk',
      '/dev/sdb': 'read-only',
      '/dev/sdd': 'empty (size 0)',
      '/dev/sr0': 'optical drive',
      '/dev/sr1': 'optical drive',
      '/dev/zram0': 'zram device',
    });
  });

  it('reads without /dev/disk/by-path (a ramdisk without udev): by_path is null', async () => {
    await disk('vda', { size: sectors(20 * GIB), 'queue/rotational': '1', ro: '0' });
    const [vda] = await listBlockDevices({ sysRoot: sys, devRoot: join(root, 'no-dev') });
    expect(vda).toMatchObject({ name: '/dev/vda', by_path: null, serial: null, wwn: null, rotational: true });
  });

  it('splits an NAA 6 identifier into WWN and vendor extension, as udev does', () => {
    expect(wwnFields('naa.600508b1001c4d5e9f8a7b6c5d4e3f21')).toEqual({
      wwn: '0x600508b1001c4d5e',
      wwn_with_extension: '0x600508b1001c4d5e9f8a7b6c5d4e3f21',
      wwn_vendor_extension: '0x9f8a7b6c5d4e3f21',
    });
    expect(wwnFields('naa.5000C500A1B2C3D4')).toEqual({ wwn: '0x5000c500a1b2c3d4', wwn_with_extension: '0x5000c500a1b2c3d4', wwn_vendor_extension: null });
    expect(wwnFields('t10.ATA     QEMU HARDDISK')).toEqual({ wwn: null, wwn_with_extension: null, wwn_vendor_extension: null });
  });
});

describe('default root device (no hints)', () => {
  it("picks the smallest disk of at least 4 GiB, as IPA does — here the USB stick, which IPA keeps too", async () => {
    await mixedMachine();
    const { devices, skipped } = await scanBlockDevices({ sysRoot: sys, devRoot: dev });
    expect(chooseRootDevice(devices, undefined, { skipped }).name).toBe('/dev/sdc');
    expect(chooseRootDevice(devices, {}).name).toBe('/dev/sdc');
  });

  it('breaks a size tie by name', async () => {
    await disk('vdb', { size: sectors(10 * GIB), ro: '0' });
    await disk('vda', { size: sectors(10 * GIB), ro: '0' });
    expect(chooseRootDevice(await listBlockDevices({ sysRoot: sys, devRoot: dev }), null).name).toBe('/dev/vda');
  });

  it('fails when every disk is under 4 GiB, listing what it saw and what it left out', async () => {
    await disk('vdb', { size: sectors(1 * GIB), ro: '0', serial: 'tiny' });
    await disk('sr0', { size: '2097152', ro: '0' });
    const { devices, skipped } = await scanBlockDevices({ sysRoot: sys, devRoot: dev });
    expect(() => chooseRootDevice(devices, undefined, { skipped })).toThrow(DeviceNotFound);
    expect(() => chooseRootDevice(devices, undefined, { skipped })).toThrow(
      'no root device hints were given and no disk is at least 4 GiB; seen: /dev/vdb (1 GiB, serial "tiny", rotational false); not eligible: /dev/sr0 (optical drive)',
    );
  });
});
