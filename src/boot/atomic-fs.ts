/**
 * Crash-safe, compare-first file operations. Every write goes to a dot-named temp file in the target's
 * own directory and is renamed over the target, so a reader (TFTP client, iPXE, dnsmasq) sees the old
 * file or the new one, never half of one; dnsmasq's inotify watcher skips dot-files, so it never reads
 * a temp file either. Each operation first checks whether the target is already what it should be and
 * then writes nothing: a reconcile pass over unchanged nodes touches no file.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, link, lstat, mkdir, open, readdir, readlink, rename, rm, stat, symlink, unlink, utimes } from 'node:fs/promises';
import type { Dirent, Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Options shared by the writers. */
export interface WriteOptions {
  /** fsync file contents before the rename (survives power loss, not just a killed process). Default true. */
  durable?: boolean;
  /** File mode of new files. Default 0o644. */
  mode?: number;
}

/** A temp name next to `path`; the leading dot keeps it out of dnsmasq's and humans' way. */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
}

/** True for names `tempPathFor` produces. */
export function isTempName(name: string): boolean {
  return /^\..+\.\d+\.[0-9a-f]{8}\.tmp$/.test(name);
}

/** `fs.stat`/`lstat` that answers null for a missing path. */
export async function statOrNull(path: string, follow = true): Promise<Stats | null> {
  try {
    return follow ? await stat(path) : await lstat(path);
  } catch (err) {
    if (isMissing(err)) return null;
    throw err;
  }
}

/** True for ENOENT / ENOTDIR, the two ways a path can be absent. */
export function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Reads a text file, or null when it does not exist (or is a directory). Small files in three system calls. */
export async function readTextOrNull(path: string): Promise<string | null> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if (isMissing(err)) return null;
    throw err;
  }
  try {
    const buffer = Buffer.allocUnsafe(16 * 1024);
    // Position null: read from (and advance) the file position, so readFile below continues from there.
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
    if (bytesRead < buffer.length) return buffer.toString('utf8', 0, bytesRead);
    return Buffer.concat([buffer, await handle.readFile()]).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EISDIR') return null;
    throw err;
  } finally {
    await handle.close();
  }
}

/**
 * True when the file at `path` holds exactly `expected`. Three system calls (open, one read, close)
 * rather than `readFile`'s four: this runs for every file of every node on every reconcile pass.
 */
export async function fileHolds(path: string, expected: string | Buffer): Promise<boolean> {
  const want = typeof expected === 'string' ? Buffer.from(expected) : expected;
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
  try {
    // One byte more than expected: a longer file must not compare equal.
    const buffer = Buffer.allocUnsafe(want.length + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return bytesRead === want.length && buffer.subarray(0, bytesRead).equals(want);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EISDIR') return false;
    throw err;
  } finally {
    await handle.close();
  }
}

/** Runs `fn`; if it fails because `path`'s directory is missing, creates it and runs `fn` once more. */
async function inDir<T>(path: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // Directories are created only on this path, so a pass over current nodes issues no mkdir.
    await mkdir(dirname(path), { recursive: true });
    return fn();
  }
}

/** Writes `content` to `path` atomically unless it already holds exactly that. True when written. */
export async function writeFileIfChanged(path: string, content: string, options: WriteOptions = {}): Promise<boolean> {
  if (await fileHolds(path, content)) return false;
  await writeFileAtomic(path, content, options);
  return true;
}

/**
 * Writes `content` to a temp file, fsyncs it, renames it over `path` (creating the directory if
 * needed); the temp never outlives a failure.
 */
export async function writeFileAtomic(path: string, content: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
  const tmp = tempPathFor(path);
  try {
    const handle = await inDir(path, () => open(tmp, 'wx', options.mode ?? 0o644));
    try {
      await handle.writeFile(content);
      if (options.durable ?? true) await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Hard-links `source` to `path` (temp link renamed into place, directory created if needed), replacing
 * whatever is there. Throws ENOENT when `source` is missing.
 */
export async function linkInto(source: string, path: string): Promise<void> {
  const tmp = tempPathFor(path);
  await inDir(path, () => link(source, tmp));
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Flushes the file systems holding `paths` to disk (`sync -f`, one syncfs per file system): one call
 * after many writes made without per-file fsync.
 */
export function syncFileSystems(paths: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('sync', ['-f', ...paths], (err) => (err ? reject(err) : resolve()));
  });
}

/** Points the symlink `path` at `target` (created as a temp link, renamed into place) unless it already does. */
export async function symlinkIfChanged(path: string, target: string): Promise<boolean> {
  try {
    if ((await readlink(path)) === target) return false;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!isMissing(err) && code !== 'EINVAL') throw err; // EINVAL: a regular file is in the way; replace it
  }
  const tmp = tempPathFor(path);
  try {
    await inDir(path, () => symlink(target, tmp));
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return true;
}

/** Removes the symlink `path` if it points at `target` (and only then). True when removed. */
export async function removeLinkIfTarget(path: string, target: string): Promise<boolean> {
  try {
    if ((await readlink(path)) !== target) return false;
    await unlink(path);
    return true;
  } catch (err) {
    if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'EINVAL') return false;
    throw err;
  }
}

/** Removes a file if present. True when removed. */
export async function removeIfPresent(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

/** Errors for which a hard link cannot work and a copy must do (other FS, no permission, too many links). */
const LINK_UNSUPPORTED = new Set(['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP', 'EOPNOTSUPP']);

/**
 * True when `path` already holds `source`'s content as set up by `linkOrCopy`: the same inode, or a
 * copy of the same size and modification time (copies carry the source's mtime for this check).
 */
export function sameFile(target: Stats | null, source: Stats): boolean {
  if (target === null || !target.isFile()) return false;
  if (target.ino === source.ino && target.dev === source.dev) return true;
  return target.size === source.size && target.mtimeMs === source.mtimeMs;
}

/**
 * Makes `path` a hard link to `source` (a copy when linking is impossible), atomically replacing
 * what is there. Returns `link` or `copy`, or null when `path` was already current.
 */
export async function linkOrCopyIfChanged(source: string, path: string, options: WriteOptions = {}): Promise<'link' | 'copy' | null> {
  const sourceStat = await stat(source);
  if (sameFile(await statOrNull(path), sourceStat)) return null;
  const tmp = tempPathFor(path);
  try {
    try {
      await inDir(path, () => link(source, tmp));
      await rename(tmp, path);
      return 'link';
    } catch (err) {
      if (!LINK_UNSUPPORTED.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
    }
    await inDir(path, () => copyFile(source, tmp));
    await utimes(tmp, sourceStat.atime, sourceStat.mtime);
    if (options.durable ?? true) {
      const handle = await open(tmp, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
    await rename(tmp, path);
    return 'copy';
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** The names in `dir`, or none when it does not exist (yet). */
export async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}

/** The entries of `dir` with their types (no stat per entry), or none when it does not exist (yet). */
export async function readdirEntriesOrEmpty(dir: string): Promise<Dirent[]> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}
