/**
 * The safety net for what a killed process can leave outside a node directory: temp files of
 * interrupted atomic writes, and per-MAC links whose node directory is gone (a clean-up interrupted
 * between removing links and the directory cannot leave these, but an operator's `rm -rf` can).
 * Meant for a periodic pass; touches nothing that is current.
 */
import { readlink, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { isTempName, readdirEntriesOrEmpty, readdirOrEmpty, statOrNull } from './atomic-fs.js';
import { isDiscoveryUuid } from './discovery.js';
import { PXELINUX_CFG } from './layout.js';

/** What to sweep. */
export interface SweepOptions {
  /** Directories holding per-MAC links: the roots and their `pxelinux.cfg`. */
  linkDirs: string[];
  /** Other directories written atomically (DHCP dirs, the roots themselves). */
  tempDirs: string[];
  /** Temp files younger than this may belong to a write in progress. Default 1 hour. */
  minTempAgeMs?: number;
  now?: () => number;
  /**
   * Asked between entries: true stops the sweep where it is (`complete: false`). The sweep is a
   * safety net that walks every file of every node, seconds at 10,000 nodes; a conductor with a
   * take-over waiting lets it go and sweeps again later rather than keep the nodes waiting.
   */
  shouldStop?: () => boolean;
}

/** What a sweep removed, and whether it looked at everything. */
export interface SweepReport {
  temps: string[];
  danglingLinks: string[];
  /** False when `shouldStop` cut it short. */
  complete: boolean;
}

/** `shouldStop` is asked once per this many entries (each costs a system call or two at most). */
const STOP_CHECK_EVERY = 64;

/** The directories of a boot environment that `sweep` should look at. */
export function sweepDirs(tftpRoot: string, httpRoot: string | undefined, dhcpDirs: string[]): Pick<SweepOptions, 'linkDirs' | 'tempDirs'> {
  const roots = [tftpRoot, ...(httpRoot === undefined ? [] : [httpRoot])];
  const linkDirs = roots.flatMap((r) => [r, join(r, PXELINUX_CFG)]);
  return { linkDirs, tempDirs: [...linkDirs, ...dhcpDirs] };
}

/** Removes stale temp files and dangling per-MAC links (symlinks to a missing `<uuid>/config`). */
export async function sweep(options: SweepOptions): Promise<SweepReport> {
  const now = (options.now ?? Date.now)();
  const minAge = options.minTempAgeMs ?? 60 * 60_000;
  const report: SweepReport = { temps: [], danglingLinks: [], complete: true };
  let seen = 0;
  const stop = (): boolean => {
    if (options.shouldStop === undefined || ++seen % STOP_CHECK_EVERY !== 0 || !options.shouldStop()) return false;
    report.complete = false;
    return true;
  };
  for (const dir of new Set(options.tempDirs)) {
    for (const { name } of await readdirEntriesOrEmpty(dir)) {
      if (stop()) return report;
      if (!isTempName(name)) continue;
      const st = await statOrNull(join(dir, name), false);
      if (st !== null && now - st.mtimeMs >= minAge) {
        await rm(join(dir, name), { force: true });
        report.temps.push(join(dir, name));
      }
    }
  }
  for (const dir of new Set(options.linkDirs)) {
    for (const entry of await readdirEntriesOrEmpty(dir)) {
      if (stop()) return report;
      // Node directories and config files are most of what is here: the entry's type says so free.
      if (!entry.isSymbolicLink()) continue;
      const path = join(dir, entry.name);
      let target: string;
      try {
        target = await readlink(path);
      } catch {
        continue; // gone meanwhile
      }
      // Only our links (`…/<uuid>/config`), and only when what they point to is gone.
      if (!/(^|\/)[0-9a-f-]{36}\/config$/.test(target)) continue;
      if ((await statOrNull(resolve(dirname(path), target))) !== null) continue;
      await rm(path, { force: true });
      report.danglingLinks.push(path);
    }
  }
  return report;
}

const UUID_DIR = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The node uuids that name a directory under any of `roots` (not the discovery entries'), sorted. */
export async function nodeDirUuids(roots: ReadonlyArray<string | undefined>): Promise<string[]> {
  const found = new Set<string>();
  for (const root of roots) {
    if (root === undefined) continue;
    for (const name of await readdirOrEmpty(root)) if (UUID_DIR.test(name) && !isDiscoveryUuid(name)) found.add(name);
  }
  return [...found].sort();
}
