import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeviceTooSmall, ImageChecksumMismatch, ImageDownloadError, ImageWriteError, InvalidImageInfo } from '../../../src/agent/disk/errors.js';
import { writeImage } from '../../../src/agent/disk/image-writer.js';

const MIB = 1024 * 1024;

/** What the test image server does on its n-th request (0-based). */
interface Behaviour {
  /** Answer with this status and no image. */
  status?: number;
  /** Answer 302 to this path of the same server. */
  redirectTo?: string;
  /** Send this many body bytes, then cut the connection. */
  dropAfter?: number;
  /** Send this many body bytes, then go silent (keep the connection open). */
  stallAfter?: number;
}

interface ImageServer {
  url: string;
  requests: Array<{ range: string | undefined; ifRange: string | undefined; acceptEncoding: string | undefined; path: string | undefined }>;
  close(): Promise<void>;
}

/**
 * A local image server: `ranges` advertises and honours `Range: bytes=N-` (with If-Range against
 * its ETag); `chunked` sends no Content-Length; `behaviours[n]` scripts the n-th request.
 */
async function imageServer(
  image: Buffer,
  options: { ranges?: boolean; chunked?: boolean; behaviours?: Behaviour[]; etags?: string[] } = {},
): Promise<ImageServer> {
  const requests: ImageServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    const n = requests.length;
    // The image's current version: `etags[n]` lets a test replace the image between requests.
    const etag = options.etags?.[n] ?? options.etags?.at(-1) ?? '"v1"';
    requests.push({ range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined, acceptEncoding: req.headers['accept-encoding'], path: req.url });
    const behaviour = options.behaviours?.[n] ?? {};
    if (behaviour.redirectTo !== undefined) {
      res.writeHead(302, { location: behaviour.redirectTo, 'content-length': 0 }).end();
      return;
    }
    if (behaviour.status !== undefined) {
      res.writeHead(behaviour.status, { 'content-length': 0 }).end();
      return;
    }
    let start = 0;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const rangeValid = options.ranges && range && (req.headers['if-range'] === undefined || req.headers['if-range'] === etag);
    if (rangeValid) {
      start = Number(range[1]);
      res.writeHead(206, {
        'content-range': `bytes ${start}-${image.length - 1}/${image.length}`,
        'content-length': image.length - start,
        etag,
        'accept-ranges': 'bytes',
      });
    } else {
      res.writeHead(200, {
        ...(options.chunked ? {} : { 'content-length': image.length }),
        ...(options.ranges ? { 'accept-ranges': 'bytes', etag } : {}),
      });
    }
    const body = image.subarray(start);
    const cut = behaviour.dropAfter ?? behaviour.stallAfter;
    if (cut === undefined) {
      res.end(body);
      return;
    }
    res.write(body.subarray(0, cut), () => {
      if (behaviour.dropAfter !== undefined) res.socket?.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/image.raw`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let dir: string;
let server: ImageServer | null = null;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A device stand-in: a file of `size` bytes of 0xAA, so untouched and zeroed regions are visible. */
async function fakeDevice(size: number): Promise<string> {
  const path = join(dir, `disk-${size}`);
  await writeFile(path, Buffer.alloc(size, 0xaa));
  return path;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ironring-writer-'));
});
afterEach(async () => {
  await server?.close();
  server = null;
  await rm(dir, { recursive: true, force: true });
});

// 5 MiB and an odd tail: several blocks of the smallest block size, and a last partial one.
const image = randomBytes(5 * MIB + 12_345);

// Every case runs with both receivers: the raw reader (plain http, bodies of known length, straight
// into the write blocks) and node:http (what https, redirects and chunked bodies use).
describe.each([
  { receiver: 'raw reader', rawHttp: true },
  { receiver: 'node:http', rawHttp: false },
])('writeImage through the $receiver', ({ rawHttp }) => {
  const fast = { retryDelayMs: 10, blockSize: MIB, rawHttp };

  it('streams the image byte for byte, reports progress and returns the verified digest', async () => {
    server = await imageServer(image);
    const device = await fakeDevice(8 * MIB);
    const progress: Array<[number, number | null]> = [];
    const result = await writeImage({
      ...fast,
      url: server.url,
      checksum: { algo: 'sha256', value: sha256(image).toUpperCase() },
      device,
      onProgress: (bytes, total) => progress.push([bytes, total]),
    });
    expect(result).toMatchObject({ bytes: image.length, algo: 'sha256', digest: sha256(image), attempts: 1, resumed: 0 });
    // The raw reader asks for the identity coding; node:http sends no Accept-Encoding.
    expect(server.requests.map((r) => r.acceptEncoding)).toEqual([rawHttp ? 'identity' : undefined]);
    const written = await readFile(device);
    expect(written.subarray(0, image.length).equals(image)).toBe(true);
    expect(written.subarray(image.length).every((b) => b === 0xaa)).toBe(true);
    expect(progress.length).toBe(6);
    expect(progress.at(-1)).toEqual([image.length, image.length]);
    expect(progress.every(([b], i) => i === 0 || b > progress[i - 1]![0])).toBe(true);
  });

  it('writes the same bytes through the page cache when O_DIRECT is turned off', async () => {
    server = await imageServer(image);
    const device = await fakeDevice(8 * MIB);
    const result = await writeImage({ ...fast, direct: false, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device });
    expect(result.direct).toBe(false);
    // Where the time went: the writer thread hashed and wrote, within the whole write's time.
    expect(result.timings.hash_s).toBeGreaterThan(0);
    expect(result.timings.write_s).toBeGreaterThan(0);
    expect(result.timings.wait_s).toBeGreaterThanOrEqual(0);
    expect(result.timings.hash_s + result.timings.write_s).toBeLessThanOrEqual(result.seconds);
    const written = await readFile(device);
    expect(written.subarray(0, image.length).equals(image)).toBe(true);
    expect(written.subarray(image.length).every((b) => b === 0xaa)).toBe(true);
  });

  it('on a digest mismatch names both digests and leaves the first MiB zeroed', async () => {
    server = await imageServer(image);
    const device = await fakeDevice(8 * MIB);
    const wrong = sha256(Buffer.from('another image'));
    const error = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: wrong }, device }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageChecksumMismatch);
    expect((error as Error).message).toBe(`image ${server.url} failed verification: expected sha256 ${wrong}, computed ${sha256(image)}`);
    const written = await readFile(device);
    expect(written.subarray(0, MIB).every((b) => b === 0)).toBe(true);
    expect(written.subarray(MIB, image.length).equals(image.subarray(MIB))).toBe(true);
  });

  it('resumes with a Range request when the server drops mid-stream and supports ranges', async () => {
    server = await imageServer(image, { ranges: true, behaviours: [{ dropAfter: 3 * MIB + 7 }] });
    const device = await fakeDevice(8 * MIB);
    const result = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha512', value: createHash('sha512').update(image).digest('hex') }, device });
    expect(result).toMatchObject({ attempts: 2, resumed: 1, bytes: image.length });
    expect(server.requests[0]!.range).toBeUndefined();
    const start = Number(/^bytes=(\d+)-$/.exec(server.requests[1]!.range ?? '')?.[1]);
    expect(start).toBeGreaterThan(0);
    expect(start).toBeLessThanOrEqual(3 * MIB + 7);
    expect(server.requests[1]!.ifRange).toBe('"v1"');
    expect((await readFile(device)).subarray(0, image.length).equals(image)).toBe(true);
  });

  it('restarts from byte 0 when the server drops mid-stream and has no ranges', async () => {
    server = await imageServer(image, { behaviours: [{ dropAfter: 2 * MIB }] });
    const device = await fakeDevice(8 * MIB);
    const result = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device });
    expect(result).toMatchObject({ attempts: 2, resumed: 0 });
    expect(server.requests.map((r) => r.range)).toEqual([undefined, undefined]);
    expect((await readFile(device)).subarray(0, image.length).equals(image)).toBe(true);
  });

  it('restarts from byte 0 when the image changed between attempts (If-Range no longer matches)', async () => {
    server = await imageServer(image, { ranges: true, etags: ['"v1"', '"v2"'], behaviours: [{ dropAfter: 2 * MIB }] });
    const device = await fakeDevice(8 * MIB);
    const result = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device });
    expect(server.requests[1]).toMatchObject({ ifRange: '"v1"' });
    expect(result).toMatchObject({ attempts: 2, resumed: 0, bytes: image.length });
    expect((await readFile(device)).subarray(0, image.length).equals(image)).toBe(true);
  });

  it('gives up after the bounded retries, naming the last failure, and zeroes what it wrote', async () => {
    server = await imageServer(image, { behaviours: [{ dropAfter: 2 * MIB }, { dropAfter: 2 * MIB }, { dropAfter: 2 * MIB }] });
    const device = await fakeDevice(8 * MIB);
    const error = await writeImage({ ...fast, retries: 2, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageDownloadError);
    expect((error as Error).message).toMatch(/connection closed after \d+ of 5255225 bytes \(after 3 attempts\)|aborted|socket hang up|ECONNRESET/);
    expect(server.requests.length).toBe(3);
    expect((await readFile(device)).subarray(0, MIB).every((b) => b === 0)).toBe(true);
  });

  it('follows a redirect (node:http does, for both receivers)', async () => {
    // The raw reader sees the 302, closes, and hands the request to node:http, which asks again.
    const moved = { redirectTo: '/moved/image.raw' };
    server = await imageServer(image, { behaviours: rawHttp ? [moved, moved] : [moved] });
    const device = await fakeDevice(8 * MIB);
    const result = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device });
    expect(result).toMatchObject({ bytes: image.length, attempts: 1 });
    expect(server.requests.map((r) => r.path)).toEqual(rawHttp ? ['/image.raw', '/image.raw', '/moved/image.raw'] : ['/image.raw', '/moved/image.raw']);
    expect((await readFile(device)).subarray(0, image.length).equals(image)).toBe(true);
  });

  it('retries a 5xx and succeeds', async () => {
    server = await imageServer(image, { behaviours: [{ status: 503 }] });
    const device = await fakeDevice(8 * MIB);
    const result = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device });
    expect(result.attempts).toBe(2);
  });

  it('fails at once on a 404, without retrying or touching the device', async () => {
    server = await imageServer(image, { behaviours: [{ status: 404 }] });
    const device = await fakeDevice(8 * MIB);
    const error = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageDownloadError);
    expect((error as Error).message).toBe(`cannot download image ${server.url}: HTTP 404 Not Found`);
    expect(server.requests.length).toBe(1);
    expect((await readFile(device)).every((b) => b === 0xaa)).toBe(true);
  });

  it('refuses an image larger than the device before writing anything', async () => {
    server = await imageServer(image);
    const device = await fakeDevice(4 * MIB);
    const error = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeviceTooSmall);
    expect((error as Error).message).toBe(`device ${device} holds ${4 * MIB} bytes, the image needs at least ${image.length}`);
    expect((await readFile(device)).every((b) => b === 0xaa)).toBe(true);
  });

  it('stops an image without Content-Length at the end of the device and zeroes its first MiB', async () => {
    server = await imageServer(image, { chunked: true });
    const device = await fakeDevice(4 * MIB);
    const error = await writeImage({ ...fast, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeviceTooSmall);
    const written = await readFile(device);
    expect(written.length).toBe(4 * MIB);
    expect(written.subarray(0, MIB).every((b) => b === 0)).toBe(true);
  });

  it('drops a stalled connection after the stall timeout and resumes', async () => {
    server = await imageServer(image, { ranges: true, behaviours: [{ stallAfter: MIB }] });
    const device = await fakeDevice(8 * MIB);
    const result = await writeImage({ ...fast, stallTimeoutMs: 300, url: server.url, checksum: { algo: 'sha256', value: sha256(image) }, device });
    expect(result).toMatchObject({ attempts: 2, resumed: 1 });
    expect((await readFile(device)).subarray(0, image.length).equals(image)).toBe(true);
  });

  it('accepts md5 only when allowed', async () => {
    server = await imageServer(image);
    const device = await fakeDevice(8 * MIB);
    const md5 = createHash('md5').update(image).digest('hex');
    await expect(writeImage({ ...fast, url: server.url, checksum: { algo: 'md5', value: md5 }, device })).rejects.toThrow(
      'md5 image checksums are not allowed here',
    );
    expect(server.requests.length).toBe(0);
    const result = await writeImage({ ...fast, allowMd5: true, url: server.url, checksum: { algo: 'md5', value: md5 }, device });
    expect(result.digest).toBe(md5);
  });

  it('refuses bad image info before any request', async () => {
    const device = await fakeDevice(MIB);
    const base = { url: 'http://127.0.0.1:1/x', checksum: { algo: 'sha256', value: 'a'.repeat(64) }, device };
    await expect(writeImage({ ...base, url: 'ftp://host/x' })).rejects.toThrow(InvalidImageInfo);
    await expect(writeImage({ ...base, checksum: { algo: 'sha1', value: 'a'.repeat(40) } })).rejects.toThrow('"sha1" is not supported');
    await expect(writeImage({ ...base, checksum: { algo: 'sha256', value: 'abc' } })).rejects.toThrow('is not a sha256 digest (64 hex digits)');
    await expect(writeImage({ ...base, blockSize: 4096 })).rejects.toThrow('at least 1 MiB');
    await expect(writeImage({ ...base, device: join(dir, 'missing') })).rejects.toThrow(ImageWriteError);
  });

  it('stops when aborted, zeroing what it had written', async () => {
    server = await imageServer(image, { behaviours: [{ stallAfter: 2 * MIB }] });
    const device = await fakeDevice(8 * MIB);
    const controller = new AbortController();
    const promise = writeImage({
      ...fast,
      url: server.url,
      checksum: { algo: 'sha256', value: sha256(image) },
      device,
      signal: controller.signal,
      onProgress: (bytes) => {
        if (bytes >= MIB) controller.abort(new Error('deploy aborted by the conductor'));
      },
    });
    await expect(promise).rejects.toThrow('deploy aborted by the conductor');
    expect((await readFile(device)).subarray(0, MIB).every((b) => b === 0)).toBe(true);
  });
});
