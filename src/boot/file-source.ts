/**
 * Confinement of `file://` image sources (Ironic's `[conductor] file_url_allowed_paths`, the fix of
 * OSSA-2025-001): an API user names the URL, the conductor reads the file, and the bytes end up in the
 * image cache and on the TFTP and HTTP boot servers. So a `file://` source must lie inside one of the
 * operator's allowed directories, and never under the system directories Ironic always refuses.
 *
 * Stricter than Ironic, which compares `abspath`: the path is also resolved with realpath before the
 * check (a symlink inside an allowed directory pointing out of it is refused), the file is opened by
 * its resolved path without following a final symlink, and the descriptor actually opened is checked
 * again through /proc (a directory swapped for a symlink between check and open is caught).
 */
import { constants } from 'node:fs';
import { open, readlink, realpath } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImageDownloadFailed, ImageSourceNotAllowed } from './errors.js';

/** Never an image source, whatever the allowed list says (Ironic's `BLOCKED_FILE_URL_PATHS`). */
export const BLOCKED_FILE_PATHS = ['/dev', '/sys', '/proc', '/boot', '/etc', '/run'] as const;

/** The option an operator changes; named in every refusal. */
export const FILE_URL_OPTION = '[conductor] file_url_allowed_paths';

function within(file: string, dir: string): boolean {
  const base = dir.endsWith(path.sep) && dir !== path.sep ? dir.slice(0, -1) : dir;
  return file === base || file.startsWith(base === path.sep ? base : base + path.sep);
}

function blockedBy(file: string): string | undefined {
  return BLOCKED_FILE_PATHS.find((dir) => within(file, dir));
}

/** Real paths of the allowed directories that exist (one that does not cannot contain a file). */
async function realDirs(allowed: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const dir of allowed) {
    try {
      out.push(await realpath(dir));
    } catch {
      // Missing or unreadable: nothing can be served from it.
    }
  }
  return out;
}

/**
 * Checks a resolved (absolute, symlink-free) path against the blocked and allowed directories.
 * Throws `ImageSourceNotAllowed`; the message never names where a symlink pointed.
 */
function admit(url: string, file: string, allowed: readonly string[], resolved: boolean): void {
  const blocked = blockedBy(file);
  if (blocked !== undefined) {
    throw new ImageSourceNotAllowed(url, resolved ? `it resolves into ${blocked}, which is never an image source` : `${blocked} is never an image source`);
  }
  if (!allowed.some((dir) => within(file, dir))) {
    throw new ImageSourceNotAllowed(url, resolved ? `it resolves outside the directories of ${FILE_URL_OPTION}` : `it is outside the directories of ${FILE_URL_OPTION}`);
  }
}

/**
 * Returns the real path of the file a `file://` URL names, or throws `ImageSourceNotAllowed` when it
 * lies outside `allowed` (absolute directories; empty: `file://` is disabled) or under a blocked
 * system directory, before or after resolving symlinks. The lexical check comes first, so a refused
 * path is never touched (no "exists or not" answer for files outside the allowed directories).
 * `allowed` undefined means no allowed list (library use); the blocked directories still apply.
 */
export async function checkFileSource(url: string | URL, allowed: readonly string[] | undefined): Promise<string> {
  const shown = String(url);
  if (allowed !== undefined && allowed.length === 0) throw new ImageSourceNotAllowed(shown, `file:// image sources are disabled (${FILE_URL_OPTION} is empty)`);
  let file: string;
  try {
    file = path.resolve(fileURLToPath(url));
  } catch {
    throw new ImageSourceNotAllowed(shown, 'it is not a local file path');
  }
  const lexical = allowed === undefined ? undefined : allowed.map((dir) => path.resolve(dir));
  // The directories as written and as resolved: a URL may name either spelling of an allowed one.
  const real = lexical === undefined ? ['/'] : await realDirs(lexical);
  admit(shown, file, lexical === undefined ? ['/'] : [...lexical, ...real], false);
  let resolved: string;
  try {
    resolved = await realpath(file);
  } catch (err) {
    // Inside an allowed directory: saying it is missing reveals nothing the operator did not allow.
    throw new ImageDownloadFailed(shown, (err as Error).message, { cause: err });
  }
  admit(shown, resolved, real, true);
  return resolved;
}

/**
 * Opens the file of a `file://` image source for reading after {@link checkFileSource}: by its real
 * path, not following a final symlink, and only a regular file (a FIFO or device would hang or never
 * end). Where /proc is there, the descriptor's own path is checked once more.
 */
export async function openFileSource(url: string | URL, allowed: readonly string[] | undefined): Promise<FileHandle> {
  const real = await checkFileSource(url, allowed);
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ImageSourceNotAllowed(String(url), 'it is not a regular file');
    let opened: string | null = null;
    try {
      opened = await readlink(`/proc/self/fd/${handle.fd}`);
    } catch {
      // No /proc (another OS, a sandbox): the realpath check above stands alone.
    }
    if (opened !== null && path.isAbsolute(opened)) {
      admit(String(url), opened, allowed === undefined ? ['/'] : await realDirs(allowed.map((dir) => path.resolve(dir))), true);
    }
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}
