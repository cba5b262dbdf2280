/**
 * Streaming a whole-disk image from HTTP(S) onto a block device, as IPA's `standby.prepare_image`
 * does for raw images: never holding the image in memory, hashing while writing, verifying the
 * digest at the end.
 *
 * Why it is shaped this way:
 * - Large positional writes (8 MiB by default, never under 1 MiB) on a second thread (`BlockSink`):
 *   the main thread receives into shared blocks, a worker hashes and writes each full block, so
 *   receiving, hashing and the disk work overlap and the kernel sees few, large writes (Node's
 *   small writes ran at half of `dd`'s speed, issue #17; hashing on the main thread cost another
 *   third here). Plain-http bodies of known length are read by the kernel straight into the blocks
 *   (`RawHttpGet`); https, redirects and chunked bodies come through node:http and are copied in.
 * - Transient failures (connection refused or reset, a body cut short, a stall longer than
 *   `stallTimeoutMs`, an HTTP 5xx) are retried `retries` times, IPA's
 *   `image_download_connection_retries`. When the server advertised `Accept-Ranges: bytes`, the retry
 *   asks for the rest only (`Range`, guarded by `If-Range` with the ETag or Last-Modified so a
 *   changed image restarts from zero); otherwise, or when the server answers the range with a full
 *   200, the download restarts from byte 0 with a fresh digest. 4xx statuses are not retried.
 * - **On a digest mismatch, and on any other failure after the first byte reached the device, the
 *   first MiB of the device is overwritten with zeros and synced before the error is thrown**: the
 *   partition table and boot code of a half-written or untrusted image must not boot.
 * - The image may not be larger than the device: checked against Content-Length before the first
 *   write, and against the bytes received when the server sends no length.
 */
import { open, readFile, realpath } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import http from 'node:http';
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BlockSink } from './block-sink.js';
import { RawHttpGet } from './raw-http.js';
import type { BodyTarget } from './raw-http.js';
import { DeviceTooSmall, ImageChecksumMismatch, ImageDownloadError, ImageWriteError, InvalidImageInfo } from './errors.js';

/** Digest algorithms accepted for `image_os_hash_algo`; md5 only when `allowMd5` is set. */
export const IMAGE_HASH_ALGORITHMS = ['md5', 'sha256', 'sha384', 'sha512'] as const;
export type ImageHashAlgorithm = (typeof IMAGE_HASH_ALGORITHMS)[number];
const HEX_LENGTH: Record<ImageHashAlgorithm, number> = { md5: 32, sha256: 64, sha384: 96, sha512: 128 };

const MIB = 1024 * 1024;
/** The region zeroed on failure: the MBR, the primary GPT and the start of the first partition. */
export const WIPE_BYTES = MIB;
const MAX_REDIRECTS = 5;

export interface WriteImageOptions {
  /** http:// or https:// URL of a raw whole-disk image. */
  url: string;
  /** Expected digest (`image_os_hash_algo`/`image_os_hash_value`, or md5 `image_checksum`). */
  checksum: { algo: string; value: string };
  /** Block device (or, in tests, a file) to write to; must exist. */
  device: string;
  signal?: AbortSignal;
  /** Called after each block reaches the device: bytes written so far, image size if known. */
  onProgress?: (bytes: number, total: number | null) => void;
  /** Accept md5 (Ironic's legacy `image_checksum`). Default false. */
  allowMd5?: boolean;
  /** Retries after the first attempt. Default 2 (IPA's image_download_connection_retries). */
  retries?: number;
  /** Pause before a retry. Default 10 s (IPA's image_download_connection_retry_interval). */
  retryDelayMs?: number;
  /** A connection that sends nothing for this long is dropped and retried. Default 60 s. */
  stallTimeoutMs?: number;
  /** Bytes per device write: a multiple of 4096, at least 1 MiB. Default 8 MiB. */
  blockSize?: number;
  /**
   * Write with O_DIRECT where the device accepts it (default true); false forces the page cache.
   * Either way the device is fsynced before the digest is checked.
   */
  direct?: boolean;
  /** Device capacity in bytes; by default from `stat` (files) or sysfs (block devices). */
  deviceSize?: number;
  /** Directory standing for `/sys`, to size block devices. Default `/sys`. */
  sysRoot?: string;
  /** Extra CA certificates (PEM) for https image servers. */
  ca?: string | Buffer;
  /** Refuse an image whose first sector holds no partition table (the agent's deploys). Default false. */
  wholeDisk?: boolean;
  /**
   * Receive plain-http bodies of known length straight into the write blocks (`RawHttpGet`;
   * default true); false, or https, redirects and bodies without a length, use node:http.
   */
  rawHttp?: boolean;
}

export interface WriteImageResult {
  /** Image size in bytes (all of it written). */
  bytes: number;
  algo: ImageHashAlgorithm;
  /** Hex digest computed while streaming (equal to the expected one). */
  digest: string;
  /** HTTP requests made, redirects excluded. */
  attempts: number;
  /** Retries that continued with a Range request instead of restarting. */
  resumed: number;
  /** Whether full blocks were written with O_DIRECT (false where the file system refuses it). */
  direct: boolean;
  seconds: number;
  /**
   * Where the seconds went: hashing and device writes (with the final fsync) on the writer thread,
   * and the receiving side waiting for the writer (0 when the network was the slower half).
   */
  timings: { hash_s: number; write_s: number; wait_s: number };
}

/** A failure worth another attempt. */
class Transient extends Error {}

function checkChecksum(options: WriteImageOptions): { algo: ImageHashAlgorithm; expected: string } {
  const algo = options.checksum.algo.trim().toLowerCase();
  if (!(IMAGE_HASH_ALGORITHMS as readonly string[]).includes(algo)) {
    throw new InvalidImageInfo(`image checksum algorithm "${options.checksum.algo}" is not supported (valid: ${IMAGE_HASH_ALGORITHMS.join(', ')})`);
  }
  if (algo === 'md5' && !options.allowMd5) {
    throw new InvalidImageInfo('md5 image checksums are not allowed here; give image_os_hash_algo sha256 or sha512');
  }
  const expected = options.checksum.value.trim().toLowerCase();
  const length = HEX_LENGTH[algo as ImageHashAlgorithm];
  if (!new RegExp(`^[0-9a-f]{${length}}$`).test(expected)) {
    throw new InvalidImageInfo(`image checksum "${options.checksum.value}" is not a ${algo} digest (${length} hex digits)`);
  }
  return { algo: algo as ImageHashAlgorithm, expected };
}

function checkUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidImageInfo(`image URL ${JSON.stringify(url)} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidImageInfo(`image URL ${url} is not http:// or https://`);
  }
  return parsed;
}

/**
 * The magic numbers of the virtual-disk formats an image server may hand out under a raw image's
 * name. Written as they are, they leave a disk that boots nothing while the deploy "succeeds"
 * (the checksum matches the file), so the first bytes are checked before anything is written.
 */
const NOT_RAW: ReadonlyArray<readonly [string, Buffer]> = [
  ['qcow2', Buffer.from('QFI\xfb', 'latin1')],
  ['vmdk', Buffer.from('KDMV', 'latin1')],
  ['vhdx', Buffer.from('vhdxfile', 'latin1')],
  ['vdi', Buffer.from('<<< ', 'latin1')],
];

/**
 * Refuses (before the first write) an image whose first bytes say it is not a raw disk image, and,
 * with `wholeDisk`, one whose first sector has no partition table (MBR or GPT's protective MBR
 * both end it with 55 AA): a partition image written to a whole disk boots nothing.
 */
function checkRaw(url: string, first: Buffer, wholeDisk: boolean): void {
  for (const [format, magic] of NOT_RAW) {
    if (first.length >= magic.length && first.subarray(0, magic.length).equals(magic)) {
      throw new InvalidImageInfo(`the image at ${url} is a ${format} image, not a raw disk image; convert it (qemu-img convert -O raw)`);
    }
  }
  if (wholeDisk && first.length >= 512 && !(first[510] === 0x55 && first[511] === 0xaa)) {
    throw new InvalidImageInfo(`the image at ${url} has no partition table in its first sector, so it is no whole-disk image (partition images are not supported)`);
  }
}

/** Capacity of `device` in bytes: `stat` size for a file, sysfs sector count for a block device. */
export async function deviceBytes(device: string, sysRoot = '/sys'): Promise<number> {
  const handle = await open(device, 'r');
  try {
    return await deviceCapacity(handle, device, sysRoot);
  } finally {
    await handle.close();
  }
}

/** Capacity of the target: `stat` size for a file, sysfs sector count for a block device. */
async function deviceCapacity(handle: FileHandle, device: string, sysRoot: string): Promise<number> {
  const stat = await handle.stat();
  if (stat.isFile()) return stat.size;
  if (!stat.isBlockDevice()) throw new ImageWriteError(device, 'not a block device');
  const kname = basename(await realpath(device));
  const sectors = Number((await readFile(join(sysRoot, 'class', 'block', kname, 'size'), 'latin1')).trim());
  if (!Number.isSafeInteger(sectors) || sectors <= 0) throw new ImageWriteError(device, `sysfs gives no size for ${kname}`);
  return sectors * 512;
}

/** `Content-Range: bytes <start>-<end>/<total>` → start and total (total may be `*`). */
function parseContentRange(header: string | undefined): { start: number; total: number | null } | null {
  const m = header === undefined ? null : /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(header.trim());
  if (!m) return null;
  return { start: Number(m[1]), total: m[3] === '*' ? null : Number(m[3]) };
}

interface RequestResult {
  response: IncomingMessage;
  url: URL;
}

/** One GET, following up to five redirects; resolves with the final response's headers. */
async function get(url: URL, headers: Record<string, string>, options: WriteImageOptions, stallMs: number): Promise<RequestResult> {
  let current = url;
  for (let hop = 0; ; hop++) {
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const lib = current.protocol === 'https:' ? https : http;
      const request = lib.get(current, {
        headers,
        signal: options.signal,
        ...(options.ca !== undefined && current.protocol === 'https:' ? { ca: options.ca } : {}),
      });
      request.setTimeout(stallMs, () => request.destroy(new Transient(`no data for ${stallMs / 1000} s`)));
      request.once('response', resolve);
      request.once('error', reject);
    });
    const location = response.headers.location;
    if (response.statusCode !== undefined && [301, 302, 303, 307, 308].includes(response.statusCode) && location) {
      response.resume();
      if (hop >= MAX_REDIRECTS) throw new ImageDownloadError(url.href, `more than ${MAX_REDIRECTS} redirects`);
      current = new URL(location, current);
      if (current.protocol !== 'http:' && current.protocol !== 'https:') {
        throw new ImageDownloadError(url.href, `redirected to ${current.protocol} URL`);
      }
      continue;
    }
    return { response, url: current };
  }
}

/** One response, from node:http or the raw reader, as the write loop uses it. */
interface Fetched {
  status: number;
  statusMessage: string;
  header(name: string): string | undefined;
  /** Drops the body (the connection is not reused). */
  discard(): void;
  /**
   * Streams the body to the sink; `onBytes` sees each piece first and may throw to stop. Resolves
   * true when the transport saw the whole body.
   */
  body(onBytes: (view: Buffer) => void): Promise<boolean>;
}

/** Where bodies go: the sink's copying and zero-copy interfaces, device errors already wrapped. */
interface SinkPort extends BodyTarget {
  push(chunk: Buffer): Promise<void>;
}

async function fetchImage(url: URL, headers: Record<string, string>, options: WriteImageOptions, stallMs: number, sink: SinkPort): Promise<Fetched> {
  if (url.protocol === 'http:' && options.rawHttp !== false) {
    const raw = await RawHttpGet.open(url, headers, { stallMs, ...(options.signal ? { signal: options.signal } : {}) });
    if (raw.usable) {
      return {
        status: raw.status,
        statusMessage: raw.statusMessage,
        header: (name) => raw.headers[name],
        discard: () => raw.destroy(),
        body: async (onBytes) => (await raw.receive(sink, onBytes)) === raw.length,
      };
    }
    // A redirect or a body of unknown length: node:http follows and parses those.
    raw.destroy();
  }
  const { response } = await get(url, headers, options, stallMs);
  return {
    status: response.statusCode ?? 0,
    statusMessage: response.statusMessage ?? '',
    header: (name) => {
      const value = response.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    discard: () => response.destroy(),
    body: async (onBytes) => {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        onBytes(chunk);
        await sink.push(chunk);
      }
      return response.complete;
    },
  };
}

/**
 * Streams the image at `url` onto `device`, verifies its digest and returns what was written.
 * Throws `InvalidImageInfo` (nothing done), `DeviceTooSmall`, `ImageDownloadError`,
 * `ImageChecksumMismatch` or `ImageWriteError`; on all but the first, if anything had been written,
 * the device's first MiB has been zeroed and synced.
 */
export async function writeImage(options: WriteImageOptions): Promise<WriteImageResult> {
  const started = performance.now();
  const { algo, expected } = checkChecksum(options);
  const url = checkUrl(options.url);
  const blockSize = options.blockSize ?? 8 * MIB;
  if (!Number.isSafeInteger(blockSize) || blockSize < MIB || blockSize % 4096 !== 0) {
    throw new InvalidImageInfo(`block size ${blockSize} must be a multiple of 4096 of at least 1 MiB`);
  }
  const retries = options.retries ?? 2;
  const retryDelayMs = options.retryDelayMs ?? 10_000;
  const stallMs = options.stallTimeoutMs ?? 60_000;

  let handle: FileHandle;
  try {
    // r+: the device must exist; a typo must not create a regular file under /dev.
    handle = await open(options.device, 'r+');
  } catch (error) {
    throw new ImageWriteError(options.device, (error as Error).message, { cause: error });
  }
  let sink: BlockSink | null = null;
  let capacity = 0;
  try {
    capacity = options.deviceSize ?? (await deviceCapacity(handle, options.device, options.sysRoot ?? '/sys'));
    let total: number | null = null;
    sink = new BlockSink({
      path: options.device,
      algo,
      blockSize,
      direct: options.direct ?? true,
      onWritten: (end) => options.onProgress?.(end, total),
    });
    const active = sink;
    // The worker's failures are the device's: never mistaken for a transient download error.
    const asDeviceError = (error: unknown) => new ImageWriteError(options.device, (error as Error).message, { cause: error });
    const onDevice = async <T>(step: () => Promise<T>): Promise<T> => {
      try {
        return await step();
      } catch (error) {
        throw asDeviceError(error);
      }
    };
    const port: SinkPort = {
      region: () => active.region(),
      commit: (n) => {
        try {
          return active.commit(n);
        } catch (error) {
          throw asDeviceError(error);
        }
      },
      writable: () => onDevice(() => active.writable()),
      push: (chunk) => onDevice(() => active.push(chunk)),
    };

    let received = 0;
    let validator: string | null = null;
    let acceptRanges = false;
    let attempts = 0;
    let resumed = 0;
    let lastError: Error | null = null;

    // The image's first sector, checked (checkRaw) before any of it can reach the device: blocks
    // are at least 1 MiB, so nothing is handed over before the first 512 bytes are here.
    let first = Buffer.alloc(0);
    const restart = async (): Promise<void> => {
      await onDevice(() => active.reset());
      received = 0;
      first = Buffer.alloc(0);
    };
    const onBytes = (view: Buffer): void => {
      if (first.length < 512) {
        first = Buffer.concat([first, view.subarray(0, 512 - first.length)]);
        if (first.length === 512) checkRaw(url.href, first, options.wholeDisk ?? false);
      }
      received += view.length;
      if (received > capacity) throw new DeviceTooSmall(options.device, capacity, received);
    };

    for (;;) {
      options.signal?.throwIfAborted();
      if (attempts > retries) {
        throw new ImageDownloadError(url.href, `${lastError?.message ?? 'failed'} (after ${attempts} attempts)`, { cause: lastError });
      }
      if (attempts > 0) await sleep(retryDelayMs, undefined, { signal: options.signal });
      attempts++;
      const resume = received > 0 && acceptRanges;
      const headers: Record<string, string> = { 'user-agent': 'ironring-agent' };
      if (resume) {
        headers.range = `bytes=${received}-`;
        if (validator !== null) headers['if-range'] = validator;
      }
      let response: Fetched;
      try {
        response = await fetchImage(url, headers, options, stallMs, port);
      } catch (error) {
        if (error instanceof ImageDownloadError || options.signal?.aborted) throw error;
        lastError = error as Error;
        continue;
      }
      const status = response.status;
      if (status !== 200 && status !== 206) {
        response.discard();
        const reason = `HTTP ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}`;
        if (status >= 500) {
          lastError = new Transient(reason);
          continue;
        }
        throw new ImageDownloadError(url.href, reason);
      }
      const lengthHeader = response.header('content-length');
      const length = lengthHeader === undefined ? null : Number(lengthHeader);
      if (length !== null && !(Number.isSafeInteger(length) && length >= 0)) {
        response.discard();
        throw new ImageDownloadError(url.href, `invalid Content-Length ${JSON.stringify(lengthHeader)}`);
      }
      if (status === 206) {
        const range = parseContentRange(response.header('content-range'));
        if (!resume || range === null || range.start !== received) {
          // A range we did not ask for, or not where we are: start over without Range.
          response.discard();
          acceptRanges = false;
          await restart();
          lastError = new Transient(`unexpected partial content ${response.header('content-range') ?? ''}`.trim());
          continue;
        }
        resumed++;
        if (range.total !== null) total = range.total;
      } else {
        if (received > 0) await restart();
        total = length;
        acceptRanges = response.header('accept-ranges')?.toLowerCase() === 'bytes';
        validator = response.header('etag') ?? response.header('last-modified') ?? null;
        // A weak ETag cannot guard a range (RFC 9110 §13.1.5).
        if (validator?.startsWith('W/')) validator = response.header('last-modified') ?? null;
      }
      if (total !== null && total > capacity) {
        response.discard();
        throw new DeviceTooSmall(options.device, capacity, total);
      }
      const end = status === 206 ? (total ?? (length === null ? null : received + length)) : length;
      try {
        const complete = await response.body(onBytes);
        if (!complete || (end !== null && received !== end)) {
          throw new Transient(`connection closed after ${received} of ${end ?? 'unknown'} bytes`);
        }
      } catch (error) {
        if (error instanceof DeviceTooSmall || error instanceof ImageWriteError || error instanceof InvalidImageInfo || options.signal?.aborted) throw error;
        lastError = error instanceof Error ? error : new Error(String(error));
        continue;
      }
      break;
    }

    // An image shorter than a sector: its bytes are checked before finish writes them.
    if (first.length < 512) checkRaw(url.href, first, options.wholeDisk ?? false);
    const digest = await onDevice(() => active.finish());
    if (digest !== expected) throw new ImageChecksumMismatch(url.href, algo, expected, digest);
    const t = active.timings;
    const timings = { hash_s: t.hashMs / 1000, write_s: t.writeMs / 1000, wait_s: t.waitMs / 1000 };
    return { bytes: received, algo, digest, attempts, resumed, direct: active.direct ?? false, seconds: (performance.now() - started) / 1000, timings };
  } catch (error) {
    // Aborted: whatever broke first (the socket, a sleep), the caller's reason is the story.
    const thrown: unknown = options.signal?.aborted ? options.signal.reason : error;
    if (sink) {
      // Stop the writer thread first: no block of this image may land after the zeros.
      await sink.close();
      if (sink.handedOver > 0) await wipeStart(handle, Math.min(WIPE_BYTES, capacity), thrown);
    }
    throw thrown;
  } finally {
    await sink?.close();
    await handle.close().catch(() => undefined);
  }
}

/**
 * Zeroes and syncs the first MiB after a failed write. If that fails too, the original error's
 * message says so (the agent reports it; an operator must not trust the disk).
 */
async function wipeStart(handle: FileHandle, length: number, original: unknown): Promise<void> {
  try {
    const zeros = Buffer.alloc(length);
    let done = 0;
    while (done < zeros.length) done += (await handle.write(zeros, done, zeros.length - done, done)).bytesWritten;
    await handle.sync();
  } catch (error) {
    if (original instanceof Error) original.message += `; zeroing the first MiB failed too: ${(error as Error).message}`;
  }
}
