/**
 * What a real-node test boots: the Debian cloud kernel (downloaded with `apt-get download`, not
 * installed) and a busybox initramfs whose /init prints a marker line with the kernel command line
 * and powers the machine off. Both are cached under a directory named by what they are built from
 * (the kernel package's name and version; a digest of /init and busybox), so reruns cost nothing,
 * and built in a private temporary directory renamed into place, so two runs racing to build the
 * same asset both end with a complete one.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildRamdisk, lldpAddon, RAMDISK_INIT, UDHCPC_SCRIPT } from '../../src/ramdisk/build.js';

/** The line /init prints; the rest of the line is the kernel command line. */
export const MARKER = 'NODE-BOOTED';

/** A kernel parameter that keeps the machine running after the marker (to see a power off from outside). */
export const HOLD_PARAM = 'ironring.hold';

/**
 * /init of the ramdisk: mounts what `cat /proc/cmdline` needs, prints the marker, powers off — or,
 * with {@link HOLD_PARAM} on the command line, stays up until powered off.
 */
export const INIT_SCRIPT = `#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null
echo "${MARKER} cmdline=$(cat /proc/cmdline)"
if grep -qw ${HOLD_PARAM} /proc/cmdline; then while true; do sleep 60; done; fi
poweroff -f
`;

export const BUSYBOX = '/bin/busybox';
const KERNEL_META_PACKAGE = 'linux-image-cloud-amd64';

/** A built file and its checksum in the form instance_info wants (`sha256:<hex>`). */
export interface Asset {
  path: string;
  checksum: string;
}

export interface BootAssets {
  /** The directory every asset lives under (for `[conductor] file_url_allowed_paths`). */
  cacheRoot: string;
  kernel: Asset;
  initrd: Asset;
}

/** $XDG_CACHE_HOME/ironring-realnode, else /tmp/ironring-realnode-cache. */
export function defaultCacheRoot(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  return xdg !== undefined && path.isAbsolute(xdg) ? path.join(xdg, 'ironring-realnode') : '/tmp/ironring-realnode-cache';
}

function run(command: string, args: readonly string[], cwd?: string): string {
  const res = spawnSync(command, [...args], { cwd, encoding: 'utf8', timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
  if (res.error) throw new Error(`${command} ${args.join(' ')}: ${res.error.message}`);
  if (res.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${res.status}: ${res.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return res.stdout;
}

function sha256File(file: string): string {
  return `sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;
}

/**
 * Makes `<cacheRoot>/<key>/<name>` exist: when it does not, `build(tmpDir)` writes `name` into a
 * fresh directory, which is then renamed to `<key>`. Losing a race to another run (the rename finds
 * the directory there) keeps theirs: both are built from the same inputs.
 */
export function cachedBuild(cacheRoot: string, key: string, name: string, build: (dir: string) => void): string {
  if (!/^[A-Za-z0-9._+-]{1,200}$/.test(key) || key.startsWith('.')) throw new Error(`cache key ${JSON.stringify(key)} must be a plain file name`);
  const finalDir = path.join(cacheRoot, key);
  const file = path.join(finalDir, name);
  if (existsSync(file)) return file;
  mkdirSync(cacheRoot, { recursive: true });
  const tmp = mkdtempSync(path.join(cacheRoot, `.build-${key}-`));
  try {
    build(tmp);
    chmodSync(tmp, 0o755); // mkdtemp makes it private; the cache is read by every run
    if (!existsSync(path.join(tmp, name))) throw new Error(`building ${key} did not produce ${name}`);
    try {
      renameSync(tmp, finalDir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Another run renamed its build into place first.
      if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !existsSync(file)) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return file;
}

/** `linux-image-6.1.0-NN-cloud-amd64` and its candidate version, from the package lists. */
export function resolveKernelPackage(): { name: string; version: string } {
  const depends = run('apt-cache', ['depends', KERNEL_META_PACKAGE]);
  const name = /Depends:\s*(linux-image-[0-9][^\s]*-cloud-amd64)\b/.exec(depends)?.[1];
  if (name === undefined) throw new Error(`apt-cache depends ${KERNEL_META_PACKAGE} names no linux-image-*-cloud-amd64 package (apt-get update?)`);
  const version = /^Version:\s*(\S+)$/m.exec(run('apt-cache', ['show', '--no-all-versions', name]))?.[1];
  if (version === undefined) throw new Error(`apt-cache show ${name} gives no version`);
  return { name, version };
}

/** The cloud kernel's vmlinuz, downloaded and extracted once per package version. */
export function kernelAsset(cacheRoot: string): Asset {
  const { name, version } = resolveKernelPackage();
  const file = cachedBuild(cacheRoot, `kernel-${name}-${version.replace(/[^A-Za-z0-9.+-]/g, '_')}`, 'vmlinuz', (dir) => {
    run('apt-get', ['download', '-q', `${name}=${version}`], dir);
    const deb = readdirSync(dir).find((f) => f.endsWith('.deb'));
    if (deb === undefined) throw new Error(`apt-get download ${name} left no .deb`);
    const tree = path.join(dir, 'tree');
    run('dpkg-deb', ['-x', path.join(dir, deb), tree]);
    const vmlinuz = readdirSync(path.join(tree, 'boot')).find((f) => f.startsWith('vmlinuz-'));
    if (vmlinuz === undefined) throw new Error(`${deb} has no boot/vmlinuz-*`);
    copyFileSync(path.join(tree, 'boot', vmlinuz), path.join(dir, 'vmlinuz'));
    rmSync(tree, { recursive: true, force: true });
    rmSync(path.join(dir, deb));
  });
  return { path: file, checksum: sha256File(file) };
}

/** True when the ELF file names a dynamic loader (so it cannot run alone in an initramfs). */
function isDynamic(file: string): boolean {
  return readFileSync(file).includes('/lib64/ld-linux');
}

/** The marker initramfs, rebuilt only when /init or busybox change. */
export function initrdAsset(cacheRoot: string): Asset {
  const busybox = readFileSync(BUSYBOX);
  if (isDynamic(BUSYBOX)) throw new Error(`${BUSYBOX} is dynamically linked: install busybox-static`);
  const key = createHash('sha256').update(INIT_SCRIPT).update('\0').update(busybox).digest('hex').slice(0, 16);
  const file = cachedBuild(cacheRoot, `initrd-${key}`, 'initrd.gz', (dir) => {
    const root = path.join(dir, 'root');
    for (const sub of ['bin', 'dev', 'proc', 'sys']) mkdirSync(path.join(root, sub), { recursive: true });
    writeFileSync(path.join(root, 'bin', 'busybox'), busybox, { mode: 0o755 });
    writeFileSync(path.join(root, 'init'), INIT_SCRIPT);
    chmodSync(path.join(root, 'init'), 0o755);
    // There is no cpio binary: busybox's applet packs it. dash has no pipefail: the size is checked below.
    run('/bin/sh', ['-c', `set -e; cd root; find . | ${BUSYBOX} cpio -o -H newc 2>/dev/null | gzip -9 > ../initrd.gz.part; mv ../initrd.gz.part ../initrd.gz`], dir);
    rmSync(root, { recursive: true, force: true });
    // busybox alone is ~1 MB gzipped: much less means a step of the pipeline failed.
    if (statSync(path.join(dir, 'initrd.gz')).size < 256 * 1024) throw new Error('the packed initramfs is too small: busybox cpio or gzip failed');
  });
  return { path: file, checksum: sha256File(file) };
}

/** Both assets, built or found in the cache. */
export function bootAssets(cacheRoot = defaultCacheRoot()): BootAssets {
  return { cacheRoot, kernel: kernelAsset(cacheRoot), initrd: initrdAsset(cacheRoot) };
}

/** ironring's deploy ramdisk (`ironring ramdisk build`): the kernel and the initramfs running the agent. */
export interface DeployRamdisk {
  kernel: Asset;
  initramfs: Asset;
}

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

/** Every .js file under `dir`, for the cache key. */
function jsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...jsFiles(full));
    else if (entry.name.endsWith('.js')) out.push(full);
  }
  return out.sort();
}

/**
 * The deploy ramdisk, rebuilt only when what goes into it changes: the agent's compiled modules,
 * /init, busybox, node, the kernel package. dist/ must be current (the vitest global set-up
 * rebuilds it).
 */
export function deployRamdiskAsset(cacheRoot = defaultCacheRoot()): DeployRamdisk {
  const { name, version } = resolveKernelPackage();
  const hash = createHash('sha256').update(RAMDISK_INIT).update(UDHCPC_SCRIPT).update(`${name}=${version}`).update(process.version).update(readFileSync(BUSYBOX));
  const addon = lldpAddon(DIST);
  for (const file of [...jsFiles(path.join(DIST, 'agent')), ...jsFiles(path.join(DIST, 'common')), path.join(DIST, 'ramdisk', 'build.js'), ...(existsSync(addon) ? [addon] : [])]) hash.update(file).update(readFileSync(file));
  const key = `deploy-ramdisk-${hash.digest('hex').slice(0, 16)}`;
  const initramfs = cachedBuild(cacheRoot, key, 'deploy.initramfs', (dir) => {
    buildRamdisk({ output: dir, dist: DIST, level: 6 });
  });
  const kernel = path.join(path.dirname(initramfs), 'deploy.kernel');
  return { kernel: { path: kernel, checksum: sha256File(kernel) }, initramfs: { path: initramfs, checksum: sha256File(initramfs) } };
}

/** What the disk image's boot code prints on the serial port, then the image's token. */
export const DISK_MARKER = 'DISK-BOOTED';

/**
 * A raw whole-disk image of `bytes` whose MBR boot code writes `DISK-BOOTED <token>` to the first
 * serial port (I/O 0x3f8) and halts: what the VM prints only when it booted from the disk the agent
 * wrote. One partition entry (type 0x83 from sector 2048) and the boot signature make it a
 * partitioned disk, as the agent requires; the rest is a pattern that a test can check on the disk.
 */
export function markerDiskImage(token: string, bytes = 4 * 1024 * 1024): Buffer {
  if (!/^[A-Za-z0-9-]{1,64}$/.test(token)) throw new Error('token: letters, digits and dashes');
  const image = Buffer.alloc(bytes);
  for (let i = 512; i < bytes; i += 4) image.writeUInt32LE(i ^ 0x5a5a5a5a, i);
  const message = Buffer.from(`${DISK_MARKER} ${token}\r\n\0`, 'latin1');
  // 16-bit real mode at 0:7c00. msg follows the code at offset 22.
  const code = Buffer.from([
    0xfa, //             cli
    0x31, 0xc0, //       xor ax, ax
    0x8e, 0xd8, //       mov ds, ax
    0xbe, 0x16, 0x7c, // mov si, 0x7c16
    0xba, 0xf8, 0x03, // mov dx, 0x3f8
    0xac, //             loop: lodsb
    0x84, 0xc0, //       test al, al
    0x74, 0x03, //       jz done
    0xee, //             out dx, al
    0xeb, 0xf8, //       jmp loop
    0xf4, //             done: hlt
    0xeb, 0xfd, //       jmp done
  ]);
  code.copy(image, 0);
  message.copy(image, code.length);
  image.writeUInt32LE(0x49524f4e, 440); // disk signature "IRON"
  const entry = 446;
  image[entry + 4] = 0x83;
  image.writeUInt32LE(2048, entry + 8);
  image.writeUInt32LE(bytes / 512 - 2048, entry + 12);
  image[510] = 0x55;
  image[511] = 0xaa;
  return image;
}
