/**
 * Reading the DHCP directories as a whole: which conductors write into them (so the owner of a node
 * knows whose entries to retire), and the periodic clean-up of this conductor's own entries that no
 * node directory backs any more (a crash, an operator's `rm -rf`, files of the old naming scheme).
 */
import { join } from 'node:path';
import { readdirOrEmpty, readTextOrNull } from './atomic-fs.js';
import type { WriteOptions } from './atomic-fs.js';
import { isLiveHostLine, removeDhcpEntries } from './dhcp.js';
import type { DhcpOptions } from './dhcp.js';
import { hostLineNode, parseHostFileName, parseOptsFileName } from './dhcp-names.js';

const names = readdirOrEmpty;

/** Tokens of the conductors with files in the DHCP directories (this one included when it has any), sorted. */
export async function listDhcpOwners(dirs: Pick<DhcpOptions, 'hostsDir' | 'optsDir'>): Promise<string[]> {
  const owners = new Set<string>();
  for (const name of await names(dirs.hostsDir)) {
    const parsed = parseHostFileName(name);
    if (parsed?.owner) owners.add(parsed.owner);
  }
  for (const name of await names(dirs.optsDir)) {
    const parsed = parseOptsFileName(name);
    if (parsed?.owner) owners.add(parsed.owner);
  }
  return [...owners].sort();
}

/**
 * Retires this conductor's entries (option files, live host lines) of nodes for which `hasNode` says
 * no boot state is here: `prepare` makes a node's directory before its DHCP entries, and `cleanUp`
 * retires them before it removes the directory, so entries without a directory are left-overs. Files of the old
 * scheme count as this conductor's only when no other conductor writes into the directories (then
 * they can only be this conductor's, from before it was upgraded). Returns the uuids retired.
 */
export async function sweepDhcpEntries(
  options: DhcpOptions,
  hasNode: (uuid: string) => Promise<boolean>,
  write: WriteOptions = {},
  /** Runs one node's retirement (the boot environment serializes it with that node's other changes). */
  serial: <T>(uuid: string, fn: () => Promise<T>) => Promise<T> = (_uuid, fn) => fn(),
  /** Asked between nodes: true stops here (see `SweepOptions.shouldStop`); `complete` then says false. */
  shouldStop: () => boolean = () => false,
): Promise<{ retired: string[]; complete: boolean }> {
  const others = (await listDhcpOwners(options)).filter((o) => o !== options.owner);
  const mine = (owner: string | null) => owner === options.owner || (owner === null && others.length === 0);
  // Node uuid → MACs whose live host line (of ours) points at it.
  const macsOf = new Map<string, string[]>();
  const withOpts = new Set<string>();
  for (const name of await names(options.hostsDir)) {
    const parsed = parseHostFileName(name);
    if (!parsed || !mine(parsed.owner)) continue;
    if (shouldStop()) return { retired: [], complete: false };
    const content = await readTextOrNull(join(options.hostsDir, name));
    if (content === null || !isLiveHostLine(content)) continue;
    const uuid = hostLineNode(content, parsed.owner);
    if (uuid === null) continue;
    const list = macsOf.get(uuid) ?? [];
    list.push(parsed.mac);
    macsOf.set(uuid, list);
  }
  for (const name of await names(options.optsDir)) {
    const parsed = parseOptsFileName(name);
    if (parsed && mine(parsed.owner)) withOpts.add(parsed.uuid);
  }
  const retired: string[] = [];
  for (const uuid of [...new Set([...withOpts, ...macsOf.keys()])].sort()) {
    if (shouldStop()) return { retired, complete: false };
    if (await hasNode(uuid)) continue;
    const changed = await serial(uuid, async () => {
      // Looked at again in the node's turn: a prepare may have made it since.
      if (await hasNode(uuid)) return false;
      const changes = await removeDhcpEntries(uuid, macsOf.get(uuid) ?? [], options, others, write);
      return changes.written.length + changes.removed.length > 0;
    });
    if (changed) retired.push(uuid);
  }
  return { retired, complete: true };
}
