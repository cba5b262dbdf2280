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
