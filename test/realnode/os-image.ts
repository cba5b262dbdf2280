/**
 * A whole-disk raw image with an operating system on it, for the direct deploy scenarios — what
 * the issue asks the VM to boot from its disk: an MBR with syslinux's boot code and one bootable
 * FAT partition (from sector 2048) holding syslinux, the cloud kernel and a busybox initramfs whose
 * `/init` prints `OS-BOOTED <token>` and then the `user_data` of the `config-2` file system it finds
 * by label, as cloud-init looks for it: `OS-USER-DATA: <line>` per line, or `OS-CONFIG-DRIVE none`.
 *
 * The token is on the kernel command line (syslinux.cfg), so the initramfs is built once and cached
 * (its key: /init, busybox, the kernel package) and each image costs a mkfs.fat, an mcopy and a
 * syslinux install (Debian's dosfstools, mtools, syslinux, syslinux-common).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { collectModules } from '../../src/ramdisk/build.js';
import { ESP_TYPE, gptDisk } from '../helpers/gpt.js';
import { BUSYBOX, cachedBuild, defaultCacheRoot, kernelAsset, resolveKernelPackage } from './assets.js';

/** What the image's /init prints first, then its token. */
export const OS_MARKER = 'OS-BOOTED';
/** The prefix of each user_data line it prints. */
export const USER_DATA_PREFIX = 'OS-USER-DATA:';

/** Modules the OS needs from the cloud kernel to see its disk and read an ISO 9660 config drive. */
const OS_MODULES = ['virtio_pci', 'virtio_blk', 'isofs'];

export const OS_INIT = `#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null
for pass in 1 2; do for m in $(cat /etc/modules); do grep -q "^$m " /proc/modules || insmod /lib/modules/$m.ko 2>/dev/null; done; done
token=
for w in $(cat /proc/cmdline); do case "$w" in ironring.os_token=*) token=\${w#*=} ;; esac; done
echo "${OS_MARKER} $token"
# The config drive as cloud-init finds it: the block device whose file system is labelled
# config-2 — busybox's findfs, else the ISO 9660 volume identifier read straight off each device.
drive=
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  drive=$(findfs LABEL=config-2 2>/dev/null)
  [ -n "$drive" ] && break
  for d in /sys/class/block/*; do
    n=\${d##*/}
    if [ "$(dd if=/dev/$n bs=1 skip=32808 count=8 2>/dev/null)" = config-2 ]; then drive=/dev/$n; break; fi
  done
  [ -n "$drive" ] && break
  sleep 1
done
mkdir -p /mnt
if [ -n "$drive" ] && mount -t iso9660 -o ro "$drive" /mnt; then
  echo "OS-CONFIG-DRIVE $drive"
  sed "s/^/${USER_DATA_PREFIX} /" /mnt/openstack/latest/user_data
else
  echo "OS-CONFIG-DRIVE none"
fi
while true; do sleep 60; done
`;

function run(command: string, args: readonly string[], cwd?: string): string {
  const res = spawnSync(command, [...args], { cwd, encoding: 'utf8', timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
  if (res.error) throw new Error(`${command} ${args.join(' ')}: ${res.error.message}`);
  if (res.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${res.status}: ${res.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return res.stdout;
}

/** The OS's initramfs (busybox, /init, the modules above), built once per kernel package. */
export function osInitrdAsset(cacheRoot = defaultCacheRoot()): string {
  const { name, version } = resolveKernelPackage();
  const key = createHash('sha256').update(OS_INIT).update(OS_MODULES.join(',')).update(`${name}=${version}`).update(readFileSync(BUSYBOX)).digest('hex').slice(0, 16);
  return cachedBuild(cacheRoot, `os-initrd-${key}`, 'initrd.gz', (dir) => {
    run('apt-get', ['download', '-q', `${name}=${version}`], dir);
    const deb = readdirSync(dir).find((f) => f.endsWith('.deb'));
    if (deb === undefined) throw new Error(`apt-get download ${name} left no .deb`);
    const tree = path.join(dir, 'tree');
    run('dpkg-deb', ['-x', path.join(dir, deb), tree]);
    const kernelVersion = readdirSync(path.join(tree, 'lib', 'modules'))[0]!;
    const root = path.join(dir, 'root');
    for (const sub of ['bin', 'dev', 'proc', 'sys', 'mnt', 'etc', 'lib/modules']) mkdirSync(path.join(root, sub), { recursive: true });
    const modules = collectModules(path.join(tree, 'lib', 'modules', kernelVersion), OS_MODULES, path.join(root, 'lib', 'modules'));
    writeFileSync(path.join(root, 'etc', 'modules'), `${modules.join('\n')}\n`);
    writeFileSync(path.join(root, 'bin', 'busybox'), readFileSync(BUSYBOX), { mode: 0o755 });
    writeFileSync(path.join(root, 'init'), OS_INIT, { mode: 0o755 });
    run('/bin/sh', ['-c', `set -e; cd root; find . | ${BUSYBOX} cpio -o -H newc 2>/dev/null | gzip -9 > ../initrd.gz.part; mv ../initrd.gz.part ../initrd.gz`], dir);
    rmSync(root, { recursive: true, force: true });
    rmSync(tree, { recursive: true, force: true });
    rmSync(path.join(dir, deb));
    if (statSync(path.join(dir, 'initrd.gz')).size < 256 * 1024) throw new Error('the OS initramfs is too small: busybox cpio or gzip failed');
  });
}

/**
 * What both OS images are built from: the token checked, the cloud kernel and the OS initramfs, and
 * a scratch directory beside `file` (removed afterwards) for `build`.
 */
function buildOsImage(file: string, token: string, cacheRoot: string, build: (parts: { kernel: string; initrd: string; work: string }) => Buffer): Buffer {
  if (!/^[A-Za-z0-9-]{1,64}$/.test(token)) throw new Error('token: letters, digits and dashes');
  const kernel = kernelAsset(cacheRoot).path;
  const initrd = osInitrdAsset(cacheRoot);
  const work = `${file}.d`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    return build({ kernel, initrd, work });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** syslinux's MBR boot code (syslinux-common). */
const SYSLINUX_MBR = '/usr/lib/syslinux/mbr/mbr.bin';
const PARTITION_START = 2048;

/**
 * Builds the OS image for `token` into `file` (raw, `partitionMiB` + 1 MiB bytes) and returns its
 * bytes. Needs dosfstools, mtools, syslinux and syslinux-common.
 */
export function osDiskImage(file: string, token: string, partitionMiB = 24, cacheRoot = defaultCacheRoot()): Buffer {
  return buildOsImage(file, token, cacheRoot, ({ kernel, initrd, work }) => {
    const fat = path.join(work, 'fat.img');
    // -h: the partition's first sector, which syslinux's boot sector adds to its own sector numbers.
    run('mkfs.fat', ['-C', '-n', 'IRONOS', '-h', String(PARTITION_START), fat, String(partitionMiB * 1024)]);
    writeFileSync(path.join(work, 'syslinux.cfg'), [
      'SERIAL 0 115200', 'DEFAULT os', 'PROMPT 0', 'TIMEOUT 0', 'LABEL os', '  KERNEL /vmlinuz', '  INITRD /initrd.gz',
      `  APPEND console=ttyS0 ironring.os_token=${token}`, '',
    ].join('\n'));
    copyFileSync(kernel, path.join(work, 'vmlinuz'));
    copyFileSync(initrd, path.join(work, 'initrd.gz'));
    run('mcopy', ['-i', fat, path.join(work, 'syslinux.cfg'), path.join(work, 'vmlinuz'), path.join(work, 'initrd.gz'), '::/']);
    run('syslinux', ['--install', fat]);

    const image = Buffer.alloc(PARTITION_START * 512 + partitionMiB * 1024 * 1024);
    readFileSync(SYSLINUX_MBR).subarray(0, 440).copy(image, 0);
    image.writeUInt32LE(0x534f4e49, 440); // disk signature "INOS"
    const entry = 446;
    image[entry] = 0x80; // active: syslinux's MBR boots this partition
    image.fill(0xfe, entry + 1, entry + 2); // CHS fields saying "use LBA"
    image.fill(0xff, entry + 2, entry + 4);
    image[entry + 4] = 0x0e; // FAT16, LBA
    image.fill(0xfe, entry + 5, entry + 6);
    image.fill(0xff, entry + 6, entry + 8);
    image.writeUInt32LE(PARTITION_START, entry + 8);
    image.writeUInt32LE(partitionMiB * 2048, entry + 12);
    image[510] = 0x55;
    image[511] = 0xaa;
    readFileSync(fat).copy(image, PARTITION_START * 512);
    writeFileSync(file, image);
    return image;
  });
}

/** systemd's EFI stub (systemd-boot-efi): with the kernel, initramfs and command line added as sections, one EFI program. */
export const EFI_STUB = '/usr/lib/systemd/boot/efi/linuxx64.efi.stub';

/**
 * The UEFI variant of the OS image: a GPT disk whose one partition, an EFI system partition (FAT,
 * from sector 2048), holds only the loader at `\EFI\<loader.dir>\<loader.name>` — by default
 * `\EFI\BOOT\BOOTX64.EFI`, the path UEFI firmware boots from a disk with no boot entry of its own;
 * elsewhere (`\EFI\ironring\grubx64.efi`) it boots only through an entry in the firmware's
 * variables — which is a unified kernel image: systemd's EFI stub with the
 * cloud kernel, the same initramfs as the BIOS image and `console=ttyS0 ironring.os_token=<token>`
 * as sections (objcopy). Returns the image's bytes (`espMiB` + 2 MiB). Needs systemd-boot-efi,
 * binutils, dosfstools and mtools.
 */
export function osUefiDiskImage(file: string, token: string, loader: { dir: string; name: string } = { dir: 'BOOT', name: 'BOOTX64.EFI' }, espMiB = 40, cacheRoot = defaultCacheRoot()): Buffer {
  if (!/^[A-Za-z0-9_-]{1,16}$/.test(loader.dir) || !/^[A-Za-z0-9_-]{1,16}\.(efi|EFI)$/.test(loader.name)) throw new Error('loader: a plain directory and .efi file name');
  return buildOsImage(file, token, cacheRoot, ({ kernel, initrd, work }) => {
    writeFileSync(path.join(work, 'cmdline'), `console=ttyS0 ironring.os_token=${token}`);
    writeFileSync(path.join(work, 'os-release'), 'NAME="ironring test OS"\nID=ironring-test\n');
    const uki = path.join(work, 'BOOTX64.EFI');
    // Section addresses as systemd's documentation gives them for this stub: apart enough that the
    // kernel (about 8 MiB) does not reach the initramfs.
    run('objcopy', [
      '--add-section', `.osrel=${path.join(work, 'os-release')}`, '--change-section-vma', '.osrel=0x20000',
      '--add-section', `.cmdline=${path.join(work, 'cmdline')}`, '--change-section-vma', '.cmdline=0x30000',
      '--add-section', `.linux=${kernel}`, '--change-section-vma', '.linux=0x2000000',
      '--add-section', `.initrd=${initrd}`, '--change-section-vma', '.initrd=0x3000000',
      EFI_STUB, uki,
    ]);
    const fat = path.join(work, 'esp.img');
    run('mkfs.fat', ['-C', '-n', 'ESP', fat, String(espMiB * 1024)]);
    run('mmd', ['-i', fat, '::/EFI', `::/EFI/${loader.dir}`]);
    run('mcopy', ['-i', fat, uki, `::/EFI/${loader.dir}/${loader.name}`]);
    const image = gptDisk((espMiB + 2) * 1024 * 1024, [{ start: PARTITION_START, sectors: espMiB * 2048, type: ESP_TYPE, name: 'EFI system', content: readFileSync(fat) }]);
    writeFileSync(file, image);
    return image;
  });
}
