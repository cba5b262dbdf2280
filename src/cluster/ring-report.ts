/**
 * The ring report: where the conductors' live rings place nodes right now — owner and replicas of
 * each node, and how many nodes each live conductor owns. Backs `GET /v1/ring` and
 * `ironring ring show`; the rings come from the conductors' live rings (`conductor-rings.ts`).
 */
import type { Store } from '../db/connect.js';
import { nodeOwners } from './conductor-rings.js';
import type { ConductorRings } from './conductor-rings.js';

export interface NodeOwnership {
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

export interface GroupOwnership {
  conductor_group: string;
  /** Live conductors of the group, by name. */
  hosts: string[];
  /** Nodes owned per live conductor (every live conductor listed, zero included). */
  node_counts: Record<string, number>;
}

export interface RingReport {
  replicas: number;
  groups: GroupOwnership[];
  nodes: NodeOwnership[];
}

export interface RingReportOptions {
  /** Conductors per node: owner + replicas. */
  replicas: number;
  /** Only this node (by uuid or name). */
  node?: string;
}

/** The report over `rings` as they are now (the caller decides how fresh) and the nodes table. */
export async function ringReport(store: Store, rings: ConductorRings, options: RingReportOptions): Promise<RingReport> {
  let query = store.db.selectFrom('nodes').select(['uuid', 'name', 'conductor_group', 'conductor_affinity']).orderBy('uuid');
  if (options.node !== undefined) {
    const ident = options.node;
    query = query.where((eb) => eb.or([eb('uuid', '=', ident), eb('name', '=', ident)]));
  }
  const nodes = await query.execute();
  const owners = nodeOwners(rings, options.replicas);

  const groups = new Map<string, GroupOwnership>();
  for (const group of rings.groups()) {
    const hosts = rings.ring(group)!.hosts;
    groups.set(group, { conductor_group: group, hosts, node_counts: Object.fromEntries(hosts.map((h) => [h, 0])) });
  }
  const placed = nodes.map(({ conductor_affinity: affinity, ...n }): NodeOwnership => {
    const conductor_affinity = owners.hostname(affinity);
    const owner = owners.owner(n);
    if (owner === null) return { ...n, owner: null, replicas: [], conductor_affinity };
    const counts = groups.get(n.conductor_group)!.node_counts;
    counts[owner] = (counts[owner] ?? 0) + 1;
    return { ...n, owner, replicas: owners.replicas(n), conductor_affinity };
  });
  for (const n of placed) {
    if (n.owner === null && !groups.has(n.conductor_group)) groups.set(n.conductor_group, { conductor_group: n.conductor_group, hosts: [], node_counts: {} });
  }
  return { replicas: options.replicas, groups: [...groups.values()].sort((a, b) => a.conductor_group.localeCompare(b.conductor_group)), nodes: placed };
}
