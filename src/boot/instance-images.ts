/**
 * Instance images a conductor converts and serves for the `direct` deploy, as Ironic does with
 * `force_raw_images` and `image_download_source = http`: a qcow2 image is downloaded once into the
 * image cache (checksum verified), converted to raw with `qemu-img`, and published on this
 * conductor's HTTP boot server under `images/`, where the deploy agent streams it to the disk. The
 * agent gets the raw image's URL and sha256, so it verifies what it wrote against what the
 * conductor converted.
 *
 * A staging runs in the background: `stage` starts it (or joins the one running) and answers
 * "not yet", "ready" or "failed" at once — a heartbeat never waits minutes for a conversion. Each
 * node that uses a published image holds it until `release`; the link goes when nobody holds it.
 *
 * qemu-img reads a file from outside: it is told the format (`-f qcow2`, no probing), and an image
 * that names a backing file or an external data file is refused (either would make it read other
 * files of this host), as is one whose virtual size exceeds the limit or the free space.
 */
import { execFile } from 'node:child_process';
import { link, mkdir, readFile, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { linkInto, statOrNull, tempPathFor, writeFileAtomic } from './atomic-fs.js';
import { hashFile, masterName } from './image-cache.js';
import type { ImageCache } from './image-cache.js';
import type { BootLogger, ImageSource } from './types.js';

const run = promisify(execFile);

/** The directory under the HTTP root that converted images are published in. */
export const PUBLISHED_IMAGES_DIR = 'images';

/** A raw image ready for the agent. */
export interface StagedImage {
  url: string;
  /** sha256 of the raw image (lower-case hex). */
  sha256: string;
  bytes: number;
}

export type StageStatus = { state: 'staging' } | { state: 'ready'; image: StagedImage } | { state: 'failed'; error: string };

export interface InstanceImagesOptions {
  cache: ImageCache;
  /** The HTTP boot server's root and its URL as nodes reach it. */
  httpRoot: string;
  httpUrl: string;
  /** Default `qemu-img`. */
  qemuImg?: string;
  /** Largest virtual size accepted. Default 2 TiB. */
  maxVirtualBytes?: number;
  /** Longest a conversion may take. Default 1 hour. */
  convertTimeoutMs?: number;
  logger?: BootLogger;
}

interface QemuImgInfo {
  format?: string;
  'virtual-size'?: number;
  'backing-filename'?: string;
  'full-backing-filename'?: string;
  'format-specific'?: { data?: { 'data-file'?: string } };
}

/** Converts and publishes qcow2 instance images; see the module comment. */
export class InstanceImages {
  private readonly jobs = new Map<string, { status: StageStatus; holders: Set<string> }>();
  private readonly running = new Set<Promise<void>>();
  private readonly published: string;

  constructor(private readonly options: InstanceImagesOptions) {
    this.published = join(options.httpRoot, PUBLISHED_IMAGES_DIR);
  }

  /**
   * Starts or joins the staging of `source` (a qcow2 image) for `node` and answers where it is.
   * Never throws for the image's own faults: they come back as `failed`. A failed staging is
   * tried again only when `retry` is set (a new deploy asks; the heartbeats of the deploy that
   * saw the failure do not, so they all report the same one).
   */
  stage(node: string, source: ImageSource, retry = false): StageStatus {
    const key = masterName(source.checksum, 'instance_info.image_checksum');
    let job = this.jobs.get(key);
    if (job === undefined || (job.status.state === 'failed' && retry)) {
      const fresh = { status: { state: 'staging' } as StageStatus, holders: new Set<string>(job?.holders ?? []) };
      this.jobs.set(key, fresh);
      job = fresh;
      const done: Promise<void> = this.convert(source, key)
        .then(
          async (image) => {
            fresh.status = { state: 'ready', image };
            // Released while it converted, and not asked for again since: nobody will unpublish it later.
            if (!this.jobs.has(key)) await this.unpublish(key);
          },
          (err: unknown) => {
            fresh.status = { state: 'failed', error: (err as Error).message };
            this.options.logger?.warn({ url: source.url, err: (err as Error).message }, 'could not stage the instance image');
          },
        )
        .catch((err: unknown) => this.options.logger?.warn({ key, err: (err as Error).message }, 'could not unpublish a released instance image'))
        .finally(() => this.running.delete(done));
      this.running.add(done);
    }
    for (const other of this.jobs.values()) if (other !== job) other.holders.delete(node);
    job.holders.add(node);
    return job.status;
  }

  /** `node` no longer needs its image: unpublished when no other node holds it. */
  async release(node: string): Promise<void> {
    for (const [key, job] of this.jobs) {
      if (!job.holders.delete(node) || job.holders.size > 0) continue;
      this.jobs.delete(key);
      // Still converting: the conversion unpublishes when it ends (see stage).
      if (job.status.state === 'ready') await this.unpublish(key);
    }
  }

  /** Resolves when no conversion is running (for shutdown and tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private async unpublish(key: string): Promise<void> {
    await rm(join(this.published, `${key}.raw`), { force: true });
    await rm(join(this.published, `${key}.raw.sha256`), { force: true });
  }

  /** Downloads (cache), checks, converts and publishes; returns what the agent needs. */
  private async convert(source: ImageSource, key: string): Promise<StagedImage> {
    const publishedFile = join(this.published, `${key}.raw`);
    const digestFile = `${publishedFile}.sha256`;
    const url = `${this.options.httpUrl.replace(/\/+$/, '')}/${PUBLISHED_IMAGES_DIR}/${key}.raw`;
    // Published before (this process or an earlier one): the digest file is written first.
    const [st, known] = await Promise.all([statOrNull(publishedFile), readFile(digestFile, 'utf8').catch(() => null)]);
    if (st !== null && known !== null && /^[0-9a-f]{64}$/.test(known.trim())) return { url, sha256: known.trim(), bytes: st.size };

    return this.options.cache.use(source, async (qcow2) => {
      const info = await this.inspect(qcow2);
      const virtual = info['virtual-size']!;
      const fs = await statfs(this.options.cache.dir);
      const free = fs.bavail * fs.bsize;
      if (virtual > free) throw new Error(`the raw image needs ${virtual} bytes; ${free} are free in ${this.options.cache.dir}`);

      const raw = tempPathFor(join(this.options.cache.dir, `${key}.raw`));
      const started = performance.now();
      try {
        await run(this.options.qemuImg ?? 'qemu-img', ['convert', '-q', '-f', 'qcow2', '-O', 'raw', qcow2, raw], { timeout: this.options.convertTimeoutMs ?? 3_600_000 });
        const sha256 = await hashFile(raw, 'sha256');
        // Into the cache by its own content's name, so a second qcow2 of the same disk shares it.
        const master = join(this.options.cache.dir, `sha256-${sha256}`);
        if ((await statOrNull(master)) === null) await link(raw, master).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
        await mkdir(this.published, { recursive: true });
        await writeFileAtomic(digestFile, `${sha256}\n`);
        await linkInto(master, publishedFile);
        this.options.logger?.info({ source: source.url, bytes: virtual, ms: Math.round(performance.now() - started) }, 'converted the instance image to raw');
        return { url, sha256, bytes: virtual };
      } finally {
        await rm(raw, { force: true });
      }
    }, 'instance_info.image_checksum');
  }

  /** `qemu-img info` of a file that must be a self-contained qcow2 image. */
  private async inspect(file: string): Promise<QemuImgInfo & { 'virtual-size': number }> {
    let info: QemuImgInfo;
    try {
      const { stdout } = await run(this.options.qemuImg ?? 'qemu-img', ['info', '-f', 'qcow2', '--output=json', file], { timeout: 60_000, maxBuffer: 1024 * 1024 });
      info = JSON.parse(stdout) as QemuImgInfo;
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === 'ENOENT') throw new Error('qemu-img is not installed on this conductor (Debian: qemu-utils); qcow2 images cannot be converted');
      throw new Error(`the image is not a valid qcow2 file: ${(e.stderr ?? e.message).trim().split('\n').pop()}`);
    }
    if (info.format !== 'qcow2') throw new Error(`the image is ${info.format ?? 'of an unknown format'}, not qcow2`);
    if (info['backing-filename'] !== undefined || info['full-backing-filename'] !== undefined) throw new Error('the qcow2 image names a backing file, which is refused (it would read another file of the conductor)');
    if (info['format-specific']?.data?.['data-file'] !== undefined) throw new Error('the qcow2 image names an external data file, which is refused');
    const virtual = info['virtual-size'];
    const max = this.options.maxVirtualBytes ?? 2 * 1024 ** 4;
    if (typeof virtual !== 'number' || !Number.isSafeInteger(virtual) || virtual <= 0) throw new Error('qemu-img gives no virtual size for the image');
    if (virtual > max) throw new Error(`the image's virtual size (${virtual} bytes) is over the limit of ${max}`);
    return { ...info, 'virtual-size': virtual };
  }
}
