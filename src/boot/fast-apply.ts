/**
 * The common case of `prepare`, done with synchronous file-system calls: a node that is new here
 * (or already laid out for the same MACs and format), whose images are all in the cache, without
 * DHCP entries. This is what a take-over mostly is — replicas pre-cached the images — and each
 * asynchronous call costs ~40 µs of main-thread time against ~5–10 µs for its synchronous twin, so
 * a take-over of thousands of nodes runs several times faster. Callers yield to the event loop
 * between nodes; one node blocks it for well under a millisecond.
 *
 * Returns null (having changed nothing) whenever the case is not the common one; the caller then
 * takes the general asynchronous path. Writes are atomic (temp file renamed into place) like there.
 */
import { closeSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, renameSync, statSync, symlinkSync, unlinkSync, writeSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { dirname } from 'node:path';
import { sameFile, tempPathFor } from './atomic-fs.js';
import type { WriteOptions } from './atomic-fs.js';
import type { NodeSpec } from './node-spec.js';
import { IMAGE_ROLES } from './types.js';

function statSyncOrNull(path: string, follow = true): Stats | null {
  try {
    // No exception for a missing path (the usual answer here): building one costs more than the call.
    return (follow ? statSync(path, { throwIfNoEntry: false }) : lstatSync(path, { throwIfNoEntry: false })) ?? null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
}

function readSyncOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Creates `path` (which must not exist) with `content`, flushed to disk when `durable`. */
function createFileSync(path: string, content: string, durable: boolean): void {
  const fd = openSync(path, 'wx', 0o644);
  try {
    writeSync(fd, content);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function writeAtomicSync(path: string, content: string, durable: boolean): void {
  replaceWith(path, (tmp) => createFileSync(tmp, content, durable));
}

function replaceWith(path: string, make: (tmp: string) => void): void {
  const tmp = tempPathFor(path);
  make(tmp);
  try {
    renameSync(tmp, path);
  } catch (err) {
    unlinkSync(tmp);
    throw err;
  }
}

/**
 * Stats of cache masters, kept for a moment: a take-over links the same four masters into thousands
 * of nodes, and a master's inode never changes (masters are content-addressed and only ever removed).
 * A master removed meanwhile makes `link` fail with ENOENT, and the caller takes the general path.
 */
const masterStats = new Map<string, { stat: Stats; at: number }>();
const MASTER_STAT_TTL_MS = 1000;

function masterStat(path: string): Stats | null {
  const now = Date.now();
  const known = masterStats.get(path);
  if (known && now - known.at < MASTER_STAT_TTL_MS) return known.stat;
  const stat = statSyncOrNull(path);
  if (stat === null) masterStats.delete(path);
  else {
    if (masterStats.size > 1000) masterStats.clear();
    masterStats.set(path, { stat, at: now });
  }
  return stat;
}

/** Forgets cached master stats (after a master was found missing). */
export function forgetMasterStats(): void {
  masterStats.clear();
}

export interface FastApplyContext {
  /** Path of the cached master of an image. */
  masterPath: (role: (typeof IMAGE_ROLES)[number]) => string;
  /** Other roots' directories for this node (another boot interface's layout). */
  otherDirs: readonly string[];
  write: WriteOptions;
  /** `boot.ipxe` path and content when the node boots with iPXE. */
  bootIpxe?: { path: string; content: string };
}

/** What changed, or null when the fast path does not apply (nothing was touched then). */
export function applySync(spec: NodeSpec, ctx: FastApplyContext): { written: string[]; removed: string[]; masters: string[] } | null {
  if (spec.dhcp !== null) return null;
  if (ctx.otherDirs.some((d) => statSyncOrNull(d) !== null)) return null;
  const { layout } = spec;
  // A node new here has no directory: one stat instead of reading a missing manifest (an exception).
  const own = statSyncOrNull(layout.dir) === null ? null : readSyncOrNull(layout.manifest);
  if (own !== null && own !== spec.manifest) return null;
  const masters: Array<{ role: (typeof IMAGE_ROLES)[number]; path: string; stat: Stats }> = [];
  for (const role of IMAGE_ROLES) {
    if (spec.images[role] === undefined) continue;
    const path = ctx.masterPath(role);
    const stat = masterStat(path);
    if (stat === null) return null;
    masters.push({ role, path, stat });
  }

  const durable = ctx.write.durable ?? true;
  const written: string[] = [];
  const removed: string[] = [];
  // A directory this call creates is empty and nothing links to it yet (per-MAC links come last), so
  // its files need no temp-and-rename: a crash leaves an unreferenced, incomplete directory that the
  // next pass completes. An existing directory is only ever changed by atomic replacement.
  let fresh = false;
  if (own === null) {
    try {
      mkdirSync(layout.dir);
      fresh = true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        mkdirSync(layout.dir, { recursive: true });
        fresh = true;
      } else if (code !== 'EEXIST') throw err;
    }
  }
  const put = (path: string, content: string) => (fresh ? createFileSync(path, content, durable) : writeAtomicSync(path, content, durable));
  for (const role of IMAGE_ROLES) {
    if (spec.images[role] !== undefined) continue;
    const dest = layout.images[role];
    if (statSyncOrNull(dest, false) !== null) {
      unlinkSync(dest);
      removed.push(dest);
    }
  }
  for (const m of masters) {
    const dest = layout.images[m.role];
    if (fresh) linkSync(m.path, dest);
    else if (sameFile(statSyncOrNull(dest), m.stat)) continue;
    else replaceWith(dest, (tmp) => linkSync(m.path, tmp));
    written.push(dest);
  }
  if (fresh || readSyncOrNull(layout.config) !== spec.config) {
    put(layout.config, spec.config);
    written.push(layout.config);
  }
  if (own !== spec.manifest) {
    put(layout.manifest, spec.manifest);
    written.push(layout.manifest);
  }
  for (const link of spec.links) {
    // Usually nothing is there yet: create the link in place, one call.
    try {
      symlinkSync(link.target, link.path);
      written.push(link.path);
      continue;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' && (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    let current: string | null = null;
    try {
      current = readlinkSync(link.path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') mkdirSync(dirname(link.path), { recursive: true });
      else if (code !== 'EINVAL') throw err;
    }
    if (current === link.target) continue;
    replaceWith(link.path, (tmp) => symlinkSync(link.target, tmp));
    written.push(link.path);
  }
  if (ctx.bootIpxe && readSyncOrNull(ctx.bootIpxe.path) !== ctx.bootIpxe.content) {
    writeAtomicSync(ctx.bootIpxe.path, ctx.bootIpxe.content, durable);
    written.push(ctx.bootIpxe.path);
  }
  return { written, removed, masters: masters.map((m) => m.path) };
}
