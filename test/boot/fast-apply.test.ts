/**
 * The synchronous fast path of `prepare` (`fast-apply.ts`, what a take-over mostly runs) and the
 * general asynchronous path of `BootEnvironment` must leave the same files behind, and name their
 * temp files by the one rule `sweep` recognises.
 */
import { lstat, readFile, readlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTempName, tempPathFor } from '../../src/boot/atomic-fs.js';
import { applySync } from '../../src/boot/fast-apply.js';
import { BOOT_IPXE_NAME } from '../../src/boot/layout.js';
import { renderBootIpxe } from '../../src/boot/templates/index.js';
import type { BootImages, BootInterface, BootMode, BootNode } from '../../src/boot/types.js';
import type { IMAGE_ROLES } from '../../src/boot/types.js';
import { MAC_A, MAC_A2, UUID_A, sandbox, tree } from './helpers.js';
import type { BootSandbox } from './helpers.js';

/** Every path under the boot roots and the cache: kind, content or link target, and for node images which master they are. */
async function describeTree(s: BootSandbox): Promise<Record<string, string>> {
  const masters = new Map<number, string>();
  for (const name of await tree(s.masterPath)) {
    const st = await lstat(join(s.masterPath, name));
    if (st.isFile()) masters.set(st.ino, name);
  }
  const out: Record<string, string> = {};
  for (const [label, root] of [['tftp', s.tftpRoot], ['http', s.httpRoot], ['master', s.masterPath]] as const) {
    for (const rel of await tree(root)) {
      const path = join(root, rel);
      const st = await lstat(path);
      const key = `${label}/${rel}`;
      if (st.isDirectory()) out[key] = 'dir';
      else if (st.isSymbolicLink()) out[key] = `link -> ${await readlink(path)}`;
      else if (label !== 'master' && masters.has(st.ino)) out[key] = `master ${masters.get(st.ino)}`;
      else out[key] = `file ${st.mode.toString(8)} ${await readFile(path, 'utf8')}`;
    }
  }
  return out;
}

let fast: BootSandbox;
let general: BootSandbox;
beforeEach(async () => {
  fast = await sandbox();
  general = await sandbox();
});
afterEach(async () => {
  await fast.dispose();
  await general.dispose();
});

const ports = [
  { address: MAC_A, pxeEnabled: true },
  { address: MAC_A2, pxeEnabled: true },
  { address: '52:54:00:00:00:99', pxeEnabled: false },
];

const layouts: Array<{ name: string; bootMode: BootMode; bootInterface: BootInterface }> = [
  { name: 'PXELINUX (BIOS, TFTP)', bootMode: 'bios', bootInterface: 'pxe' },
  { name: 'GRUB (UEFI, TFTP)', bootMode: 'uefi', bootInterface: 'pxe' },
  { name: 'iPXE (HTTP)', bootMode: 'bios', bootInterface: 'ipxe' },
];

describe.each(layouts)('fast path and general path write the same tree: $name', ({ bootMode, bootInterface }) => {
  it('for a new node, a change of label, instance images dropped, and deploy images dropped', async () => {
    // Same image bytes in both sandboxes, so checksums and master names agree.
    const fastImages = await fast.images();
    const generalImages = await general.images();
    const steps: Array<{ node: BootNode; images: (all: Required<BootImages>) => BootImages }> = [
      { node: { uuid: UUID_A, bootMode, bootInterface }, images: (all) => all },
      { node: { uuid: UUID_A, bootMode, bootInterface, label: 'boot_ramdisk', instanceKernelParams: 'console=ttyS0' }, images: (all) => all },
      { node: { uuid: UUID_A, bootMode, bootInterface }, images: (all) => ({ deployKernel: all.deployKernel, deployRamdisk: all.deployRamdisk }) },
      { node: { uuid: UUID_A, bootMode, bootInterface, label: 'boot_ramdisk' }, images: (all) => ({ kernel: all.kernel, ramdisk: all.ramdisk }) },
    ];

    const fastEnv = fast.env();
    await fastEnv.precache(fastImages);
    // DHCP entries make the general path the only path for every prepare (the fast path has none);
    // they live outside the boot roots compared below.
    const generalEnv = general.env({ dhcpHostsDir: general.hostsDir, dhcpOptsDir: general.optsDir });

    for (const [i, step] of steps.entries()) {
      const images = step.images(fastImages);
      const spec = fastEnv.spec(step.node, ports, images);
      const result = applySync(spec, {
        masterPath: (role) => fastEnv.cache.pathFor(images[role]!, `images.${role}.checksum`),
        otherDirs: [fast.tftpRoot, fast.httpRoot].map((r) => join(r, UUID_A)).filter((d) => d !== spec.layout.dir),
        write: { durable: false },
        ...(spec.iface === 'ipxe' ? { bootIpxe: { path: join(fast.httpRoot, BOOT_IPXE_NAME), content: renderBootIpxe() } } : {}),
      });
      expect(result, `step ${i}: the fast path applies`).not.toBeNull();
      const changes = await generalEnv.prepare(step.node, ports, step.images(generalImages));

      // Paths differ only by sandbox root.
      const rel = (paths: readonly string[], s: BootSandbox) => paths.map((p) => p.replace(s.dir, '')).sort();
      expect(rel(result!.written, fast), `step ${i}: written`).toEqual(rel(changes.written.filter((p) => !p.startsWith(general.hostsDir) && !p.startsWith(general.optsDir)), general));
      expect(rel(result!.removed, fast), `step ${i}: removed`).toEqual(rel(changes.removed, general));
      expect(await describeTree(fast), `step ${i}: tree`).toEqual(await describeTree(general));
    }
    // Both layouts really were written: node images are hard links to cached masters.
    const tree_ = await describeTree(fast);
    expect(Object.values(tree_).filter((v) => v.startsWith('master ')).length).toBe(2);
  });
});

describe('one temp-file naming rule', () => {
  it('every temp name the writers make is one sweep recognises, and no real boot file name is', () => {
    const names = [
      '/srv/tftp/pxelinux.cfg/01-52-54-00-12-34-56',
      `/srv/tftp/grub.cfg-01-52-54-00-12-34-56`,
      `/srv/tftp/${MAC_A}.conf`,
      `/srv/http/${UUID_A}/config`,
      `/srv/http/${UUID_A}/deploy_kernel`,
      '/srv/http/boot.ipxe',
      '/var/lib/ironring/master_images/sha256-0123abcd',
    ];
    for (const path of names) {
      expect(isTempName(basename(tempPathFor(path))), path).toBe(true);
      expect(isTempName(basename(path)), path).toBe(false);
    }
  });

  it('a replacement the fast path cannot rename into place leaves no temp file behind', async () => {
    // A directory where a per-MAC link must go makes the rename of the new link fail: the fast path
    // must remove its temp, and the name it used must be one that sweep would also have removed.
    const images = await fast.images();
    const env = fast.env();
    await env.precache(images);
    const spec = env.spec({ uuid: UUID_A }, ports.slice(0, 1), images);
    const ctx = {
      masterPath: (role: (typeof IMAGE_ROLES)[number]) => env.cache.pathFor(images[role], `images.${role}.checksum`),
      otherDirs: [join(fast.httpRoot, UUID_A)],
      write: { durable: false },
    };
    expect(applySync(spec, ctx)).not.toBeNull();
    const link = spec.links[0]!;
    const { mkdir, rm, writeFile } = await import('node:fs/promises');
    await rm(link.path);
    await mkdir(link.path);
    await writeFile(join(link.path, 'in-the-way'), '');
    expect(() => applySync(spec, ctx)).toThrow();
    const left = (await tree(join(link.path, '..'))).filter((n) => n.startsWith('.'));
    expect(left).toEqual([]);
  });
});
