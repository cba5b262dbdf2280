/**
 * Which compute service exposes which bare-metal node — a pure function of the live services, the
 * nodes and the instances, so every compute service computes the same answer (DESIGN §1, §7).
 *
 * - A node with an instance stays with the instance's host while that host is live: the service
 *   that deploys an instance keeps managing it, whatever the ring says.
 * - Every other node goes to its owner on a ring over the live compute services of the cell (host
 *   names lower-cased, as Nova builds its ring).
 * - When an instance's host is dead, the node's ring owner takes the node **and** the instance
 *   (Nova leaves both stranded on the dead service).
 *
 * `planFor(me, …)` returns only the writes `me` makes: each service writes the rows it should own and
 * nothing else, with conditions on the previous host, so an old owner never undoes a new owner's
 * take-over and nothing is ever duplicated.
 */
import { HashRing } from '../ring/index.js';
import type { RingMode } from '../ring/index.js';

/** A node as the compute tier lists it from the bare-metal API. */
export interface NodeSummary {
  uuid: string;
  resourceClass: string | null;
}

/** A `compute_nodes` row. */
export interface ComputeNodeRow {
  uuid: string;
  host: string;
  resourceClass: string | null;
}

/** An instance that holds a node. */
export interface PlacedInstance {
  uuid: string;
  host: string | null;
  node: string;
}

/**
 * What a plan is computed from. The live services come as their ring (a running service takes it
 * from its live rings, rebuilt only when the services change) or as host names (a ring is built
 * for this plan alone: tests, tools).
 */
export type OwnershipInput = {
  nodes: readonly NodeSummary[];
  computeNodes: readonly ComputeNodeRow[];
  instances: readonly PlacedInstance[];
} & (
  | { ring: ServiceRing }
  | {
      /** Host names of the live compute services of the cell (the caller itself included). */
      liveHosts: readonly string[];
      ringMode?: RingMode;
    }
);

/** The writes one service makes to bring the cell in line. */
export interface OwnershipPlan {
  /** Rows to create (`from` null) or take over from `from`, or refresh (`from` = me). */
  claim: Array<{ uuid: string; resourceClass: string | null; from: string | null }>;
  /** Instances whose host is dead and whose node this service now owns. */
  adoptInstances: Array<{ uuid: string; from: string | null }>;
  /** Rows of nodes that no longer exist, to delete where the row's host is still `host`. */
  remove: Array<{ uuid: string; host: string }>;
  /** How many nodes this service exposes after the plan. */
  owned: number;
}

/** The live-service ring: lower-cased names on the ring, mapped back to the hosts as registered. */
export class ServiceRing {
  private readonly byLower = new Map<string, string>();

  /** The ring over `liveHosts`, built here. */
  static of(liveHosts: readonly string[], mode: RingMode = 'balanced'): ServiceRing {
    const names = [...new Set(liveHosts.map((h) => h.toLowerCase()))];
    return new ServiceRing(liveHosts, names.length > 0 ? new HashRing(names, { mode }) : null);
  }

  /**
   * @param liveHosts the live hosts as registered; the first of several names that differ only in case is kept.
   * @param ring the ring over their lower-cased names (null: none live).
   */
  constructor(
    liveHosts: readonly string[],
    private readonly ring: HashRing | null,
  ) {
    for (const host of liveHosts) if (!this.byLower.has(host.toLowerCase())) this.byLower.set(host.toLowerCase(), host);
  }

  /** Whether `host` is one of the live services. */
  isLive(host: string | null): host is string {
    return host !== null && this.byLower.get(host.toLowerCase()) !== undefined;
  }

  /** The live service that owns `uuid` on the ring (null when no service is live). */
  owner(uuid: string): string | null {
    if (!this.ring) return null;
    return this.byLower.get(this.ring.owner(uuid))!;
  }

  /** Live host names, sorted. */
  get hosts(): string[] {
    return [...this.byLower.values()].sort();
  }
}

/** The host that should expose `node`: the instance's live host, else the ring owner. */
export function desiredHost(ring: ServiceRing, nodeUuid: string, instance: PlacedInstance | undefined): string | null {
  if (instance && ring.isLive(instance.host)) return instance.host;
  return ring.owner(nodeUuid);
}

const same = (a: string | null, b: string | null) => (a ?? '').toLowerCase() === (b ?? '').toLowerCase();

/** The writes `me` makes so that the nodes it should expose are its own, and only those. */
export function planFor(me: string, input: OwnershipInput): OwnershipPlan {
  const ring = 'ring' in input ? input.ring : ServiceRing.of(input.liveHosts, input.ringMode);
  const rows = new Map(input.computeNodes.map((r) => [r.uuid, r]));
  const byNode = new Map(input.instances.map((i) => [i.node, i]));
  const plan: OwnershipPlan = { claim: [], adoptInstances: [], remove: [], owned: 0 };
  const present = new Set<string>();
  for (const node of input.nodes) {
    present.add(node.uuid);
    const instance = byNode.get(node.uuid);
    const host = desiredHost(ring, node.uuid, instance);
    if (host === null || !same(host, me)) continue;
    plan.owned++;
    const row = rows.get(node.uuid);
    if (!row) plan.claim.push({ uuid: node.uuid, resourceClass: node.resourceClass, from: null });
    else if (row.host !== me || row.resourceClass !== node.resourceClass) plan.claim.push({ uuid: node.uuid, resourceClass: node.resourceClass, from: row.host });
    if (instance && instance.host !== me) plan.adoptInstances.push({ uuid: instance.uuid, from: instance.host });
  }
  // Rows of nodes that are gone: their host removes them, or the ring owner when that host is dead.
  for (const row of input.computeNodes) {
    if (present.has(row.uuid)) continue;
    const responsible = ring.isLive(row.host) ? row.host : ring.owner(row.uuid);
    if (responsible !== null && same(responsible, me)) plan.remove.push({ uuid: row.uuid, host: row.host });
  }
  return plan;
}
