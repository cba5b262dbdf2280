import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { link, mkdir, readdir, readFile, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ImageChecksumMismatch, ImageDownloadFailed, ImageSourceNotAllowed, InvalidBootInput, UnsupportedImageSource } from '../../src/boot/errors.js';
import { ImageCache } from '../../src/boot/image-cache.js';
import { MAC_A, imageServer, randomBlob, sandbox, sha256, tree } from './helpers.js';
import type { BootSandbox } from './helpers.js';

let s: BootSandbox;
let server: Awaited<ReturnType<typeof imageServer>> | null = null;
const DAY = 86_400_000;

beforeEach(async () => {
  s = await sandbox();
});
afterEach(async () => {
  await server?.close();
  server = null;
  await s.dispose();
});

const uuid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
const mac = (i: number) => `52:54:00:00:00:${i.toString(16).padStart(2, '0')}`;

describe('image cache: shared downloads', () => {
  it('20 concurrent prepares of nodes sharing one image download it once and link it 20 times', async () => {
    const kernel = randomBlob(256 * 1024);
    const ramdisk = randomBlob(512 * 1024);
    server = await imageServer({ '/kernel': kernel, '/ramdisk': ramdisk }, 30);
    const env = s.env();
    const images = {
      deployKernel: { url: `${server.url}/kernel`, checksum: sha256(kernel) },
      deployRamdisk: { url: `${server.url}/ramdisk`, checksum: sha256(ramdisk) },
    };
    await Promise.all(Array.from({ length: 20 }, (_, i) => env.prepare({ uuid: uuid(i) }, [{ address: mac(i), pxeEnabled: true }], images)));

    expect(server.hits.get('/kernel')).toBe(1);
    expect(server.hits.get('/ramdisk')).toBe(1);
    expect(env.cache.downloads).toBe(2);
    const master = await stat(env.cache.pathFor(images.deployKernel));
    expect(master.nlink).toBe(21);
    for (let i = 0; i < 20; i++) {
      expect((await stat(join(s.tftpRoot, uuid(i), 'deploy_kernel'))).ino).toBe(master.ino);
    }
    expect(await readFile(join(s.tftpRoot, uuid(7), 'deploy_ramdisk'))).toEqual(ramdisk);
    expect((await tree(s.dir)).filter((p) => p.endsWith('.tmp'))).toEqual([]);
  });

  it('two caches on one directory (two processes) racing for an image end with one master', async () => {
    const blob = randomBlob(128 * 1024);
    server = await imageServer({ '/img': blob }, 20);
    const image = { url: `${server.url}/img`, checksum: sha256(blob) };
    const a = new ImageCache({ dir: s.masterPath, durable: false });
    const b = new ImageCache({ dir: s.masterPath, durable: false });
    const [pa, pb] = await Promise.all([a.ensure(image), b.ensure(image)]);
    expect(pa).toBe(pb);
    expect(await readdir(s.masterPath)).toEqual([`sha256-${sha256(blob).slice(7)}`]);
    expect(await readFile(pa)).toEqual(blob);
  });

  it('reads file:// sources and accepts sha512 and md5 checksums', async () => {
    const cache = new ImageCache({ dir: s.masterPath, durable: false });
    const src = await s.image('blob', 'hello image');
    const sha512 = `sha512:${createHash('sha512').update('hello image').digest('hex')}`;
    const md5 = `md5:${createHash('md5').update('hello image').digest('hex').toUpperCase()}`;
    expect(await readFile(await cache.ensure({ url: src.url, checksum: sha512 }), 'utf8')).toBe('hello image');
    expect(await cache.ensure({ url: src.url, checksum: md5 })).toMatch(/md5-[0-9a-f]{32}$/);
    expect(await cache.verify({ url: src.url, checksum: md5 })).toBe(true);
  });
});

describe('image cache: failures leave nothing behind', () => {
  it('rejects a download whose checksum does not match, naming URL and expected, never the computed checksum', async () => {
    server = await imageServer({ '/img': 'tampered bytes' });
    const env = s.env();
    const expected = sha256('the real bytes');
    const images = { deployKernel: { url: `${server.url}/img`, checksum: expected }, deployRamdisk: { url: `${server.url}/img`, checksum: expected } };
    const err = await env.prepare({ uuid: uuid(1) }, [{ address: MAC_A, pxeEnabled: true }], images).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageChecksumMismatch);
    expect(err).toMatchObject({ url: `${server.url}/img`, expected, httpStatus: 502 });
    expect(String((err as Error).message)).toBe(`image ${server.url}/img: checksum mismatch (expected ${expected})`);
    // A computed digest would tell whoever names a URL the checksum of what the conductor read.
    expect(JSON.stringify({ ...(err as object), message: (err as Error).message })).not.toContain(sha256('tampered bytes').slice(7));
    expect(await tree(s.masterPath)).toEqual([]);
    expect((await tree(s.tftpRoot)).filter((p) => p.includes('pxelinux.cfg/') || p.endsWith('config'))).toEqual([]);
    expect(server.hits.get('/img')).toBe(1); // both images share the checksum: one attempt
  });

  it('turns an HTTP error into ImageDownloadFailed and keeps no partial file', async () => {
    server = await imageServer({});
    const cache = new ImageCache({ dir: s.masterPath, durable: false });
    const err = await cache.ensure({ url: `${server.url}/missing`, checksum: sha256('x') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageDownloadFailed);
    expect((err as ImageDownloadFailed).reason).toBe('HTTP 404');
    expect(await tree(s.masterPath)).toEqual([]);
  });

  it('refuses unsupported schemes and malformed checksums before fetching', async () => {
    const cache = new ImageCache({ dir: s.masterPath });
    expect(() => cache.ensure({ url: 'ftp://example.com/k', checksum: sha256('x') })).toThrow(UnsupportedImageSource);
    expect(() => cache.ensure({ url: 'file:///k', checksum: 'sha256:xyz' })).toThrow(InvalidBootInput);
    expect(() => cache.ensure({ url: 'file:///k', checksum: 'crc32:00000000' })).toThrow(InvalidBootInput);
  });
});

describe('image cache: clean-up', () => {
  async function master(cache: ImageCache, name: string, bytes: number, ageDays: number): Promise<string> {
    const src = await s.image(name, randomBlob(bytes));
    const path = await cache.ensure(src);
    const when = (Date.now() - ageDays * DAY) / 1000;
    await utimes(path, when, when);
    return path;
  }

  it('removes unlinked masters unused past the TTL, never one a node links to', async () => {
    const cache = new ImageCache({ dir: s.masterPath, durable: false });
    const linked = await master(cache, 'linked', 10, 30);
    const old = await master(cache, 'old', 10, 8);
    const recent = await master(cache, 'recent', 10, 1);
    await mkdir(join(s.tftpRoot, 'n'), { recursive: true });
    await link(linked, join(s.tftpRoot, 'n', 'kernel'));

    const report = await cache.clean();
    expect(report.removed).toEqual([old.slice(s.masterPath.length + 1)]);
    expect((await cache.list()).map((e) => e.path).sort()).toEqual([linked, recent].sort());
  });

  it('over the size limit, removes unlinked masters oldest first until it fits', async () => {
    const cache = new ImageCache({ dir: s.masterPath, durable: false, maxBytes: 2500 });
    const linked = await master(cache, 'linked', 1000, 6);
    const a = await master(cache, 'a', 1000, 5);
    const b = await master(cache, 'b', 1000, 3);
    const c = await master(cache, 'c', 1000, 2);
    await mkdir(join(s.tftpRoot, 'n'), { recursive: true });
    await link(linked, join(s.tftpRoot, 'n', 'kernel'));

    const report = await cache.clean();
    const name = (p: string) => p.slice(s.masterPath.length + 1);
    expect(report.removed).toEqual([name(a), name(b)]);
    expect(report.remainingBytes).toBe(2000);
    expect((await cache.list()).map((e) => e.path).sort()).toEqual([linked, c].sort());
  });

  it('removes temp files of killed downloads once they are stale', async () => {
    const cache = new ImageCache({ dir: s.masterPath, staleTempMs: DAY });
    await mkdir(s.masterPath, { recursive: true });
    const fresh = join(s.masterPath, '.sha256-ab.4242.0123abcd.tmp');
    const stale = join(s.masterPath, '.sha256-cd.4242.0123abcd.tmp');
    await writeFile(fresh, 'partial');
    await writeFile(stale, 'partial');
    await utimes(stale, (Date.now() - 2 * DAY) / 1000, (Date.now() - 2 * DAY) / 1000);
    await cache.clean();
    expect(await readdir(s.masterPath)).toEqual([fresh.slice(s.masterPath.length + 1)]);
  });

  it('remembers a recent use it found on disk: touches within the interval look at nothing', async () => {
    const HOUR = 3_600_000;
    let clock = Date.now();
    const cache = new ImageCache({ dir: s.masterPath, durable: false, now: () => clock, touchIntervalMs: HOUR });
    const images = await s.images();
    const path = await cache.ensure(images.deployKernel);
    await cache.touch(path); // just downloaded: used now, nothing to write
    const old = (clock - 2 * HOUR) / 1000;
    await utimes(path, old, old);
    clock += 60_000;
    await cache.touch(path); // within an hour of the use it saw: not looked at, not written
    expect(Math.round((await stat(path)).atimeMs / 1000)).toBe(Math.round(old));
    clock += HOUR;
    await cache.touch(path); // the interval has passed: looked at again, and the use recorded
    expect(Math.abs((await stat(path)).atimeMs - clock)).toBeLessThan(2000);
  });

  it('after a node is cleaned up its images count as used just now', async () => {
    const env = s.env({ imageCache: { now: () => Date.now() } });
    const images = await s.images();
    await env.prepare({ uuid: uuid(1) }, [{ address: MAC_A, pxeEnabled: true }], images);
    const path = env.cache.pathFor(images.deployKernel);
    const long = (Date.now() - 30 * DAY) / 1000;
    await utimes(path, long, long);
    await env.cleanUp({ uuid: uuid(1) });
    expect((await env.cache.clean()).removed).toEqual([]);
    expect((await stat(path)).nlink).toBe(1);
  });
});

describe('precache', () => {
  it('fills the cache for a replica without writing any node layout', async () => {
    const env = s.env();
    const images = await s.images();
    const paths = await env.precache({ deployKernel: images.deployKernel, deployRamdisk: images.deployRamdisk });
    expect(paths).toEqual([env.cache.pathFor(images.deployKernel), env.cache.pathFor(images.deployRamdisk)]);
    expect(await tree(s.tftpRoot)).toEqual([]);
    expect(await env.cache.has(images.deployKernel)).toBe(true);
    expect(await env.cache.has(images.kernel)).toBe(false);
  });
});

describe('image cache: file:// sources are confined to file_url_allowed_paths (issue #14 item 3)', () => {
  const allowedCache = (allowed: string[]) => new ImageCache({ dir: s.masterPath, durable: false, fileUrlAllowedPaths: allowed });

  it('serves a file inside an allowed directory, and refuses one outside it before reading it', async () => {
    const inside = await s.image('kernel', 'allowed bytes');
    await writeFile(join(s.dir, 'secret'), 'outside bytes');
    const cache = allowedCache([join(s.dir, 'images')]);
    expect(await readFile(await cache.ensure(inside), 'utf8')).toBe('allowed bytes');
    const err = await cache.ensure({ url: `file://${join(s.dir, 'secret')}`, checksum: sha256('outside bytes') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageSourceNotAllowed);
    expect(err).toMatchObject({ httpStatus: 400 });
    expect((err as Error).message).toMatch(/is not allowed: it is outside the directories of \[conductor\] file_url_allowed_paths$/);
    expect((await readdir(s.masterPath)).filter((n) => n.startsWith('sha256-'))).toEqual([`sha256-${sha256('allowed bytes').slice(7)}`]);
  });

  it('refuses a missing file outside the allowed directories the same way as an existing one (no existence oracle)', async () => {
    const cache = allowedCache([join(s.dir, 'images')]);
    const missing = await cache.ensure({ url: `file://${join(s.dir, 'no-such-file')}`, checksum: sha256('x') }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ImageSourceNotAllowed);
  });

  it('resolves symlinks before the check, files and directories alike, and names no link target', async () => {
    await s.image('real', 'allowed bytes');
    await mkdir(join(s.dir, 'outside'));
    await writeFile(join(s.dir, 'outside', 'secret'), 'outside bytes');
    await symlink(join(s.dir, 'outside', 'secret'), join(s.dir, 'images', 'link'));
    await symlink(join(s.dir, 'outside'), join(s.dir, 'images', 'dirlink'));
    await symlink(join(s.dir, 'images', 'real'), join(s.dir, 'images', 'inner-link'));
    const cache = allowedCache([join(s.dir, 'images')]);
    for (const name of ['link', 'dirlink/secret']) {
      const err = await cache.ensure({ url: `file://${join(s.dir, 'images', name)}`, checksum: sha256('outside bytes') }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ImageSourceNotAllowed);
      expect((err as Error).message).toMatch(/resolves outside the directories of \[conductor\] file_url_allowed_paths/);
      expect((err as Error).message).not.toContain('outside/');
    }
    // A link that stays inside is fine.
    expect(await readFile(await cache.ensure({ url: `file://${join(s.dir, 'images', 'inner-link')}`, checksum: sha256('allowed bytes') }), 'utf8')).toBe('allowed bytes');
  });

  it('accepts either spelling of an allowed directory that is itself a symlink', async () => {
    const inside = await s.image('kernel', 'allowed bytes');
    await symlink(join(s.dir, 'images'), join(s.dir, 'images-link'));
    const cache = allowedCache([join(s.dir, 'images-link')]);
    expect(await readFile(await cache.ensure({ url: `file://${join(s.dir, 'images-link', 'kernel')}`, checksum: inside.checksum }), 'utf8')).toBe('allowed bytes');
    await cache.evict(inside);
    expect(await readFile(await cache.ensure(inside), 'utf8')).toBe('allowed bytes');
  });

  it('refuses an allowed-looking path whose checksum names a master already cached', async () => {
    const inside = await s.image('kernel', 'allowed bytes');
    const cache = allowedCache([join(s.dir, 'images')]);
    await cache.ensure(inside);
    await expect(cache.ensure({ url: 'file:///etc/hostname', checksum: inside.checksum })).rejects.toBeInstanceOf(ImageSourceNotAllowed);
  });

  it('never serves /dev, /sys, /proc, /boot, /etc or /run, even when an allowed directory contains them', async () => {
    const cache = allowedCache(['/']);
    for (const url of ['file:///etc/passwd', 'file:///proc/self/environ', 'file:///dev/zero', 'file:///sys/kernel/notes', 'file:///run/x', 'file:///boot/vmlinuz']) {
      const err = await cache.ensure({ url, checksum: sha256('x') }).catch((e: unknown) => e);
      expect(err, url).toBeInstanceOf(ImageSourceNotAllowed);
      expect((err as Error).message).toMatch(/is never an image source/);
    }
    // And without any allowed list (library use), the blocked directories still hold.
    await expect(new ImageCache({ dir: s.masterPath }).ensure({ url: 'file:///etc/passwd', checksum: sha256('x') })).rejects.toBeInstanceOf(ImageSourceNotAllowed);
  });

  it('an empty list disables file:// sources; http(s) sources are unaffected', async () => {
    const inside = await s.image('kernel', 'allowed bytes');
    const err = await allowedCache([]).ensure(inside).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageSourceNotAllowed);
    expect((err as Error).message).toMatch(/file:\/\/ image sources are disabled \(\[conductor\] file_url_allowed_paths is empty\)/);
    server = await imageServer({ '/img': 'over http' });
    expect(await readFile(await allowedCache([]).ensure({ url: `${server.url}/img`, checksum: sha256('over http') }), 'utf8')).toBe('over http');
  });

  it('refuses a FIFO in an allowed directory instead of hanging on it', async () => {
    await mkdir(join(s.dir, 'images'), { recursive: true });
    const fifo = join(s.dir, 'images', 'fifo');
    spawnSync('mkfifo', [fifo]);
    const err = await allowedCache([join(s.dir, 'images')]).ensure({ url: `file://${fifo}`, checksum: sha256('x') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageSourceNotAllowed);
    expect((err as Error).message).toMatch(/not a regular file/);
  });
});

describe('boot environment: a cached master is no way around file_url_allowed_paths', () => {
  it('refuses a node whose file:// URL is outside the allowed directories even when its checksum names cached masters (fast path)', async () => {
    const env = s.env({ imageCache: { durable: false, fileUrlAllowedPaths: [join(s.dir, 'images')] } });
    const images = await s.images();
    await env.prepare({ uuid: uuid(1) }, [{ address: mac(1), pxeEnabled: true }], images);
    const sneaky = { ...images, deployKernel: { url: 'file:///etc/passwd', checksum: images.deployKernel.checksum } };
    const err = await env.prepare({ uuid: uuid(2) }, [{ address: mac(2), pxeEnabled: true }], sneaky).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageSourceNotAllowed);
    expect((await tree(s.tftpRoot)).filter((p) => p.includes(uuid(2)) || p.endsWith(mac(2).replaceAll(':', '-')))).toEqual([]);
    // The allowed node is still current (nothing to write).
    expect((await env.prepare({ uuid: uuid(1) }, [{ address: mac(1), pxeEnabled: true }], images)).written).toEqual([]);
  });
});
