/**
 * Comparing a node's files on disk with what `prepare` would make of them, item by item, without
 * changing anything. Used by operators (why does this node not boot?) and by tests.
 */
import { readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readTextOrNull, sameFile, statOrNull } from './atomic-fs.js';
import { hashFile } from './image-cache.js';
import type { ImageCache } from './image-cache.js';
import { allMacLinks, BOOT_IPXE_NAME } from './layout.js';
import type { BootRoots } from './layout.js';
import type { NodeSpec } from './node-spec.js';
import { renderBootIpxe } from './templates/index.js';
import { IMAGE_ROLES } from './types.js';
import { parseChecksum } from './validate.js';

/** States of one inspected item. */
export const ITEM_STATES = ['ok', 'missing', 'stale', 'corrupt', 'extra'] as const;
/**
 * `ok`: as prepare would write it; `missing`: absent; `stale`: present but different (old config,
 * link to elsewhere, file not linked to the cached master); `corrupt`: an image whose content no
 * longer matches its checksum; `extra`: present but prepare would remove it.
 */
export type ItemState = (typeof ITEM_STATES)[number];

/** One file, link or directory of a node's boot state. */
export interface InspectedItem {
  kind: 'config' | 'manifest' | 'image' | 'link' | 'global' | 'dhcp' | 'directory';
  path: string;
  state: ItemState;
  detail?: string;
}

/** What `inspect` found. */
export interface BootInspection {
  uuid: string;
  /** Some of the node's files exist (its directory in either root). */
  present: boolean;
  /** Every item is `ok`: a `prepare` now would write nothing. */
  current: boolean;
  items: InspectedItem[];
}

/** What `inspectNode` needs besides the spec. */
export interface InspectContext {
  roots: BootRoots;
  cache: ImageCache;
  /** The node's directories in the other roots (present only after a change of boot interface). */
  otherDirs: string[];
  recordedMacs: () => Promise<string[]>;
  verifyChecksums: boolean;
}

async function compareText(kind: InspectedItem['kind'], path: string, want: string): Promise<InspectedItem> {
  const have = await readTextOrNull(path);
  return { kind, path, state: have === null ? 'missing' : have === want ? 'ok' : 'stale' };
}

/** Inspects one node. */
export async function inspectNode(spec: NodeSpec, ctx: InspectContext): Promise<BootInspection> {
  const items: InspectedItem[] = [];
  const { layout } = spec;

  items.push(await compareText('config', layout.config, spec.config));
  items.push(await compareText('manifest', layout.manifest, spec.manifest));

  for (const role of IMAGE_ROLES) {
    const path = layout.images[role];
    const image = spec.images[role];
    const st = await statOrNull(path);
    if (image === undefined) {
      if (st !== null) items.push({ kind: 'image', path, state: 'extra' });
      continue;
    }
    if (st === null) {
      items.push({ kind: 'image', path, state: 'missing' });
      continue;
    }
    const { algorithm, hex } = parseChecksum(image.checksum);
    if (ctx.verifyChecksums) {
      const actual = await hashFile(path, algorithm);
      if (actual !== hex) {
        items.push({ kind: 'image', path, state: 'corrupt', detail: `expected ${algorithm}:${hex}, got ${algorithm}:${actual}` });
        continue;
      }
    }
    const master = await statOrNull(ctx.cache.pathFor(image));
    if (master === null) items.push({ kind: 'image', path, state: 'stale', detail: 'its master is no longer in the image cache' });
    else if (!sameFile(st, master)) items.push({ kind: 'image', path, state: 'stale', detail: 'not linked to the cached master' });
    else items.push({ kind: 'image', path, state: 'ok' });
  }

  const wanted = new Set(spec.links.map((l) => l.path));
  for (const link of spec.links) {
    let target: string | null = null;
    try {
      target = await readlink(link.path);
    } catch {
      target = null;
    }
    const state = target === null ? 'missing' : target === link.target ? 'ok' : 'stale';
    items.push({ kind: 'link', path: link.path, state, ...(state === 'stale' ? { detail: `points to ${target}` } : {}) });
  }
  for (const mac of new Set([...(await ctx.recordedMacs()), ...spec.macs])) {
    for (const link of allMacLinks(ctx.roots, spec.uuid, mac)) {
      if (wanted.has(link.path)) continue;
      const target = await readlink(link.path).catch(() => null);
      if (target === link.target) items.push({ kind: 'link', path: link.path, state: 'extra' });
    }
  }
  for (const dir of ctx.otherDirs) {
    if ((await statOrNull(dir)) !== null) items.push({ kind: 'directory', path: dir, state: 'extra' });
  }

  if (spec.iface === 'ipxe' && ctx.roots.httpRoot !== undefined) {
    items.push(await compareText('global', join(ctx.roots.httpRoot, BOOT_IPXE_NAME), renderBootIpxe()));
  }
  if (spec.dhcp !== null) {
    items.push(await compareText('dhcp', spec.dhcp.opts.path, spec.dhcp.opts.content));
    for (const host of spec.dhcp.hosts) items.push(await compareText('dhcp', host.path, host.content));
  }
  const present = (await Promise.all([layout.dir, ...ctx.otherDirs].map((d) => statOrNull(d)))).some((st) => st !== null);
  return { uuid: spec.uuid, present, current: items.every((i) => i.state === 'ok'), items };
}
