/**
 * The image cache: content-addressed master files (named after their checksum) that node files are
 * hard links to. An image enters the cache only after its checksum was verified in a temp file, so a
 * master's name is a promise about its content. Downloads are shared: within a process through a
 * promise per master, across processes by linking the verified temp file into place (whoever comes
 * second finds the master there and uses it). Clean-up removes only masters nothing else links to.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { link, mkdir, readdir, rm, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { isTempName, statOrNull, tempPathFor } from './atomic-fs.js';
import { ImageChecksumMismatch, ImageSourceNotAllowed } from './errors.js';
import { checkFileSource } from './file-source.js';
import { checkImageUrl, fetchImageTo } from './image-fetch.js';
import type { FetchFunction } from './image-fetch.js';
import type { BootLogger, ImageSource } from './types.js';
import { parseChecksum } from './validate.js';

const DAY = 24 * 60 * 60_000;
/**
 * How long an admitted `file://` URL is trusted without resolving it again: a take-over prepares
 * thousands of nodes naming the same few images, and the check of a URL whose master is already
 * cached only decides whether the URL may be named (downloads always check afresh).
 */
const ADMIT_TTL_MS = 60_000;
const MASTER_NAME = /^(sha256|sha512|md5)-[0-9a-f]+$/;

/** Options of an image cache. */
export interface ImageCacheOptions {
  /** Directory of the master files (`master_images`); on the same file system as the boot roots so node files can be hard links. */
  dir: string;
  /** A master with no other link and unused for longer than this is removed by `clean`. Default 7 days. */
  ttlMs?: number;
  /** `clean` removes unlinked masters, least recently used first, while the cache is bigger than this. Default 20 GiB. */
  maxBytes?: number;
  /** Milliseconds since the epoch; injectable so tests need not wait for a TTL. */
  now?: () => number;
  /** Used for http(s) sources. Default: the global `fetch`. */
  fetch?: FetchFunction;
  /** Abort a download after this long. Default 30 minutes. */
  downloadTimeoutMs?: number;
  /** fsync downloads before they enter the cache. Default true. */
  durable?: boolean;
  /** Record a use on a master at most this often (each stamp is an inode write). Default 1 hour. */
  touchIntervalMs?: number;
  /**
   * Directories `file://` sources must lie in (`[conductor] file_url_allowed_paths`): checked,
   * symlinks resolved, before a cached master is handed out and again when the file is opened.
   * Empty disables `file://`; undefined means no allowed list (the blocked system directories of
   * `BLOCKED_FILE_PATHS` are refused either way).
   */
  fileUrlAllowedPaths?: readonly string[];
  /** Temp files older than this are leftovers of a killed process; `clean` removes them. Default 1 day. */
  staleTempMs?: number;
  logger?: BootLogger;
}

/** One master file. */
export interface CacheEntry {
  name: string;
  path: string;
  size: number;
  /** Hard links to it, the master itself included: 1 means no node uses it. */
  links: number;
  /** When it was last used (linked, pre-cached, read). */
  lastUsedMs: number;
}

/** What `clean` did. */
export interface CleanReport {
  /** Master files removed, by name, in removal order. */
  removed: string[];
  freedBytes: number;
  /** Bytes of master files left (linked ones included). */
  remainingBytes: number;
}

/** File name of the master for a checksum: `sha256-<hex>`. Throws `InvalidBootInput` for a bad checksum. */
export function masterName(checksum: string, field?: string): string {
  const { algorithm, hex } = parseChecksum(checksum, field);
  return `${algorithm}-${hex}`;
}

/** Hex digest of a file. */
export async function hashFile(path: string, algorithm: string): Promise<string> {
  const hash = createHash(algorithm);
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/** A content-addressed, download-once cache of boot images. See the module comment. */
export class ImageCache {
  readonly dir: string;
  /** Downloads completed by this instance (the rest were found in the cache or shared). */
  downloads = 0;
  private readonly inflight = new Map<string, Promise<string>>();
  private readonly held = new Map<string, number>();
  /** When this instance last stamped each path: saves the stat of a touch that would be skipped. */
  private readonly touched = new Map<string, number>();
  /** `file://` URLs admitted by {@link checkSource}, with when. */
  private readonly admitted = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly options: ImageCacheOptions) {
    this.dir = options.dir;
    this.now = options.now ?? Date.now;
  }

  /** Path of the master for `image` (present or not). */
  pathFor(image: ImageSource, field?: string): string {
    return join(this.dir, masterName(image.checksum, field));
  }

  /** True when the master for `image` is in the cache. */
  async has(image: ImageSource): Promise<boolean> {
    return (await statOrNull(this.pathFor(image))) !== null;
  }

  /**
   * Returns the path of the master for `image`, downloading and verifying it first when it is not
   * cached. Concurrent calls for the same checksum share one download. A `file://` source outside
   * the allowed directories is refused even when its checksum names a master already cached: the
   * URL is what the request asked for, and it is not one this conductor serves from.
   */
  ensure(image: ImageSource, field?: string): Promise<string> {
    const name = masterName(image.checksum, field);
    const url = checkImageUrl(image.url);
    const share = (): Promise<string> => {
      let pending = this.inflight.get(name);
      if (pending === undefined) {
        pending = this.fill(image, name).finally(() => this.inflight.delete(name));
        this.inflight.set(name, pending);
      }
      return pending;
    };
    if (url.protocol !== 'file:') return share();
    return this.checkSource(image.url).then(share);
  }

  /**
   * Throws `ImageSourceNotAllowed` when `url` is a `file://` source outside the allowed directories
   * (symlinks resolved) or under a blocked system directory; anything else passes. Called before a
   * cached master is handed out for a URL, by `ensure` and by the boot environment's fast path.
   * A source file gone since its master was cached is no reason to refuse: only a refusal throws;
   * a download, when one is needed, checks again and reports the rest.
   */
  async checkSource(url: string): Promise<void> {
    const parsed = checkImageUrl(url);
    if (parsed.protocol !== 'file:') return;
    const now = this.now();
    const at = this.admitted.get(url);
    if (at !== undefined && now - at < ADMIT_TTL_MS) return;
    try {
      await checkFileSource(parsed, this.options.fileUrlAllowedPaths);
    } catch (err) {
      if (err instanceof ImageSourceNotAllowed) throw err;
      return;
    }
    if (this.admitted.size > 10_000) this.admitted.clear();
    this.admitted.set(url, now);
  }

  /**
   * Runs `fn` with the master of `image` present and protected from this instance's `clean` (another
   * process's clean may still remove it; `fn` should retry `ensure` on ENOENT).
   */
  async use<T>(image: ImageSource, fn: (master: string) => Promise<T>, field?: string): Promise<T> {
    const name = masterName(image.checksum, field);
    this.held.set(name, (this.held.get(name) ?? 0) + 1);
    try {
      return await fn(await this.ensure(image, field));
    } finally {
      const n = (this.held.get(name) ?? 1) - 1;
      if (n === 0) this.held.delete(name);
      else this.held.set(name, n);
    }
  }

  /** Re-hashes the master of `image`; false when it is missing or its content no longer matches. */
  async verify(image: ImageSource): Promise<boolean> {
    const { algorithm, hex } = parseChecksum(image.checksum);
    const path = this.pathFor(image);
    if ((await statOrNull(path)) === null) return false;
    return (await hashFile(path, algorithm)) === hex;
  }

  /** Removes the master of `image` from the cache (node links keep their content). True when removed. */
  async evict(image: ImageSource): Promise<boolean> {
    const path = this.pathFor(image);
    const existed = (await statOrNull(path)) !== null;
    await rm(path, { force: true });
    return existed;
  }

  /**
   * Records a use of a master (or of a node file linked to one: same inode) in its atime, at most
   * once per `touchIntervalMs` unless `force`.
   */
  async touch(path: string, force = false): Promise<void> {
    const interval = this.options.touchIntervalMs ?? 60 * 60_000;
    const now = this.now();
    if (!force && now - (this.touched.get(path) ?? -Infinity) < interval) return;
    const st = await statOrNull(path);
    if (st === null) return;
    const lastUse = Math.max(st.atimeMs, st.mtimeMs);
    if (!force && now - lastUse < interval) {
      // Used recently enough already (a fresh download, say): nothing to write, and no need to look
      // again before the interval has passed since that use — a take-over touches the same masters
      // for thousands of nodes.
      this.remember(path, lastUse);
      return;
    }
    // atime, set explicitly: mtime stays, so copies made from this master still compare as current.
    await utimes(path, now / 1000, st.mtime);
    this.remember(path, now);
  }

  private remember(path: string, usedAt: number): void {
    if (this.touched.size > 10_000) this.touched.clear();
    this.touched.set(path, usedAt);
  }

  /** The master files in the cache. */
  async list(): Promise<CacheEntry[]> {
    const names = await this.readNames();
    const entries: CacheEntry[] = [];
    for (const name of names.filter((n) => MASTER_NAME.test(n))) {
      const st = await statOrNull(join(this.dir, name), false);
      if (st === null || !st.isFile()) continue;
      entries.push({ name, path: join(this.dir, name), size: st.size, links: st.nlink, lastUsedMs: Math.max(st.atimeMs, st.mtimeMs) });
    }
    return entries;
  }

  /**
   * Removes masters no node links to (`links === 1`): first those unused for longer than the TTL,
   * then, least recently used first, while the cache is over its size limit. Also removes temp files
   * left by killed processes. Masters in use by this instance are skipped.
   */
  async clean(): Promise<CleanReport> {
    const now = this.now();
    const ttl = this.options.ttlMs ?? 7 * DAY;
    const maxBytes = this.options.maxBytes ?? 20 * 1024 ** 3;
    await this.removeStaleTemps(now);
    const entries = await this.list();
    let total = entries.reduce((sum, e) => sum + e.size, 0);
    const candidates = entries
      .filter((e) => e.links === 1 && !this.held.has(e.name) && !this.inflight.has(e.name))
      .sort((a, b) => a.lastUsedMs - b.lastUsedMs || a.name.localeCompare(b.name));
    const report: CleanReport = { removed: [], freedBytes: 0, remainingBytes: total };
    for (const entry of candidates) {
      const expired = now - entry.lastUsedMs > ttl;
      if (!expired && total <= maxBytes) continue;
      // Re-check just before removing: a node may have linked it since the listing.
      const st = await statOrNull(entry.path, false);
      if (st === null || st.nlink !== 1 || this.held.has(entry.name)) continue;
      await rm(entry.path, { force: true });
      total -= entry.size;
      report.removed.push(entry.name);
      report.freedBytes += entry.size;
      this.options.logger?.info({ image: entry.name, bytes: entry.size, expired }, 'removed cached image');
    }
    report.remainingBytes = total;
    return report;
  }

  private async fill(image: ImageSource, name: string): Promise<string> {
    const path = join(this.dir, name);
    if ((await statOrNull(path)) !== null) return path;
    await mkdir(this.dir, { recursive: true });
    const { algorithm, hex } = parseChecksum(image.checksum);
    const tmp = tempPathFor(path);
    try {
      const got = await fetchImageTo(image.url, tmp, {
        algorithm,
        timeoutMs: this.options.downloadTimeoutMs,
        durable: this.options.durable,
        fetch: this.options.fetch,
        fileUrlAllowedPaths: this.options.fileUrlAllowedPaths,
      });
      // Never the computed digest: it would tell the requester a checksum of whatever the URL named.
      if (got.hex !== hex) throw new ImageChecksumMismatch(image.url, `${algorithm}:${hex}`);
      try {
        // link, not rename: never replace a master another process put there meanwhile (nodes link to its inode).
        await link(tmp, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      this.downloads += 1;
      this.options.logger?.info({ image: name, url: image.url, bytes: got.bytes }, 'cached image');
      return path;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  private async removeStaleTemps(now: number): Promise<void> {
    const maxAge = this.options.staleTempMs ?? DAY;
    for (const name of await this.readNames()) {
      if (!isTempName(name)) continue;
      const st = await statOrNull(join(this.dir, name), false);
      if (st !== null && now - st.mtimeMs > maxAge) await rm(join(this.dir, name), { force: true });
    }
  }

  private async readNames(): Promise<string[]> {
    try {
      return await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }
}
