/**
 * Fetching one image into a local file while hashing it, from `file://` or `http(s)://`. The caller
 * owns the destination (a temp file) and decides what to do with it once the digest is known.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ImageDownloadFailed, ImageSourceNotAllowed, UnsupportedImageSource } from './errors.js';
import { openFileSource } from './file-source.js';
import type { ChecksumAlgorithm } from './types.js';

/** The `fetch` the cache uses for http(s); injectable for tests and proxies. */
export type FetchFunction = (url: string, init: { signal: AbortSignal }) => Promise<Response>;

/** Options of one download. */
export interface FetchImageOptions {
  algorithm: ChecksumAlgorithm;
  /** Abort the download after this long. Default 30 minutes (a multi-GB ramdisk on a slow link). */
  timeoutMs?: number;
  /** fsync the file once written. Default true. */
  durable?: boolean;
  fetch?: FetchFunction;
  /**
   * Directories `file://` sources must lie in (`[conductor] file_url_allowed_paths`), symlinks
   * resolved; empty disables `file://`. Undefined: no allowed list (library use and unit tests);
   * the system directories of `BLOCKED_FILE_PATHS` are refused either way.
   */
  fileUrlAllowedPaths?: readonly string[];
}

/** Throws `UnsupportedImageSource` unless the URL is file, http or https. */
export function checkImageUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsupportedImageSource(url);
  }
  if (!['file:', 'http:', 'https:'].includes(parsed.protocol)) throw new UnsupportedImageSource(url);
  return parsed;
}

/** Copies the image at `url` into `dest` (created exclusively) and returns its hex digest and size. */
export async function fetchImageTo(url: string, dest: string, options: FetchImageOptions): Promise<{ hex: string; bytes: number }> {
  const parsed = checkImageUrl(url);
  const hash = createHash(options.algorithm);
  let bytes = 0;
  const hasher = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  const signal = AbortSignal.timeout(options.timeoutMs ?? 30 * 60_000);
  let source: Readable;
  try {
    if (parsed.protocol === 'file:') {
      const handle = await openFileSource(parsed, options.fileUrlAllowedPaths);
      source = handle.createReadStream();
    } else {
      const response = await (options.fetch ?? fetch)(url, { signal });
      if (!response.ok || response.body === null) {
        await response.body?.cancel();
        throw new ImageDownloadFailed(url, `HTTP ${response.status}`);
      }
      source = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    }
    await pipeline(source, hasher, createWriteStream(dest, { flags: 'wx', mode: 0o644 }), { signal });
    if (options.durable ?? true) {
      const handle = await open(dest, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  } catch (err) {
    if (err instanceof ImageDownloadFailed || err instanceof ImageSourceNotAllowed) throw err;
    throw new ImageDownloadFailed(url, (err as Error).message, { cause: err });
  }
  return { hex: hash.digest('hex'), bytes };
}
