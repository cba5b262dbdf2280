/**
 * Builds ironring's deploy ramdisk: a kernel and an initramfs that boot a machine into
 * `ironring agent` (src/agent/main.ts), from Debian packages — the cloud kernel (`linux-image-*-
 * cloud-amd64`, fetched with `apt-get download`, not installed), busybox-static — and this
 * machine's Node.js with its shared libraries and ironring's compiled agent.
 *
 * What the initramfs holds and why:
 * - the kernel modules for virtio (PCI, net, block, SCSI, RNG), NVMe, SATA/AHCI and common NICs that
 *   the kernel has as modules, with their dependencies, decompressed and listed in load order in
 *   `/etc/modules` (read from each module's `.modinfo`, so no depmod or modprobe is needed);
 * - `/init` (busybox sh): mounts proc, sys and devtmpfs (the cloud kernel does not mount it),
 *   loads the modules, brings every NIC up with DHCP (busybox ships no udhcpc script: one is
 *   written), and runs the agent, again whenever it exits;
 * - node, stripped (before anything else touches it), its libraries as `ldd` lists them, and the
 *   agent's compiled modules under /opt/ironring (no npm package is needed), with the LLDP
 *   listener add-on (native/lldp_listen.c) when it was built.
 * Compressed with zstd (the kernel unpacks it several times faster than xz under emulation).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IronringError } from '../common/errors.js';

/** The packet socket add-on the agent listens for LLDP with (native/lldp_listen.c). */
export const LLDP_ADDON = 'lldp_listen.node';

/** Where node-gyp put the add-on: build/Release beside the `dist/` directory. */
export function lldpAddon(dist: string): string {
  return path.join(dist, '..', 'build', 'Release', LLDP_ADDON);
}

/** The build failed; the message names the step and what to install or pass. */
export class RamdiskBuildError extends IronringError {}

/**
 * Modules the ramdisk loads when the kernel has them as modules (built-in ones need nothing): what
 * the test VM needs (virtio), efivarfs (UEFI boot entries), and the storage and NICs of common servers. The cloud kernel lacks the
 * physical-hardware ones; a generic kernel (`--kernel-deb`) has them.
 */
export const RAMDISK_MODULES = [
  'virtio_pci', 'virtio_net', 'virtio_blk', 'virtio_scsi', 'virtio_rng', 'sd_mod', 'efivarfs',
  'nvme', 'ahci', 'ata_piix', 'megaraid_sas', 'mpt3sas',
  'e1000', 'e1000e', 'igb', 'ixgbe', 'i40e', 'ice', 'bnxt_en', 'tg3', 'mlx5_core',
] as const;

export interface RamdiskBuildOptions {
  /** Directory to write `deploy.kernel` and `deploy.initramfs` into (created if missing). */
  output: string;
  /** A `linux-image-*` .deb; default: the current cloud kernel, fetched with apt-get download. */
  kernelDeb?: string;
  /** A statically linked busybox. Default /bin/busybox (Debian's busybox-static). */
  busybox?: string;
  /** The node binary to put in. Default the one running this. */
  node?: string;
  /** ironring's compiled `dist/` directory. Default the one this module was loaded from. */
  dist?: string;
  /** zstd level, 1–19. Default 12. */
  level?: number;
  log?: (line: string) => void;
}

export interface RamdiskBuildResult {
  kernel: string;
  initramfs: string;
  kernelVersion: string;
  /** Bytes of each file. */
  kernelBytes: number;
  initramfsBytes: number;
  /** Modules put in, in load order. */
  modules: string[];
  /** Whether the LLDP listener add-on went in (without it the agent reports no LLDP). */
  lldpListener: boolean;
  seconds: number;
}

function run(command: string, args: readonly string[], options: { cwd?: string; input?: Buffer } = {}): Buffer {
  const res = spawnSync(command, [...args], { cwd: options.cwd, input: options.input, maxBuffer: 512 * 1024 * 1024, timeout: 600_000 });
  if (res.error) {
    const missing = (res.error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new RamdiskBuildError(`${command}: ${missing ? 'not installed' : res.error.message}`);
  }
  if (res.status !== 0) throw new RamdiskBuildError(`${command} ${args.join(' ')} exited ${res.status}: ${res.stderr.toString().trim().split('\n').slice(-3).join(' | ')}`);
  return res.stdout;
}

/** Downloads the current cloud kernel package into `dir`; returns the .deb's path. */
function downloadCloudKernel(dir: string): string {
  const depends = run('apt-cache', ['depends', 'linux-image-cloud-amd64']).toString();
  const name = /Depends:\s*(linux-image-[0-9][^\s]*-cloud-amd64)\b/.exec(depends)?.[1];
  if (name === undefined) throw new RamdiskBuildError('apt-cache names no linux-image-*-cloud-amd64 package (run apt-get update, or pass --kernel-deb)');
  run('apt-get', ['download', '-q', name], { cwd: dir });
  const deb = readdirSync(dir).find((f) => f.startsWith(name) && f.endsWith('.deb'));
  if (deb === undefined) throw new RamdiskBuildError(`apt-get download ${name} left no .deb`);
  return path.join(dir, deb);
}

/** Every file under `dir`, recursively. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(full));
    else out.push(full);
  }
  return out;
}

const moduleName = (file: string): string => path.basename(file).replace(/\.ko(\.xz|\.zst|\.gz)?$/, '').replaceAll('-', '_');

/** A module's bytes, decompressed. */
function moduleBytes(file: string): Buffer {
  if (file.endsWith('.ko.xz')) return run('xz', ['-dc', file]);
  if (file.endsWith('.ko.zst')) return run('zstd', ['-dcq', file]);
  if (file.endsWith('.ko.gz')) return run('gzip', ['-dc', file]);
  return readFileSync(file);
}

/** The `depends=` of a module's .modinfo section: NUL-separated `key=value` strings. */
export function moduleDepends(bytes: Buffer): string[] {
  const at = bytes.indexOf(Buffer.from('\0depends='));
  if (at < 0) return [];
  const start = at + '\0depends='.length;
  const end = bytes.indexOf(0, start);
  const value = bytes.subarray(start, end < 0 ? undefined : end).toString('latin1');
  return value === '' ? [] : value.split(',').map((d) => d.replaceAll('-', '_'));
}

/**
 * Copies `wanted` modules that exist in `modulesDir` and their dependencies into `into`,
 * decompressed as `<name>.ko`; returns the names in load order (dependencies first).
 */
export function collectModules(modulesDir: string, wanted: readonly string[], into: string): string[] {
  const files = new Map<string, string>();
  for (const file of walk(modulesDir)) if (/\.ko(\.xz|\.zst|\.gz)?$/.test(file)) files.set(moduleName(file), file);
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (name: string, chain: string[]): void => {
    if (seen.has(name)) return;
    const file = files.get(name);
    if (file === undefined) return; // built in, or not in this kernel
    if (chain.includes(name)) throw new RamdiskBuildError(`module dependency loop: ${[...chain, name].join(' → ')}`);
    const bytes = moduleBytes(file);
    for (const dep of moduleDepends(bytes)) visit(dep, [...chain, name]);
    seen.add(name);
    writeFileSync(path.join(into, `${name}.ko`), bytes);
    order.push(name);
  };
  for (const name of wanted) visit(name.replaceAll('-', '_'), []);
  return order;
}

/** The shared libraries `ldd` says `binary` needs (and the loader), as absolute paths. */
function sharedLibraries(binary: string): string[] {
  const text = run('ldd', [binary]).toString();
  const libs = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.add(m[1]!);
  }
  return [...libs];
}

/** The ramdisk's /init. */
export const RAMDISK_INIT = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /tmp /run /root
mount -t tmpfs tmp /tmp
echo "ironring deploy ramdisk: kernel $(uname -r)"
# Dependencies come first in /etc/modules; a second pass catches one that was not ready yet.
for pass in 1 2; do for m in $(cat /etc/modules); do grep -q "^$m " /proc/modules || insmod /lib/modules/$m.ko 2>/dev/null; done; done
# Booted by UEFI firmware: its variables, where the agent registers the image's boot entry.
[ -d /sys/firmware/efi/efivars ] && mount -t efivarfs efivarfs /sys/firmware/efi/efivars 2>/dev/null
ip link set lo up
for dev in /sys/class/net/*; do n=\${dev##*/}; [ "$n" = lo ] || ip link set "$n" up; done
got=
for attempt in 1 2 3 4 5 6; do
  for dev in /sys/class/net/*; do
    n=\${dev##*/}
    [ "$n" = lo ] && continue
    udhcpc -i "$n" -s /etc/udhcpc.script -t 4 -T 2 -n -q >/dev/null 2>&1 && got="$got $n"
  done
  [ -n "$got" ] && break
done
echo "ironring deploy ramdisk: addresses on:$got"
# bench:deploy's baseline: with ironring.bench_url= on the command line, busybox's wget | dd writes
# that image to ironring.bench_device= (default /dev/vda) first, and the time it took is printed.
bench=
dev=/dev/vda
for w in $(cat /proc/cmdline); do
  case "$w" in
    ironring.bench_url=*) bench=\${w#*=} ;;
    ironring.bench_device=*) dev=\${w#*=} ;;
  esac
done
if [ -n "$bench" ]; then
  t0=$(cut -d' ' -f1 /proc/uptime)
  wget -q -O - "$bench" | dd of="$dev" bs=4M 2>/dev/null
  sync
  t1=$(cut -d' ' -f1 /proc/uptime)
  echo "IRONRING-BENCH-DD start=$t0 end=$t1"
fi
echo "IRONRING-AGENT-STARTING"
while true; do
  NODE_OPTIONS= /usr/bin/node /opt/ironring/dist/agent/main.js
  rc=$?
  if [ -e /run/ironring-rescue ]; then
    # Rescued (rescue.finalize_rescue set the rescue user): a login on the console, for good.
    con=tty1
    for w in $(cat /proc/cmdline); do case "$w" in console=*) con=\${w#console=}; con=\${con%%,*} ;; esac; done
    echo "ironring deploy ramdisk: rescue mode, log in as rescue on $con"
    while true; do getty -L 115200 "$con" vt100; sleep 1; done
  fi
  echo "ironring deploy ramdisk: the agent exited ($rc); starting it again in 5 s"
  sleep 5
done
`;

/** busybox udhcpc calls this with the lease in its environment. */
export const UDHCPC_SCRIPT = `#!/bin/sh
case "$1" in
  deconfig) ip addr flush dev "$interface" ;;
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/\${mask:-24}" dev "$interface"
    if [ -n "$router" ]; then ip route add default via "\${router%% *}" dev "$interface" 2>/dev/null; fi
    : > /etc/resolv.conf
    for s in $dns; do echo "nameserver $s" >> /etc/resolv.conf; done
    ;;
esac
exit 0
`;

function defaultDist(): string {
  // This file is dist/ramdisk/build.js once compiled; src/ramdisk/build.ts under tsx.
  const here = path.dirname(fileURLToPath(import.meta.url));
  const dist = path.resolve(here, '..', '..', 'dist');
  return existsSync(path.join(here, 'build.js')) ? path.resolve(here, '..') : dist;
}

/** Builds the deploy ramdisk into `options.output`. */
export function buildRamdisk(options: RamdiskBuildOptions): RamdiskBuildResult {
  const started = performance.now();
  const log = options.log ?? (() => undefined);
  const busybox = options.busybox ?? '/bin/busybox';
  const node = options.node ?? process.execPath;
  const dist = options.dist ?? defaultDist();
  const level = options.level ?? 12;
  if (!Number.isInteger(level) || level < 1 || level > 19) throw new RamdiskBuildError(`zstd level ${level}: expected 1–19`);
  if (!existsSync(busybox)) throw new RamdiskBuildError(`${busybox} not found: install busybox-static`);
  if (readFileSync(busybox).includes('/lib64/ld-linux')) throw new RamdiskBuildError(`${busybox} is dynamically linked: install busybox-static`);
  if (!existsSync(path.join(dist, 'agent', 'main.js'))) throw new RamdiskBuildError(`${dist}/agent/main.js not found: run npm run build first`);

  const work = mkdtempSync(path.join(tmpdir(), 'ironring-ramdisk-'));
  try {
    const deb = options.kernelDeb ?? (log('downloading the cloud kernel package'), downloadCloudKernel(work));
    const tree = path.join(work, 'kernel');
    run('dpkg-deb', ['-x', deb, tree]);
    const vmlinuz = readdirSync(path.join(tree, 'boot')).find((f) => f.startsWith('vmlinuz-'));
    if (vmlinuz === undefined) throw new RamdiskBuildError(`${deb} has no boot/vmlinuz-*`);
    const kernelVersion = vmlinuz.slice('vmlinuz-'.length);

    const root = path.join(work, 'root');
    for (const dir of ['bin', 'sbin', 'usr/bin', 'etc', 'dev', 'proc', 'sys', 'tmp', 'run', 'root', 'lib/modules', 'opt/ironring']) mkdirSync(path.join(root, dir), { recursive: true });
    copyFileSync(busybox, path.join(root, 'bin', 'busybox'));
    chmodSync(path.join(root, 'bin', 'busybox'), 0o755);
    writeFileSync(path.join(root, 'init'), RAMDISK_INIT, { mode: 0o755 });
    writeFileSync(path.join(root, 'etc', 'udhcpc.script'), UDHCPC_SCRIPT, { mode: 0o755 });

    log(`collecting modules of ${kernelVersion}`);
    const modules = collectModules(path.join(tree, 'lib', 'modules', kernelVersion), RAMDISK_MODULES, path.join(root, 'lib', 'modules'));
    writeFileSync(path.join(root, 'etc', 'modules'), `${modules.join('\n')}\n`);

    // Strip first: the binary must not change after anything else reads it.
    log('copying node (stripped) and its libraries');
    run('strip', ['-o', path.join(root, 'usr', 'bin', 'node'), node]);
    for (const lib of sharedLibraries(node)) {
      const target = path.join(root, lib);
      mkdirSync(path.dirname(target), { recursive: true });
      copyFileSync(lib, target);
    }
    const agentRoot = path.join(root, 'opt', 'ironring');
    writeFileSync(path.join(agentRoot, 'package.json'), '{"type": "module", "private": true}\n');
    for (const sub of ['agent', 'common']) {
      cpSync(path.join(dist, sub), path.join(agentRoot, 'dist', sub), { recursive: true, filter: (src) => !/\.(d\.ts|map)$/.test(src) });
    }
    const lldp = lldpAddon(dist);
    const lldpListener = existsSync(lldp);
    if (lldpListener) {
      mkdirSync(path.join(agentRoot, 'build', 'Release'), { recursive: true });
      copyFileSync(lldp, path.join(agentRoot, 'build', 'Release', LLDP_ADDON));
    } else {
      log(`${lldp} not found (npm run build:native builds it): the agent will not collect LLDP`);
    }

    mkdirSync(options.output, { recursive: true });
    const kernel = path.join(options.output, 'deploy.kernel');
    const initramfs = path.join(options.output, 'deploy.initramfs');
    copyFileSync(path.join(tree, 'boot', vmlinuz), kernel);
    log(`packing the initramfs (zstd -${level})`);
    const list = run('/bin/sh', ['-c', 'find . | sort'], { cwd: root });
    const cpio = run(busybox, ['cpio', '-o', '-H', 'newc'], { cwd: root, input: list });
    const packed = run('zstd', [`-${level}`, '-T0', '-q', '-c'], { input: cpio });
    writeFileSync(`${initramfs}.part`, packed);
    run('mv', [`${initramfs}.part`, initramfs]);
    return {
      kernel,
      initramfs,
      kernelVersion,
      kernelBytes: statSync(kernel).size,
      initramfsBytes: statSync(initramfs).size,
      modules,
      lldpListener,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
