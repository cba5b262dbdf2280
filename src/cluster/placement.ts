/**
 * Where the ring places nodes right now: owner and replicas of each node, and how many nodes each
 * live conductor owns — computed from the live conductors (database clock) and the nodes table.
 * Backs `GET /v1/ring` and `ironring ring show`.
 */
import { HashRing } from '../ring/index.js';
import type { HashRingOptions } from '../ring/index.js';
import type { Store } from '../db/connect.js';
import { listConductors, membersByGroup } from './membership.js';

export interface NodePlacement {
  uuid: string;
  name: string | null;
  conductor_group: string;
  /** Null when the node's group has no live conductor. */
  owner: string | null;
  /** Further conductors after the owner, in ring order. */
  replicas: string[];
  /** The conductor whose boot files for the node are current (null: none yet); differs from `owner` while a take-over is pending. */
  conductor_affinity: string | null;
}

export interface GroupPlacement {
  conductor_group: string;
  /** Live conductors of the group, by name. */
  hosts: string[];
  /** Nodes owned per live conductor (every live conductor listed, zero included). */
  node_counts: Record<string, number>;
}

export interface Placement {
  replicas: number;
  groups: GroupPlacement[];
  nodes: NodePlacement[];
}

export interface PlacementOptions {
  heartbeatTimeout: number;
  /** Conductors per node: owner + replicas. */
  replicas: number;
  ring: HashRingOptions;
  /** Only this node (by uuid or name). */
  node?: string;
}

/**
 * Rings built recently, by options and members: membership changes rarely while every API request
 * needs the rings, and a balanced ring takes milliseconds to build.
 */
const ringCache = new Map<string, HashRing>();
const RING_CACHE_SIZE = 32;

/** The ring for these members, built once per distinct member set. */
export function cachedRing(members: ReadonlyArray<{ name: string; weight: number }>, options: HashRingOptions): HashRing {
  const key = `${options.mode ?? ''}/${options.partitions ?? ''}/${members.map((m) => `${m.name}*${m.weight}`).sort().join(',')}`;
  let ring = ringCache.get(key);
  if (ring === undefined) {
    ring = new HashRing(members, options);
    if (ringCache.size >= RING_CACHE_SIZE) ringCache.delete(ringCache.keys().next().value!);
    ringCache.set(key, ring);
  }
  return ring;
}

function liveRings(conductors: Parameters<typeof membersByGroup>[0], options: HashRingOptions): Map<string, HashRing> {
  const rings = new Map<string, HashRing>();
  for (const [group, members] of membersByGroup(conductors)) rings.set(group, cachedRing(members, options));
  return rings;
}

export async function currentPlacement(store: Store, options: PlacementOptions): Promise<Placement> {
  const conductors = await listConductors(store, options.heartbeatTimeout);
  const rings = liveRings(conductors, options.ring);

  const names = new Map(conductors.map((c) => [c.id, c.hostname]));
  let query = store.db.selectFrom('nodes').select(['uuid', 'name', 'conductor_group', 'conductor_affinity']).orderBy('uuid');
  if (options.node !== undefined) {
    const ident = options.node;
    query = query.where((eb) => eb.or([eb('uuid', '=', ident), eb('name', '=', ident)]));
  }
  const nodes = await query.execute();

  const groups = new Map<string, GroupPlacement>();
  for (const [group, ring] of rings) {
    groups.set(group, { conductor_group: group, hosts: ring.hosts, node_counts: Object.fromEntries(ring.hosts.map((h) => [h, 0])) });
  }
  const placed = nodes.map(({ conductor_affinity: affinity, ...n }): NodePlacement => {
    const conductor_affinity = affinity === null ? null : (names.get(affinity) ?? null);
    const ring = rings.get(n.conductor_group);
    if (!ring) return { ...n, owner: null, replicas: [], conductor_affinity };
    const [owner, ...replicas] = ring.lookup(n.uuid, { replicas: options.replicas });
    const counts = groups.get(n.conductor_group)!.node_counts;
    counts[owner!] = (counts[owner!] ?? 0) + 1;
    return { ...n, owner: owner!, replicas, conductor_affinity };
  });
  for (const n of placed) {
    if (n.owner === null && !groups.has(n.conductor_group)) groups.set(n.conductor_group, { conductor_group: n.conductor_group, hosts: [], node_counts: {} });
  }
  return { replicas: options.replicas, groups: [...groups.values()].sort((a, b) => a.conductor_group.localeCompare(b.conductor_group)), nodes: placed };
}

/**
 * A lookup of each node's owner conductor under the current live membership: one membership read,
 * then a ring lookup per node (for the API's `conductor` field and for routing).
 */
export async function ownerLookup(
  store: Store,
  options: Pick<PlacementOptions, 'heartbeatTimeout' | 'ring'> & { replicas?: number },
): Promise<{
  owner: (node: { uuid: string; conductor_group: string }) => string | null;
  /** The replicas after the owner, in ring order. */
  replicas: (node: { uuid: string; conductor_group: string }) => string[];
  /** Hostname of a conductor by row id (live or not), for `conductor_affinity`. */
  hostname: (id: number | null) => string | null;
  rpcUrl: (host: string) => string | null;
}> {
  const conductors = await listConductors(store, options.heartbeatTimeout);
  const rings = liveRings(conductors, options.ring);
  const urls = new Map(conductors.filter((c) => c.alive).map((c) => [c.hostname, c.rpcUrl]));
  const names = new Map(conductors.map((c) => [c.id, c.hostname]));
  return {
    owner: (node) => rings.get(node.conductor_group)?.lookup(node.uuid)[0] ?? null,
    replicas: (node) => rings.get(node.conductor_group)?.lookup(node.uuid, { replicas: options.replicas ?? 1 }).slice(1) ?? [],
    hostname: (id) => (id === null ? null : (names.get(id) ?? null)),
    rpcUrl: (host) => urls.get(host) ?? null,
  };
}
