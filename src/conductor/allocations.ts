/**
 * The allocating process (Ironic's `conductor/allocations.py`): a conductor fulfils the allocations
 * in state `allocating` that the ring gives it — the allocation's uuid on the default conductor
 * group's ring, or, when that group has no live conductor, on one ring over every live conductor —
 * by picking a suitable node and claiming it (`claimNode`: one compare-and-set transaction, so no two
 * conductors and no two allocations ever take one node; a lost race moves on to the next node).
 *
 * Which conductor works on an allocation is a function of the live membership, so an allocation a
 * conductor left `allocating` when it died or stopped is picked up by the next pass of its new
 * owner: a pass runs when the API announces a new allocation (PostgreSQL NOTIFY), on every ring
 * change, and every `pollMs` (SQLite has no notifications). Allocations need no driver (Ironic's
 * `load_driver=False`), so any conductor of any group can do the work.
 *
 * A suitable node (Ironic's `_candidate_nodes`): of the allocation's resource class, `available`,
 * with a known power state, not in maintenance, with no instance and no allocation, with every
 * requested trait, among `candidate_nodes` when given and owned or leased by the allocation's
 * `owner` when set.
 * They are tried in random order (two allocations do not try nodes in the same order), a node named
 * like the allocation first (API 1.79's behaviour). Nodes locked by a conductor's task are tried
 * again `retry.attempts` times; no node → `error` with a `last_error` saying why.
 */
import { HashRing } from '../ring/index.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import { Conflict } from '../common/errors.js';
import type { Listener } from '../db/notifications.js';
import type { NodeRow } from '../db/schema.js';
import { ALLOCATIONS_CHANNEL, allocatingAllocations, claimNode, deleteAllocationOfNode, failAllocation } from '../nodes/allocation-store.js';
import type { ClaimTarget } from '../nodes/allocation-store.js';

export interface AllocationWorkerDeps {
  store: Store;
  /** This conductor's hostname: its name on the rings. */
  hostname: string;
  /** The conductors' live rings. */
  view: ConductorRings;
  logger: Logger;
  /** This conductor's row id, recorded on the allocations it fulfils. */
  conductorId: () => number | undefined;
  /** How often to look for allocations without a notification (ms); 0: only when told. */
  pollMs: number;
  /** How often, and how far apart, to try nodes that were locked (Ironic's `node_locked_retry_*`). */
  retry: { attempts: number; intervalMs: number };
  /** The order candidates are tried in: `Math.random` unless a test fixes it. */
  random?: () => number;
}

/** Allocations read per pass; the next pass takes the rest. */
const PASS_BATCH = 100;

/** The conductor that works on an allocation: its uuid on the default group's ring, else on all live conductors'. */
export function allocationOwner(view: ConductorRings, uuid: string): string | null {
  const owner = view.owner('', uuid);
  if (owner !== null) return owner;
  const hosts = [...new Set(view.members().map((m) => m.name))].sort();
  if (hosts.length === 0) return null;
  return new HashRing(hosts.map((name) => ({ name, weight: 1 }))).owner(uuid) ?? null;
}

export class AllocationWorker {
  /** Allocations being worked on here, by row id: a pass never starts one twice. */
  private readonly inFlight = new Map<number, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private listener: Listener | null = null;
  private unsubscribe: (() => void) | undefined;
  private passing: Promise<number> | null = null;
  private again = false;
  private stopped = true;
  private readonly log: Logger;

  constructor(private readonly deps: AllocationWorkerDeps) {
    this.log = deps.logger.child({ component: 'allocations' });
  }

  /** Follows notifications, ring changes and the poll interval, and runs a first pass. */
  async start(): Promise<void> {
    this.stopped = false;
    this.unsubscribe = this.deps.view.subscribe(() => this.trigger());
    try {
      this.listener = await this.deps.store.listen(ALLOCATIONS_CHANNEL, { onMessage: () => this.trigger(), onReconnect: () => this.trigger() });
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'cannot listen for new allocations; polling');
    }
    if (this.deps.pollMs > 0) {
      this.timer = setInterval(() => this.trigger(), this.deps.pollMs);
      this.timer.unref();
    }
    this.trigger();
  }

  /** Stops looking and waits for the allocations in flight. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.listener?.close();
    this.listener = null;
    await this.passing?.catch(() => undefined);
    await this.idle();
  }

  /** Resolves once every allocation started here has ended. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Asks for a pass; one at a time, a request during a pass makes one more after it. */
  trigger(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    void this.pass().catch((err: unknown) => this.log.error({ err: (err as Error).message }, 'allocation pass failed'));
  }

  /**
   * Starts work on every `allocating` allocation this conductor owns that is not in flight here;
   * resolves to how many it started (their work goes on in the background: see `idle`).
   */
  pass(): Promise<number> {
    this.passing ??= this.doPass().finally(() => {
      this.passing = null;
      if (this.again && !this.stopped) {
        this.again = false;
        this.trigger();
      }
    });
    return this.passing;
  }

  private async doPass(): Promise<number> {
    const view = await this.deps.view.current();
    let started = 0;
    for (const { id, uuid } of await allocatingAllocations(this.deps.store, PASS_BATCH)) {
      if (this.inFlight.has(id) || allocationOwner(view, uuid) !== this.deps.hostname) continue;
      const work = this.allocate(id)
        .catch((err: unknown) => this.log.error({ allocation: uuid, err: (err as Error).message }, 'allocation failed unexpectedly'))
        .finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, work);
      started += 1;
    }
    return started;
  }

  /** Works on one allocation until it is active, failed, or gone. */
  async allocate(id: number): Promise<void> {
    const { store } = this.deps;
    const allocation = await store.db.selectFrom('allocations').selectAll().where('id', '=', id).executeTakeFirst();
    if (allocation === undefined || allocation.state !== 'allocating') return;
    try {
      const nodes = await this.candidates(allocation);
      if (typeof nodes === 'string') {
        await this.fail(allocation, nodes);
        return;
      }
      let remaining = nodes;
      for (let attempt = 1; ; attempt += 1) {
        const locked: typeof nodes = [];
        for (const node of remaining) {
          const outcome = await claimNode(store, { allocation, node, conductorId: this.deps.conductorId() ?? null });
          if (outcome === 'claimed') {
            this.log.info({ allocation: allocation.uuid, node: node.uuid }, 'node reserved for allocation');
            return;
          }
          if (outcome === 'gone') return;
          if (outcome === 'locked') locked.push(node);
        }
        if (locked.length === 0) {
          await this.fail(allocation, 'all nodes were filtered out during reservation');
          return;
        }
        if (attempt >= this.deps.retry.attempts || this.stopped) {
          await this.fail(allocation, `could not reserve any of ${locked.length} suitable nodes`);
          return;
        }
        remaining = locked;
        await new Promise((resolve) => setTimeout(resolve, this.deps.retry.intervalMs));
      }
    } catch (err) {
      await this.fail(allocation, `Unexpected exception during allocation: ${(err as Error).message}`);
    }
  }

  private async fail(allocation: { id: number; uuid: string }, reason: string): Promise<void> {
    const message = `Failed to process allocation ${allocation.uuid}: ${reason}.`;
    if (await failAllocation(this.deps.store, allocation.id, message)) this.log.warn({ allocation: allocation.uuid, reason }, 'allocation failed');
  }

  /** The nodes to try, in order, or why there are none. */
  private async candidates(allocation: ClaimTarget['allocation'] & { name: string | null; candidate_nodes: string[]; owner: string | null }): Promise<Array<ClaimTarget['node'] & { name: string | null }> | string> {
    let q = this.deps.store.db
      .selectFrom('nodes')
      .select(['id', 'uuid', 'name', 'traits', 'instance_info'])
      .where('resource_class', '=', allocation.resource_class ?? '')
      .where('provision_state', '=', 'available')
      .where('instance_uuid', 'is', null)
      .where('allocation_id', 'is', null)
      .where('power_state', 'is not', null)
      .where('maintenance', '=', false);
    if (allocation.candidate_nodes.length > 0) q = q.where('uuid', 'in', allocation.candidate_nodes);
    // Ironic's `project` filter: the node's owner or lessee.
    if (allocation.owner !== null) q = q.where((eb) => eb.or([eb('owner', '=', allocation.owner), eb('lessee', '=', allocation.owner)]));
    const rows = await q.orderBy('id').execute();
    if (rows.length === 0) {
      return allocation.candidate_nodes.length > 0
        ? `none of the requested nodes are available and match the resource class ${allocation.resource_class}`
        : `no available nodes match the resource class ${allocation.resource_class}`;
    }
    const wanted = allocation.traits;
    const suitable = rows.filter((n) => wanted.every((t) => n.traits.includes(t)));
    if (suitable.length === 0) return `no suitable nodes have the requested traits ${wanted.join(', ')}`;
    // Fisher-Yates: parallel allocations do not try the nodes in the same order.
    const random = this.deps.random ?? Math.random;
    for (let i = suitable.length - 1; i > 0; i -= 1) {
      const j = Math.floor(random() * (i + 1));
      [suitable[i], suitable[j]] = [suitable[j]!, suitable[i]!];
    }
    // A node named like the allocation goes first (Ironic's, since 1.79's release).
    const named = allocation.name === null ? -1 : suitable.findIndex((n) => n.name === allocation.name);
    if (named > 0) suitable.unshift(...suitable.splice(named, 1));
    return suitable;
  }
}

/** Provision states in which a node's instance may be cleared while it has an allocation (Ironic's `update_node`). */
const INSTANCE_CLEAR_STATES: readonly string[] = ['enroll', 'inspecting', 'inspect wait', 'manageable', 'available'];

/**
 * A PATCH that clears the instance of a node holding an allocation (Ironic's `update_node`): refused
 * (409) outside `INSTANCE_CLEAR_STATES` unless the node is in maintenance; otherwise the allocation
 * goes with the instance. Called under the node's lock, before the node is written.
 */
export async function clearInstanceAllocation(store: Store, node: Pick<NodeRow, 'id' | 'uuid' | 'allocation_id' | 'maintenance' | 'provision_state'>): Promise<void> {
  if (node.allocation_id === null) return;
  if (!node.maintenance && !INSTANCE_CLEAR_STATES.includes(node.provision_state)) {
    throw new Conflict(`node ${node.uuid} with an allocation can not have instance_uuid removed unless it is in one of allowed (${INSTANCE_CLEAR_STATES.join(', ')}) states or in maintenance mode`);
  }
  await deleteAllocationOfNode(store, node.id);
}
