/**
 * A conductor's local boot state for its nodes (DESIGN §6): `prepare` makes a node's files exactly
 * what its node, ports, images and label call for; `cleanUp` removes them; `inspect` reports how far
 * the disk is from that; `precache` fills the image cache for replicas. All idempotent and
 * compare-first: a `prepare` of a node that is already current reads, and writes nothing.
 *
 * Order of writes in `prepare`: images, config, manifest, per-MAC links, DHCP — a link or a DHCP
 * entry never points at files that are not there yet. `cleanUp` goes the other way round. DHCP
 * entries are named by this conductor (`dhcpOwner`); writing a node's entries retires other
 * conductors' entries of the node in shared DHCP directories (`dhcp.ts`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  isMissing,
  linkInto,
  linkOrCopyIfChanged,
  readTextOrNull,
  removeIfPresent,
  removeLinkIfTarget,
  sameFile,
  statOrNull,
  symlinkIfChanged,
  syncFileSystems,
  writeFileAtomic,
  writeFileIfChanged,
} from './atomic-fs.js';
import type { WriteOptions } from './atomic-fs.js';
import { removeDhcpEntries, renderDhcpEntries, retireDhcpHosts, writeDhcpEntries } from './dhcp.js';
import type { DhcpBootFiles, DhcpChanges, DhcpOptions } from './dhcp.js';
import { dhcpOwnerToken } from './dhcp-names.js';
import { listDhcpOwners, sweepDhcpEntries } from './dhcp-sweep.js';
import { InvalidBootInput } from './errors.js';
import { applySync, forgetMasterStats } from './fast-apply.js';
import { ImageCache } from './image-cache.js';
import type { ImageCacheOptions } from './image-cache.js';
import { inspectNode } from './inspect.js';
import type { BootInspection } from './inspect.js';
import { allMacLinks, BOOT_IPXE_NAME, MANIFEST_NAME } from './layout.js';
import type { BootRoots } from './layout.js';
import { buildNodeSpec, parseManifest } from './node-spec.js';
import type { NodeSpec, SpecSettings } from './node-spec.js';
import { nodeDirUuids, sweep, sweepDirs } from './sweep.js';
import type { SweepReport } from './sweep.js';
import type { ServedListener } from './proxydhcp/owned-macs.js';
import { NODE_FILES, renderBootIpxe } from './templates/index.js';
import type { BootImages, BootInterface, BootLogger, BootNode, BootPort, ImageSource } from './types.js';
import { IMAGE_ROLES } from './types.js';
import { checkHttpUrl, normalizeMac, normalizeUuid } from './validate.js';

/** Set inside `BootEnvironment.batch`: per-file fsyncs are skipped, one sync at the end covers them. */
const batchContext = new AsyncLocalStorage<{ wrote: boolean }>();

/** How long a listing of the conductors writing into the DHCP directories is used (ms). */
const DHCP_OWNERS_TTL_MS = 1000;

/** Adds what a DHCP write or retirement changed to a node's changes. */
function addChanges(changes: BootChanges, dhcp: DhcpChanges): void {
  for (const key of ['written', 'removed'] as const) changes[key].push(...dhcp[key]);
}

/** Where the boot environment lives and what it writes. Every path is absolute. */
export interface BootEnvironmentOptions {
  /** Root served by TFTP (`[pxe] tftp_root`). */
  tftpRoot: string;
  /** Root served by the HTTP boot server (`[deploy] http_root`); needed for iPXE nodes. */
  httpRoot?: string;
  /** Base URL of the HTTP boot server as nodes reach it (`[deploy] http_url`); needed for iPXE nodes. */
  httpUrl?: string;
  /** Image cache directory (`master_images`), on the same file system as the roots so node files are hard links. */
  masterPath: string;
  /** This conductor's TFTP server as nodes reach it, `host` or `host:port`; needed for DHCP entries. */
  tftpServer?: string;
  /** dnsmasq `dhcp-hostsdir`; DHCP entries are written when both DHCP directories are set. */
  dhcpHostsDir?: string;
  /** dnsmasq `dhcp-optsdir`. */
  dhcpOptsDir?: string;
  /** This conductor's host name: DHCP file names and tags carry it. Required with the DHCP directories. */
  dhcpOwner?: string;
  /** On clean-up, `ignore` (default) rewrites a MAC's host line to `mac,ignore`; `remove` deletes it. */
  dhcpCleanUp?: 'ignore' | 'remove';
  /** Boot files DHCP hands to non-iPXE clients (PXELINUX, GRUB, iPXE chain loaders). */
  bootFiles?: Partial<DhcpBootFiles>;
  /** Interface for nodes that do not name one. Default `ipxe` when `httpUrl` and `httpRoot` are set, else `pxe`. */
  defaultBootInterface?: BootInterface;
  /** Kernel parameters for every label (Ironic's `pxe_append_params`). Default `nofb vga=normal`. */
  appendParams?: string;
  /** Extra kernel parameters for the deploy ramdisk only, e.g. `ipa-api-url=http://…`. */
  deployParams?: string;
  /** Extra kernel parameters for the instance ramdisk only. */
  ramdiskParams?: string;
  /** iPXE download timeout (ms) in `kernel`/`initrd` lines; 0: iPXE's own. */
  ipxeTimeoutMs?: number;
  /** fsync each written file before renaming it into place. Default true. */
  durable?: boolean;
  /** A shared cache instance, or options (other than `dir`) for the one created on `masterPath`. */
  imageCache?: ImageCache | Omit<ImageCacheOptions, 'dir'>;
  logger?: BootLogger;
  /**
   * Told which nodes this environment serves (the ProxyDHCP responder's MAC index): after every
   * `prepare` that succeeded, changed or already current, and at the start of every `cleanUp`,
   * before any file goes, so a node is never answered for while its files are being removed.
   */
  served?: ServedListener;
}

/** What `prepare` or `cleanUp` changed on disk: empty lists for a node that was already current. */
export interface BootChanges {
  uuid: string;
  /** Files and links written (created or replaced). */
  written: string[];
  /** Files, links and directories removed (a DHCP host line turned into `ignore` counts as written). */
  removed: string[];
}

/** Prepares, inspects and removes nodes' boot files. One instance per conductor. */
export class BootEnvironment {
  readonly cache: ImageCache;
  private readonly settings: SpecSettings;
  private readonly roots: BootRoots;
  private readonly write: WriteOptions;
  private readonly dhcp: DhcpOptions | undefined;
  // Per-node chain: two calls for one node never interleave their writes, even without the node lock.
  private readonly chains = new Map<string, Promise<unknown>>();
  /** File-system flushes `batch` has run: one per batch that changed something on disk. */
  flushes = 0;
  /** The other conductors writing into the DHCP directories, as last listed (see `dhcpOthers`). */
  private others: { at: number; list: Promise<string[]> } | null = null;

  constructor(private readonly options: BootEnvironmentOptions) {
    this.roots = { tftpRoot: options.tftpRoot, httpRoot: options.httpRoot };
    this.write = { durable: options.durable };
    this.cache =
      options.imageCache instanceof ImageCache
        ? options.imageCache
        : new ImageCache({ durable: options.durable, logger: options.logger, ...options.imageCache, dir: options.masterPath });
    if ((options.dhcpHostsDir === undefined) !== (options.dhcpOptsDir === undefined)) {
      throw new InvalidBootInput('dhcpHostsDir', 'dhcpHostsDir and dhcpOptsDir go together');
    }
    if (options.dhcpHostsDir !== undefined && options.dhcpOptsDir !== undefined) {
      if (options.tftpServer === undefined) throw new InvalidBootInput('tftpServer', 'is required to write DHCP entries');
      if (options.dhcpOwner === undefined) throw new InvalidBootInput('dhcpOwner', 'is required to write DHCP entries');
      this.dhcp = {
        hostsDir: options.dhcpHostsDir,
        optsDir: options.dhcpOptsDir,
        owner: dhcpOwnerToken(options.dhcpOwner),
        tftpServer: options.tftpServer,
        httpUrl: options.httpUrl,
        bootFiles: options.bootFiles,
        cleanUp: options.dhcpCleanUp,
      };
    }
    if (options.httpUrl !== undefined) checkHttpUrl(options.httpUrl);
    const ipxeReady = options.httpUrl !== undefined && options.httpRoot !== undefined;
    this.settings = {
      roots: this.roots,
      httpUrl: options.httpUrl,
      defaultBootInterface: options.defaultBootInterface ?? (ipxeReady ? 'ipxe' : 'pxe'),
      appendParams: options.appendParams ?? 'nofb vga=normal',
      deployParams: options.deployParams,
      ramdiskParams: options.ramdiskParams,
      ipxeTimeoutMs: options.ipxeTimeoutMs,
      dhcp: this.dhcp,
    };
    // Render once for a dummy node so a bad TFTP server or boot file name fails at start, not per node.
    if (this.dhcp !== undefined) {
      renderDhcpEntries({ uuid: '00000000-0000-0000-0000-000000000000', bootMode: 'bios', bootInterface: 'pxe' }, [], this.dhcp);
    }
  }

  /**
   * Runs `fn` (any number of `prepare`/`cleanUp` calls, also through drivers) with per-file fsyncs
   * deferred, then flushes the file systems once: many nodes' files are durable together at a
   * fraction of the cost. Writes stay atomic (temp file renamed into place) either way.
   */
  async batch<T>(fn: () => Promise<T>): Promise<T> {
    const context = { wrote: false };
    try {
      return await batchContext.run(context, fn);
    } finally {
      if (context.wrote && (this.options.durable ?? true)) {
        const paths = [this.options.tftpRoot, this.options.httpRoot, this.options.masterPath].filter((p): p is string => p !== undefined);
        this.flushes += 1;
        await syncFileSystems(paths).catch((err: unknown) => this.options.logger?.warn({ err: (err as Error).message }, 'could not flush boot files to disk'));
      }
    }
  }

  /** Write options for the current call: no fsync inside a batch (the batch flushes once at its end). */
  private writeOptions(): WriteOptions {
    return batchContext.getStore() === undefined ? this.write : { ...this.write, durable: false };
  }

  /**
   * Runs one node's change and tells the enclosing batch, if any, whether anything on disk changed:
   * only then does the batch flush the file systems. A change that failed part-way may have written
   * files without fsync, so it counts as a change too.
   */
  private async changing(fn: () => Promise<BootChanges>): Promise<BootChanges> {
    const context = batchContext.getStore();
    try {
      const changes = await fn();
      if (context !== undefined && changes.written.length + changes.removed.length > 0) context.wrote = true;
      return changes;
    } catch (err) {
      if (context !== undefined) context.wrote = true;
      throw err;
    }
  }

  /** What `prepare` would make of these inputs (validated and rendered, nothing read or written). */
  spec(node: BootNode, ports: readonly BootPort[], images: BootImages): NodeSpec {
    return buildNodeSpec(node, ports, images, this.settings);
  }

  /**
   * Makes the node's boot files current: images linked from the cache (downloaded and verified
   * first if needed), config for its active label, per-MAC links of its pxe-enabled ports, DHCP
   * entries; removes what an earlier prepare left that no longer applies (other boot interface or
   * mode, ports no longer pxe-enabled, instance images no longer wanted). Writes nothing when the
   * node is already current.
   */
  async prepare(node: BootNode, ports: readonly BootPort[], images: BootImages): Promise<BootChanges> {
    const spec = this.spec(node, ports, images);
    return this.changing(() =>
      this.serial(spec.uuid, async () => {
        const changes = await this.apply(spec);
        this.options.served?.serve({ uuid: spec.uuid, bootMode: spec.mode, bootInterface: spec.iface }, spec.macs);
        return changes;
      }),
    );
  }

  /**
   * Removes everything of the node: per-MAC links (of `ports` and of every MAC an earlier prepare
   * recorded), DHCP entries, and its directories. Masters stay in the cache for `clean` to judge.
   */
  async cleanUp(node: Pick<BootNode, 'uuid'>, ports: readonly BootPort[] = []): Promise<BootChanges> {
    const uuid = normalizeUuid(node.uuid);
    const given = ports.map((p, i) => normalizeMac(p.address, `ports[${i}].address`));
    return this.changing(() => this.serial(uuid, async () => {
      this.options.served?.retire(uuid);
      const changes: BootChanges = { uuid, written: [], removed: [] };
      const macs = [...new Set([...given, ...(await this.recordedMacs(uuid))])];
      await this.removeLinks(uuid, macs, new Set(), changes);
      if (this.dhcp !== undefined) {
        // Host files turned into `mac,ignore` were written; option files (and removed host files) are gone.
        addChanges(changes, await removeDhcpEntries(uuid, macs, this.dhcp, await this.dhcpOthers(), this.writeOptions()));
      }
      for (const dir of this.nodeDirs(uuid)) await this.removeDir(dir, changes);
      return changes;
    }));
  }

  /** True when this environment writes dnsmasq entries (both DHCP directories set). */
  get writesDhcp(): boolean {
    return this.dhcp !== undefined;
  }

  /**
   * Retires this conductor's DHCP entries of a node and nothing else (its boot files stay): what a
   * stopping conductor does once the node's new owner has written its own (see `dhcp.ts` for what
   * retiring writes). A no-op without DHCP directories.
   */
  async retireDhcp(node: Pick<BootNode, 'uuid'>): Promise<BootChanges> {
    const uuid = normalizeUuid(node.uuid);
    const dhcp = this.dhcp;
    if (dhcp === undefined) return { uuid, written: [], removed: [] };
    return this.changing(() => this.serial(uuid, async () => {
      const changes: BootChanges = { uuid, written: [], removed: [] };
      addChanges(changes, await removeDhcpEntries(uuid, await this.recordedMacs(uuid), dhcp, await this.dhcpOthers(), this.writeOptions()));
      return changes;
    }));
  }

  /** Compares the disk with what `prepare` would write; with `verifyChecksums` (default) images are re-hashed. */
  async inspect(node: BootNode, ports: readonly BootPort[], images: BootImages, options: { verifyChecksums?: boolean } = {}): Promise<BootInspection> {
    const spec = this.spec(node, ports, images);
    return inspectNode(spec, {
      roots: this.roots,
      cache: this.cache,
      otherDirs: this.nodeDirs(spec.uuid).filter((d) => d !== spec.layout.dir),
      recordedMacs: () => this.recordedMacs(spec.uuid),
      verifyChecksums: options.verifyChecksums ?? true,
    });
  }

  /** Fills the image cache with these images without any node layout (replicas). Returns the master paths. */
  async precache(images: Partial<BootImages>): Promise<string[]> {
    const paths: string[] = [];
    for (const role of IMAGE_ROLES) {
      const image = images[role];
      if (image === undefined) continue;
      const path = await this.cache.ensure(image, `images.${role}.checksum`);
      await this.cache.touch(path);
      paths.push(path);
    }
    return paths;
  }

  /**
   * Removes what killed processes left outside node directories: temp files older than
   * `minTempAgeMs` (default 1 hour), per-MAC links whose node directory is gone, and this
   * conductor's DHCP entries of nodes without a directory here (`dhcp-sweep.ts`). `shouldStop`,
   * asked between entries, cuts it short (`complete: false`); nothing half-done is left behind.
   */
  async sweep(options: { minTempAgeMs?: number; shouldStop?: () => boolean } = {}): Promise<SweepReport & { dhcp: string[] }> {
    const dhcp = this.dhcp;
    const dhcpDirs = dhcp === undefined ? [] : [dhcp.hostsDir, dhcp.optsDir];
    const report = await sweep({ ...sweepDirs(this.roots.tftpRoot, this.roots.httpRoot, dhcpDirs), ...options });
    if (!report.complete || dhcp === undefined) return { ...report, dhcp: [] };
    const hasNode = async (uuid: string) => (await Promise.all(this.nodeDirs(uuid).map((d) => statOrNull(d)))).some((st) => st !== null);
    const { retired, complete } = await sweepDhcpEntries(dhcp, hasNode, this.writeOptions(), (uuid, fn) => this.serial(uuid, fn), options.shouldStop);
    if (retired.length > 0) this.options.logger?.info({ nodes: retired.length, sample: retired.slice(0, 10) }, 'retired DHCP entries of nodes without boot files here');
    return { ...report, dhcp: retired, complete };
  }

  /** Uuids of the nodes that have a directory under either root (prepared, or half cleaned up); not the discovery entries. */
  listPrepared(): Promise<string[]> {
    return nodeDirUuids([this.roots.tftpRoot, this.roots.httpRoot]);
  }

  private async apply(spec: NodeSpec): Promise<BootChanges> {
    const changes: BootChanges = { uuid: spec.uuid, written: [], removed: [] };
    const write = this.writeOptions();
    const { layout } = spec;
    const others = this.nodeDirs(spec.uuid).filter((d) => d !== layout.dir);
    // Even a node whose masters are all cached names its images by URL: a file:// URL outside
    // [conductor] file_url_allowed_paths is refused here too, not only when it would be read.
    for (const role of IMAGE_ROLES) {
      const image = spec.images[role];
      if (image !== undefined) await this.cache.checkSource(image.url);
    }
    let fast: ReturnType<typeof applySync> = null;
    try {
      fast = applySync(spec, {
        masterPath: (role) => this.cache.pathFor(spec.images[role]!, `images.${role}.checksum`),
        otherDirs: others,
        write,
        ...(spec.iface === 'ipxe' && this.roots.httpRoot !== undefined ? { bootIpxe: { path: join(this.roots.httpRoot, BOOT_IPXE_NAME), content: renderBootIpxe() } } : {}),
      });
    } catch (err) {
      // A master removed by a clean-up since it was last seen: the general path fetches it again.
      if (!isMissing(err)) throw err;
      forgetMasterStats();
    }
    if (fast !== null) {
      if (fast.written.length > 0) for (const master of fast.masters) await this.cache.touch(master);
      changes.written.push(...fast.written);
      changes.removed.push(...fast.removed);
      return changes;
    }
    const own = await readTextOrNull(layout.manifest);
    // A node new here: one mkdir up front instead of each file finding the directory missing.
    if (own === null) await mkdir(layout.dir, { recursive: true });
    // Another root holds this node only after a change of boot interface: one stat each in the usual case.
    const otherManifests = await Promise.all(
      others.map(async (d) => ((await statOrNull(d)) === null ? null : ((await readTextOrNull(join(d, MANIFEST_NAME))) ?? ''))),
    );
    const recorded = [...new Set([own, ...otherManifests].flatMap(parseManifest))];
    // The manifest records format and MACs; while it is unchanged (and no other layout recorded
    // any), no link of another format or MAC can point here, and the look-up of each is skipped.
    const settled = own === spec.manifest && otherManifests.every((t) => t === null);

    await Promise.all(
      IMAGE_ROLES.map(async (role) => {
        const image = spec.images[role];
        if (image === undefined) {
          if (await removeIfPresent(layout.images[role])) changes.removed.push(layout.images[role]);
        } else if (await this.linkImage(image, layout.images[role], `images.${role}.checksum`)) {
          changes.written.push(layout.images[role]);
        }
      }),
    );
    if (await writeFileIfChanged(layout.config, spec.config, write)) changes.written.push(layout.config);

    if (!settled) {
      // Links of MACs no longer pxe-enabled, and of other formats (boot mode or interface changed).
      const wanted = new Set(spec.links.map((l) => l.path));
      await this.removeLinks(spec.uuid, [...new Set([...recorded, ...spec.macs])], wanted, changes);
      const gone = recorded.filter((m) => !spec.macs.includes(m));
      if (this.dhcp !== undefined && gone.length > 0) addChanges(changes, await retireDhcpHosts(spec.uuid, gone, this.dhcp, await this.dhcpOthers(), write));
    }
    for (const [i, dir] of others.entries()) if (otherManifests[i] !== null) await this.removeDir(dir, changes);

    if (own !== spec.manifest) {
      await writeFileAtomic(layout.manifest, spec.manifest, write);
      changes.written.push(layout.manifest);
    }
    for (const link of spec.links) {
      if (await symlinkIfChanged(link.path, link.target)) changes.written.push(link.path);
    }
    if (spec.iface === 'ipxe' && this.roots.httpRoot !== undefined) {
      const bootIpxe = join(this.roots.httpRoot, BOOT_IPXE_NAME);
      if (await writeFileIfChanged(bootIpxe, renderBootIpxe(), write)) changes.written.push(bootIpxe);
    }
    if (spec.dhcp !== null && this.dhcp !== undefined) addChanges(changes, await writeDhcpEntries(spec.dhcp, this.dhcp, await this.dhcpOthers(), write));

    if (changes.written.length + changes.removed.length > 0) {
      this.options.logger?.debug({ node: spec.uuid, written: changes.written.length, removed: changes.removed.length }, 'prepared boot files');
    }
    return changes;
  }

  /** Hard-links (or copies) the master of `image` to `dest`; true when `dest` changed. */
  private async linkImage(image: ImageSource, dest: string, field: string): Promise<boolean> {
    // Fast path, two stats: the node file is already the cached master.
    const masterPath = this.cache.pathFor(image, field);
    const [master, current] = await Promise.all([statOrNull(masterPath), statOrNull(dest)]);
    if (master !== null && sameFile(current, master)) return false;
    if (master !== null) {
      // Cached already (a replica's pre-cache, or another node's use): link it, two calls.
      try {
        await linkInto(masterPath, dest);
        await this.cache.touch(masterPath);
        return true;
      } catch (err) {
        // Removed by a clean-up just now, or a file system without hard links: the full path below.
        if (!isMissing(err) && (err as NodeJS.ErrnoException).code !== 'EXDEV' && (err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
      }
    }
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.cache.use(
          image,
          async (path) => {
            const how = await linkOrCopyIfChanged(path, dest, this.writeOptions());
            if (how !== null) await this.cache.touch(path);
            return how !== null;
          },
          field,
        );
      } catch (err) {
        // Another process's clean-up removed the master between ensure and link: fetch it again, once.
        if (attempt > 0 || !isMissing(err)) throw err;
      }
    }
  }

  private async removeLinks(uuid: string, macs: readonly string[], keep: ReadonlySet<string>, changes: BootChanges): Promise<void> {
    for (const mac of macs) {
      for (const link of allMacLinks(this.roots, uuid, mac)) {
        if (keep.has(link.path)) continue;
        if (await removeLinkIfTarget(link.path, link.target)) changes.removed.push(link.path);
      }
    }
  }

  private async removeDir(dir: string, changes: BootChanges): Promise<void> {
    if ((await statOrNull(dir, false)) === null) return;
    // The node stopped using its images now: stamp them so the cache's TTL counts from here.
    for (const role of IMAGE_ROLES) await this.cache.touch(join(dir, NODE_FILES[role]), true);
    await rm(dir, { recursive: true, force: true });
    changes.removed.push(dir);
  }

  /**
   * The other conductors with entries in the DHCP directories: listed at most once a second (a
   * take-over writes thousands of nodes' entries; conductors come and go far less often). The
   * periodic verify pass rewrites every owned node's entries, which catches a conductor missed here.
   */
  private dhcpOthers(): Promise<string[]> {
    const dhcp = this.dhcp;
    if (dhcp === undefined) return Promise.resolve([]);
    const now = Date.now();
    if (this.others === null || now - this.others.at >= DHCP_OWNERS_TTL_MS) {
      const list = listDhcpOwners(dhcp).then((owners) => owners.filter((o) => o !== dhcp.owner));
      // A failed listing is not kept: the next call lists again.
      list.catch(() => {
        if (this.others?.list === list) this.others = null;
      });
      this.others = { at: now, list };
    }
    return this.others.list;
  }

  private nodeDirs(uuid: string): string[] {
    return [this.roots.tftpRoot, this.roots.httpRoot].filter((r): r is string => r !== undefined).map((r) => join(r, uuid));
  }

  private async recordedMacs(uuid: string): Promise<string[]> {
    const lists = await Promise.all(this.nodeDirs(uuid).map(async (dir) => parseManifest(await readTextOrNull(join(dir, MANIFEST_NAME)))));
    return [...new Set(lists.flat())];
  }

  private serial<T>(uuid: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(uuid) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(uuid, settled);
    void settled.then(() => {
      if (this.chains.get(uuid) === settled) this.chains.delete(uuid);
    });
    return next;
  }
}
