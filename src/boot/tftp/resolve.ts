/**
 * Confinement of requested filenames to the TFTP root, the way tftpd-hpa's `-s` behaves: an
 * absolute path is taken relative to the root, `..` is refused outright, and the final path is
 * checked with realpath so a symlink can never lead outside the root (links inside it, such as the
 * per-MAC `pxelinux.cfg/01-…` links, are followed).
 */
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES } from './packets.js';
import type { TftpErrorCode } from './packets.js';

/** A file opened for a transfer; the caller owns the handle and closes it. */
export interface OpenedFile {
  handle: FileHandle;
  size: number;
  /** The real path, for logs. */
  realPath: string;
}

/** Why a request cannot be served; answered as a TFTP error with this code. */
export interface ResolveFault {
  code: TftpErrorCode;
  message: string;
}

/**
 * Maps a requested filename to a path relative to the root, or null when it tries to climb out.
 * Leading slashes are dropped (absolute paths live inside the root), empty and `.` segments are
 * collapsed, and any `..` segment is refused rather than normalised away, as tftpd-hpa does.
 */
export function confine(filename: string): string | null {
  const segments: string[] = [];
  for (const segment of filename.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') return null;
    segments.push(segment);
  }
  return segments.length === 0 ? null : segments.join('/');
}

function inside(root: string, candidate: string): boolean {
  return candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

function errnoFault(err: unknown): ResolveFault {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG') {
    return { code: ERROR_CODES.FILE_NOT_FOUND, message: 'file not found' };
  }
  if (code === 'EACCES' || code === 'EPERM') return { code: ERROR_CODES.ACCESS_VIOLATION, message: 'access violation' };
  return { code: ERROR_CODES.NOT_DEFINED, message: 'cannot read file' };
}

/**
 * Opens `filename` for reading inside `root`. The root's own real path is taken on every request
 * so the directory may be created or replaced after the server starts. The file is opened by its
 * real path with O_NOFOLLOW, so a link swapped in after the check is not followed either, and
 * O_NONBLOCK, so a FIFO placed in the root cannot hang the open.
 */
export async function openConfined(root: string, filename: string): Promise<OpenedFile | ResolveFault> {
  const relative = confine(filename);
  if (relative === null) return { code: ERROR_CODES.ACCESS_VIOLATION, message: 'access violation: path leaves the TFTP root' };
  let realRoot: string;
  let real: string;
  try {
    realRoot = await realpath(root);
    real = await realpath(path.join(realRoot, relative));
  } catch (err) {
    return errnoFault(err);
  }
  if (!inside(realRoot, real)) return { code: ERROR_CODES.ACCESS_VIOLATION, message: 'access violation: path leaves the TFTP root' };
  let handle: FileHandle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return errnoFault(err);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      await handle.close();
      return { code: ERROR_CODES.FILE_NOT_FOUND, message: 'file not found: not a regular file' };
    }
    return { handle, size: stat.size, realPath: real };
  } catch (err) {
    await handle.close().catch(() => undefined);
    return errnoFault(err);
  }
}

/** Narrows an open result. */
export function isResolveFault(r: OpenedFile | ResolveFault): r is ResolveFault {
  return 'code' in r;
}
