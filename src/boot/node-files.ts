/**
 * What a conductor's disk holds for one node, read back for people (the dashboard's node page, via
 * the conductor's RPC listener): every file, link and directory of its boot state — its directory
 * under each root, its per-MAC links, `boot.ipxe` when it boots by iPXE, this conductor's dnsmasq
 * entries — with size, modification time and, for a link, where it points.
 *
 * Read-only and confined: nothing outside the given roots is opened, stat'ed or named. Links are
 * never followed (`lstat`, `readlink`, `O_NOFOLLOW`); a directory is entered only when `lstat` says
 * it is one (a link to a directory is shown as a link); a path is looked at only when every
 * directory between it and its root is a real directory; a link's target is shown relative to the
 * root, or as outside it without the target. Bounded: at most `MAX_BOOT_FILES` entries and
 * `MAX_NODE_MACS` MACs, with `truncated` set when more were there.
 */
import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import { lstat, open, opendir, readlink } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { isLiveHostLine } from './dhcp.js';
import { dhcpHostPath, dhcpOptsPath, hostLineNode } from './dhcp-names.js';
import { allMacLinks, BOOT_IPXE_NAME, MANIFEST_NAME } from './layout.js';
import { parseManifest } from './node-spec.js';
import { normalizeMac, normalizeUuid } from './validate.js';

/** Most entries one listing holds. */
export const MAX_BOOT_FILES = 500;
/** Most MACs whose links and DHCP entries one listing looks for. */
export const MAX_NODE_MACS = 100;
/** Largest manifest or dnsmasq host file read (bytes); ours are a few lines. */
const MAX_READ_BYTES = 64 * 1024;

/** The roots a listing may look into, by the name an entry carries. */
export const BOOT_FILE_ROOTS = ['tftp', 'http', 'dhcp_hosts', 'dhcp_opts'] as const;
export type BootFileRoot = (typeof BOOT_FILE_ROOTS)[number];

export const BOOT_FILE_KINDS = ['file', 'symlink', 'directory', 'other'] as const;
export type BootFileKind = (typeof BOOT_FILE_KINDS)[number];

/** One file, link or directory of a node's boot state. */
export interface BootFileEntry {
  root: BootFileRoot;
  /** Relative to the root, `/`-separated. */
  path: string;
  kind: BootFileKind;
  /** Bytes (`lstat`: a link's own length, not its target's). */
  size: number;
  /** Modification time, ISO-8601 UTC. */
  modified: string;
  /** Regular files: how many names the file has (an image hard-linked from the cache has 2 or more). */
  hard_links?: number;
  /** Links: the target relative to the root, or null when it leads outside the root (then not shown). */
  target?: string | null;
  /** Links: whether the target leads outside the root. */
  target_outside_root?: boolean;
}

/** Where a conductor keeps boot files; every path absolute. DHCP entries only with both directories and the owner. */
export interface NodeFileRoots {
  tftpRoot: string;
  httpRoot?: string;
  dhcp?: { hostsDir: string; optsDir: string; /** This conductor's token in DHCP file names (`dhcpOwnerToken`). */ owner: string };
}

export interface NodeFileListing {
  files: BootFileEntry[];
  truncated: boolean;
}

/** `lstat`, or null when nothing is there; other failures name the entry, never an absolute path. */
async function lstatOrNull(abs: string, shown: string): Promise<Stats | null> {
  try {
    return await lstat(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw new Error(`could not look at ${shown}: ${code ?? 'unknown error'}`);
  }
}

/** The text of a regular file (not a link: `O_NOFOLLOW`), at most `MAX_READ_BYTES`; null when absent or not a file. */
async function readSmallText(abs: string): Promise<string | null> {
  let handle;
  try {
    handle = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    if (!(await handle.stat()).isFile()) return null;
    const buffer = Buffer.alloc(MAX_READ_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, MAX_READ_BYTES, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

const posix = (rel: string): string => rel.split(sep).join('/');

/** Collects entries up to the bound. */
class Listing {
  readonly files: BootFileEntry[] = [];
  truncated = false;
  /** Directories (root-relative) known to be real directories, not links. */
  private readonly realDirs = new Map<string, Promise<boolean>>();

  constructor(private readonly dirs: Readonly<Record<BootFileRoot, string | undefined>>) {}

  get room(): number {
    return MAX_BOOT_FILES - this.files.length;
  }

  add(entry: BootFileEntry): boolean {
    if (this.room <= 0) {
      this.truncated = true;
      return false;
    }
    this.files.push(entry);
    return true;
  }

  /** Whether every directory from the root down to `relDir` is a real directory (none a link). */
  realDir(root: BootFileRoot, relDir: string): Promise<boolean> {
    if (relDir === '' || relDir === '.') return Promise.resolve(true);
    const key = `${root}:${relDir}`;
    let known = this.realDirs.get(key);
    if (known === undefined) {
      known = (async () => {
        if (!(await this.realDir(root, dirname(relDir)))) return false;
        const st = await lstatOrNull(join(this.dirs[root]!, relDir), `${root}:${posix(relDir)}`);
        return st !== null && st.isDirectory();
      })();
      this.realDirs.set(key, known);
    }
    return known;
  }

  /** The entry at `rel` under `root` (nothing followed), or null when there is none or a directory above it is not real. */
  async entry(root: BootFileRoot, rel: string): Promise<{ entry: BootFileEntry; stats: Stats } | null> {
    const base = this.dirs[root];
    if (base === undefined || !(await this.realDir(root, dirname(rel)))) return null;
    const abs = join(base, rel);
    const shown = `${root}:${posix(rel)}`;
    const st = await lstatOrNull(abs, shown);
    if (st === null) return null;
    const kind: BootFileKind = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : st.isFile() ? 'file' : 'other';
    const entry: BootFileEntry = { root, path: posix(rel), kind, size: st.size, modified: st.mtime.toISOString() };
    if (kind === 'file') entry.hard_links = st.nlink;
    if (kind === 'symlink') {
      const target = relative(base, resolve(dirname(abs), await readlink(abs)));
      const outside = target === '..' || target.startsWith(`..${sep}`) || isAbsolute(target);
      entry.target = outside ? null : target === '' ? '.' : posix(target);
      entry.target_outside_root = outside;
    }
    return { entry, stats: st };
  }

  /** Adds `rel` and, when it is a real directory, everything under it (sorted by name), depth first. */
  async walk(root: BootFileRoot, rel: string): Promise<void> {
    const found = await this.entry(root, rel);
    if (found === null || !this.add(found.entry) || found.entry.kind !== 'directory') return;
    const abs = join(this.dirs[root]!, rel);
    const names: string[] = [];
    // One name more than there is room for tells that the listing is cut.
    for await (const dirent of await opendir(abs)) {
      names.push(dirent.name);
      if (names.length > this.room) break;
    }
    // Replaced by something else (a link) while it was read: what was read is not shown.
    const again = await lstatOrNull(abs, `${root}:${posix(rel)}`);
    if (again === null || !again.isDirectory() || again.ino !== found.stats.ino || again.dev !== found.stats.dev) return;
    for (const name of names.sort()) {
      if (this.room <= 0) {
        this.truncated = true;
        return;
      }
      await this.walk(root, join(rel, name));
    }
  }
}

/**
 * Lists what the roots hold for node `uuid`. `knownMacs` are MACs the node has elsewhere (its ports);
 * the MACs its manifests recorded are added. Invalid MACs are skipped.
 */
export async function listNodeFiles(roots: NodeFileRoots, uuid: string, knownMacs: readonly string[] = []): Promise<NodeFileListing> {
  const node = normalizeUuid(uuid);
  const tftpRoot = resolve(roots.tftpRoot);
  const httpRoot = roots.httpRoot === undefined ? undefined : resolve(roots.httpRoot);
  const dhcp = roots.dhcp === undefined ? undefined : { ...roots.dhcp, hostsDir: resolve(roots.dhcp.hostsDir), optsDir: resolve(roots.dhcp.optsDir) };
  const listing = new Listing({ tftp: tftpRoot, http: httpRoot, dhcp_hosts: dhcp?.hostsDir, dhcp_opts: dhcp?.optsDir });
  const nodeRoots: BootFileRoot[] = httpRoot === undefined ? ['tftp'] : ['tftp', 'http'];

  // The node's directories, and the MACs their manifests recorded (read only from a real directory).
  const recorded: string[] = [];
  let bootsByIpxe = false;
  for (const root of nodeRoots) {
    await listing.walk(root, node);
    if (!(await listing.realDir(root, node))) continue;
    if (root === 'http') bootsByIpxe = true;
    recorded.push(...parseManifest(await readSmallText(join(root === 'tftp' ? tftpRoot : httpRoot!, node, MANIFEST_NAME))));
  }

  const macs: string[] = [];
  for (const mac of [...recorded, ...knownMacs]) {
    let normal: string;
    try {
      normal = normalizeMac(mac);
    } catch {
      continue;
    }
    if (!macs.includes(normal)) macs.push(normal);
  }
  if (macs.length > MAX_NODE_MACS) listing.truncated = true;
  const shownMacs = macs.slice(0, MAX_NODE_MACS);

  // Per-MAC links of every format, where they lead into this node's directory.
  for (const mac of shownMacs) {
    for (const link of allMacLinks({ tftpRoot, httpRoot }, node, mac)) {
      const root: BootFileRoot = link.format === 'ipxe' ? 'http' : 'tftp';
      const found = await listing.entry(root, relative(root === 'tftp' ? tftpRoot : httpRoot!, link.path));
      if (found?.entry.kind === 'symlink' && found.entry.target?.startsWith(`${node}/`)) listing.add(found.entry);
    }
  }

  // The iPXE script every iPXE node chains through, when this node boots by iPXE here.
  if (bootsByIpxe) {
    const found = await listing.entry('http', BOOT_IPXE_NAME);
    if (found !== null) listing.add(found.entry);
  }

  // This conductor's dnsmasq entries: the node's option file, and host files of its MACs that name it
  // (or were retired to `mac,ignore`).
  if (dhcp !== undefined) {
    const opts = await listing.entry('dhcp_opts', relative(dhcp.optsDir, dhcpOptsPath(dhcp.optsDir, dhcp.owner, node)));
    if (opts !== null) listing.add(opts.entry);
    for (const mac of shownMacs) {
      const path = dhcpHostPath(dhcp.hostsDir, dhcp.owner, mac);
      const found = await listing.entry('dhcp_hosts', relative(dhcp.hostsDir, path));
      if (found === null || found.entry.kind !== 'file') continue;
      const content = await readSmallText(path);
      if (content !== null && (hostLineNode(content, dhcp.owner) === node || !isLiveHostLine(content))) listing.add(found.entry);
    }
  }

  const order = (e: BootFileEntry) => BOOT_FILE_ROOTS.indexOf(e.root);
  listing.files.sort((a, b) => order(a) - order(b) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files: listing.files, truncated: listing.truncated };
}
