/**
 * The conductor's qcow2 → raw staging for the direct deploy, with the real `qemu-img`: a qcow2
 * made from a raw pattern comes back byte for byte as the published raw file with its sha256, once;
 * images that would make qemu-img read other files, that are not qcow2, or whose download does not
 * match the checksum end as `failed` with the reason; the published link goes with its last holder.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ImageCache } from '../../src/boot/image-cache.js';
import { InstanceImages, PUBLISHED_IMAGES_DIR } from '../../src/boot/instance-images.js';
import type { StageStatus } from '../../src/boot/instance-images.js';
import { requirePeer } from '../helpers/peers.js';
import { imageServer, sandbox, sha256 } from './helpers.js';
import type { BootSandbox } from './helpers.js';

const hex = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe.skipIf(!requirePeer('qemu-img', 'qemu-utils'))('instance images: qcow2 converted and served by the conductor', () => {
  let s: BootSandbox;
  let server: Awaited<ReturnType<typeof imageServer>> | null = null;
  beforeEach(async () => {
    s = await sandbox();
  });
  afterEach(async () => {
    await server?.close();
    server = null;
    await s.dispose();
  });

  const stager = () =>
    new InstanceImages({ cache: new ImageCache({ dir: s.masterPath, durable: false }), httpRoot: s.httpRoot, httpUrl: 'http://192.0.2.1:8080/' });

  /** A raw disk of `mib` MiB (a pattern with a hole of zeros) and its qcow2 conversion. */
  async function qcow2Of(mib: number): Promise<{ raw: Buffer; qcow2: Buffer }> {
    const raw = Buffer.alloc(mib * 1024 * 1024);
    randomBytes(512 * 1024).copy(raw, 0);
    randomBytes(64 * 1024).copy(raw, raw.length - 64 * 1024);
    const rawFile = join(s.dir, `src-${mib}.raw`);
    const qcowFile = join(s.dir, `src-${mib}.qcow2`);
    await writeFile(rawFile, raw);
    const made = spawnSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', rawFile, qcowFile], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    return { raw, qcow2: await readFile(qcowFile) };
  }

  async function settle(images: InstanceImages, node: string, source: { url: string; checksum: string }): Promise<StageStatus> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const status = images.stage(node, source);
      if (status.state !== 'staging' || Date.now() > deadline) return status;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('converts a qcow2 once, publishes the raw image under images/ with its sha256, and unpublishes it with its last holder', async () => {
    const { raw, qcow2 } = await qcow2Of(8);
    expect(qcow2.subarray(0, 4).toString('latin1')).toBe('QFI\xfb');
    server = await imageServer({ '/disk.qcow2': qcow2 });
    const images = stager();
    const source = { url: `${server.url}/disk.qcow2`, checksum: sha256(qcow2) };

    expect(images.stage('node-a', source)).toEqual({ state: 'staging' });
    const status = await settle(images, 'node-a', source);
    const name = `${sha256(qcow2).replace(':', '-')}.raw`;
    expect(status).toEqual({ state: 'ready', image: { url: `http://192.0.2.1:8080/${PUBLISHED_IMAGES_DIR}/${name}`, sha256: hex(raw), bytes: raw.length } });
    const published = join(s.httpRoot, PUBLISHED_IMAGES_DIR, name);
    expect(hex(await readFile(published))).toBe(hex(raw));
    // The raw master is in the cache under its own digest: the published file is a link to it.
    const master = join(s.masterPath, `sha256-${hex(raw)}`);
    expect((await stat(master)).ino).toBe((await stat(published)).ino);

    // A second node joins the same image: no second download or conversion.
    expect(await settle(images, 'node-b', source)).toEqual(status);
    expect(server.hits.get('/disk.qcow2')).toBe(1);
    await images.release('node-a');
    expect((await stat(published)).isFile()).toBe(true);
    await images.release('node-b');
    await expect(stat(published)).rejects.toThrow(/ENOENT/);
    expect(await readdir(s.masterPath)).toEqual(expect.arrayContaining([`sha256-${hex(raw)}`]));
  });

  it('a node released while its image converts leaves nothing published; a node that asks again gets it back', async () => {
    const { raw, qcow2 } = await qcow2Of(8);
    server = await imageServer({ '/disk.qcow2': qcow2 });
    const images = stager();
    const source = { url: `${server.url}/disk.qcow2`, checksum: sha256(qcow2) };
    const published = join(s.httpRoot, PUBLISHED_IMAGES_DIR, `${sha256(qcow2).replace(':', '-')}.raw`);

    expect(images.stage('node-a', source)).toEqual({ state: 'staging' });
    await images.release('node-a');
    await images.idle();
    await expect(stat(published)).rejects.toThrow(/ENOENT/);
    await expect(stat(`${published}.sha256`)).rejects.toThrow(/ENOENT/);
    // The converted master stays in the cache: asking again publishes it without a new download.
    expect(await readdir(s.masterPath)).toEqual(expect.arrayContaining([`sha256-${hex(raw)}`]));
    expect(await settle(images, 'node-a', source)).toMatchObject({ state: 'ready', image: { sha256: hex(raw) } });
    expect(hex(await readFile(published))).toBe(hex(raw));
    expect(server.hits.get('/disk.qcow2')).toBe(1);
  });

  it('refuses a qcow2 that names a backing file, a file that is not qcow2, and a download that does not match its checksum', async () => {
    const base = join(s.dir, 'secret.raw');
    await writeFile(base, Buffer.alloc(1024 * 1024, 0x41));
    const overlay = join(s.dir, 'overlay.qcow2');
    const made = spawnSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', base, overlay], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    const withBacking = await readFile(overlay);
    const notQcow = Buffer.alloc(1024 * 1024, 7);
    const { qcow2 } = await qcow2Of(2);
    server = await imageServer({ '/backed.qcow2': withBacking, '/raw.img': notQcow, '/disk.qcow2': qcow2 });
    const images = stager();

    const backed = await settle(images, 'n1', { url: `${server.url}/backed.qcow2`, checksum: sha256(withBacking) });
    expect(backed).toMatchObject({ state: 'failed', error: expect.stringMatching(/backing file/) });
    const plain = await settle(images, 'n2', { url: `${server.url}/raw.img`, checksum: sha256(notQcow) });
    expect(plain).toMatchObject({ state: 'failed', error: expect.stringMatching(/not a valid qcow2/) });
    const wrong = await settle(images, 'n3', { url: `${server.url}/disk.qcow2`, checksum: sha256('something else') });
    expect(wrong).toMatchObject({ state: 'failed', error: expect.stringMatching(/checksum/i) });
    // The deploy's later heartbeats see the same failure; a new deploy (retry) tries again.
    const wrongSource = { url: `${server.url}/disk.qcow2`, checksum: sha256('something else') };
    expect(images.stage('n3', wrongSource)).toEqual(wrong);
    expect(images.stage('n3', wrongSource, true)).toEqual({ state: 'staging' });
    expect(await settle(images, 'n3', wrongSource)).toMatchObject({ state: 'failed' });
    expect(server.hits.get('/disk.qcow2')).toBe(2);
    // Nothing was published.
    expect(await readdir(join(s.httpRoot, PUBLISHED_IMAGES_DIR)).catch(() => [])).toEqual([]);
  });

  it('refuses an image whose virtual size is over the limit, before converting', async () => {
    const { qcow2 } = await qcow2Of(4);
    server = await imageServer({ '/disk.qcow2': qcow2 });
    const images = new InstanceImages({ cache: new ImageCache({ dir: s.masterPath, durable: false }), httpRoot: s.httpRoot, httpUrl: 'http://h', maxVirtualBytes: 1024 * 1024 });
    const status = await settle(images, 'n', { url: `${server.url}/disk.qcow2`, checksum: sha256(qcow2) });
    expect(status).toMatchObject({ state: 'failed', error: expect.stringMatching(/virtual size \(4194304 bytes\) is over the limit of 1048576/) });
  });
});
