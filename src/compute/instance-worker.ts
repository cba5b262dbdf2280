/**
 * A compute service's instance work: deploy the node of each `building` instance it hosts and tear
 * down the node of each instance being deleted — only through the bare-metal REST API.
 *
 * Each pass advances every instance by at most one step, judged from the node's current state
 * (never from what this process remembers), so the work is idempotent and survives a take-over: a
 * service that inherits an instance from a dead one continues where the node is.
 */
import { deleteInstanceMapping } from '../cells/instance-mappings.js';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import { BaremetalApiError } from './baremetal-client.js';
import type { BaremetalClient, BaremetalNode } from './baremetal-client.js';
import { encodeFault } from './instances.js';
import type { InstanceRow } from './instances.js';

const NODE_FIELDS = ['uuid', 'provision_state', 'target_provision_state', 'instance_uuid', 'maintenance', 'last_error'] as const;

/** Provision states from which `deleted` (undeploy) is accepted, whatever the target says. */
const UNDEPLOYABLE: ReadonlySet<string> = new Set(['active', 'deploy failed', 'error', 'wait call-back']);
/**
 * Provision states a failed operation leaves a node in. A failed node keeps its
 * `target_provision_state` (as in Ironic: `deploy failed` still targets `active`), so failure is
 * judged by the state alone — waiting for the target to clear waited forever. The compute tier
 * reaches the bare-metal tier only through its REST API, so this is its own copy of the names.
 */
export const NODE_FAILED_STATES: ReadonlySet<string> = new Set(['deploy failed', 'clean failed', 'inspect failed', 'rescue failed', 'unrescue failed', 'adopt failed', 'error']);
/** Stable states: a node rests there (no target) until someone asks for something. */
const NODE_STABLE_STATES: ReadonlySet<string> = new Set(['enroll', 'manageable', 'available', 'active', 'error', 'rescue']);

export interface InstanceWorkerDeps {
  host: string;
  cell: Store;
  api: Store;
  baremetal: BaremetalClient;
  logger: Logger;
  /** Instances worked on at once. */
  concurrency?: number;
}

export type Step = 'waiting' | 'patched' | 'deploy-requested' | 'active' | 'failed' | 'undeploy-requested' | 'released' | 'deleted';

/** First and longest wait before re-checking an instance whose node is busy (deploying, cleaning). */
const RECHECK_MIN_MS = 250;
const RECHECK_MAX_MS = 5000;

export class InstanceWorker {
  private readonly busy = new Set<string>();
  /** Instances waiting on their node: when to look again, and the current back-off. */
  private readonly backoff = new Map<string, { due: number; delay: number }>();
  /**
   * Instances whose node this worker asked to undeploy: a node that fails its tear-down (back in
   * `error`, or `clean failed`) is let go of instead of being asked again and again, which would
   * keep the server DELETING forever. Lost on restart, which costs at most one more attempt.
   */
  private readonly undeployAsked = new Set<string>();

  constructor(private readonly deps: InstanceWorkerDeps) {}

  /** Instances of this host that have work to do. */
  private pending(): Promise<InstanceRow[]> {
    return this.deps.cell.db
      .selectFrom('instances')
      .selectAll()
      .where('host', '=', this.deps.host)
      .where((eb) => eb.or([eb('vm_state', '=', 'building'), eb('task_state', '=', 'deleting')]))
      .orderBy('id')
      .execute();
  }

  /**
   * One pass over this host's pending instances that are due; resolves when every step taken has
   * finished, to the number of instances still pending (due or not).
   */
  async pass(): Promise<number> {
    const all = await this.pending();
    const now = Date.now();
    for (const uuid of this.backoff.keys()) if (!all.some((r) => r.uuid === uuid)) this.backoff.delete(uuid);
    for (const uuid of this.undeployAsked) if (!all.some((r) => r.uuid === uuid)) this.undeployAsked.delete(uuid);
    // A node that takes minutes to deploy is looked at less and less often (250 ms doubling to 5 s).
    const rows = all.filter((r) => !this.busy.has(r.uuid) && (this.backoff.get(r.uuid)?.due ?? 0) <= now);
    const limit = this.deps.concurrency ?? 8;
    let index = 0;
    const run = async () => {
      while (index < rows.length) {
        const row = rows[index++]!;
        this.busy.add(row.uuid);
        try {
          // Steps that only changed what the next step reads (association, release) go on at once.
          let step: Step;
          do step = await (row.task_state === 'deleting' ? this.deleteStep(row) : this.spawnStep(row));
          while (step === 'patched' || step === 'released');
          const delay = step === 'waiting' ? Math.min((this.backoff.get(row.uuid)?.delay ?? RECHECK_MIN_MS / 2) * 2, RECHECK_MAX_MS) : RECHECK_MIN_MS;
          this.backoff.set(row.uuid, { due: Date.now() + delay, delay });
        } catch (err) {
          this.deps.logger.warn({ instance: row.uuid, node: row.node, err: (err as Error).message }, 'instance step failed; retrying on the next pass');
        } finally {
          this.busy.delete(row.uuid);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, rows.length) }, run));
    return all.length;
  }

  private async node(uuid: string): Promise<BaremetalNode | null> {
    try {
      return await this.deps.baremetal.getNode(uuid, NODE_FIELDS);
    } catch (err) {
      if (err instanceof BaremetalApiError && err.status === 404) return null;
      throw err;
    }
  }

  /** Advances a `building` instance by one step. */
  async spawnStep(row: InstanceRow): Promise<Step> {
    const log = this.deps.logger.child({ instance: row.uuid, node: row.node });
    if (!row.node) return this.fail(row, 'no node was selected for this server');
    let node = await this.node(row.node);
    if (!node) return this.fail(row, `node ${row.node} no longer exists in the bare-metal API`);
    if (node.instance_uuid === null || node.instance_uuid === undefined) {
      if (node.provision_state !== 'available' || node.maintenance) {
        return this.fail(row, `node ${row.node} is ${node.maintenance ? 'in maintenance' : `"${node.provision_state}"`}, not available for deployment`);
      }
      try {
        node = await this.deps.baremetal.patchNode(row.node, [
          { op: 'add', path: '/instance_uuid', value: row.uuid },
          { op: 'add', path: '/instance_info', value: { ...row.image, ...(row.display_name ? { display_name: row.display_name } : {}) } },
        ]);
      } catch (err) {
        if (err instanceof BaremetalApiError && err.status === 409) return this.fail(row, `node ${row.node} was taken by someone else: ${err.message}`);
        throw err;
      }
      log.info('node associated with the instance');
      return 'patched';
    }
    if (node.instance_uuid !== row.uuid) return this.fail(row, `node ${row.node} is associated with another instance (${node.instance_uuid})`);
    const state = node.provision_state ?? '';
    if (NODE_FAILED_STATES.has(state)) return this.fail(row, `deploy of node ${row.node} failed (${state}): ${node.last_error ?? 'no last_error given'}`);
    const settled = !node.target_provision_state;
    if (settled && state === 'available') {
      try {
        await this.deps.baremetal.setProvisionState(row.node, 'active');
      } catch (err) {
        if (err instanceof BaremetalApiError && err.status === 400) return this.fail(row, `the bare-metal API refused to deploy node ${row.node}: ${err.message}`);
        throw err;
      }
      log.info('deploy requested');
      return 'deploy-requested';
    }
    if (settled && node.provision_state === 'active') {
      await this.deps.cell.db
        .updateTable('instances')
        .set({ vm_state: 'active', task_state: null, fault: null, updated_at: this.deps.cell.sqlNow() })
        .where('uuid', '=', row.uuid)
        .where('vm_state', '=', 'building')
        .where('task_state', '=', 'spawning')
        .where('host', '=', this.deps.host)
        .execute();
      log.info('instance active');
      return 'active';
    }
    if (settled && NODE_STABLE_STATES.has(state)) {
      // Someone moved the node elsewhere (manage, undeploy…) while this server was building on it.
      return this.fail(row, `node ${row.node} went to "${state}" instead of being deployed`);
    }
    return 'waiting';
  }

  private async fail(row: InstanceRow, reason: string): Promise<Step> {
    this.deps.logger.warn({ instance: row.uuid, node: row.node, reason }, 'instance failed');
    await this.deps.cell.db
      .updateTable('instances')
      .set({ vm_state: 'error', task_state: null, fault: encodeFault(reason), updated_at: this.deps.cell.sqlNow() })
      .where('uuid', '=', row.uuid)
      .where('vm_state', '=', 'building')
      // A delete requested meanwhile wins: the instance is going away anyway.
      .where('task_state', '=', 'spawning')
      .where('host', '=', this.deps.host)
      .execute();
    return 'failed';
  }

  /**
   * Advances an instance being deleted by one step; the last step removes it and its mapping. Every
   * state of the node ends the delete: a node that can be undeployed is (from `active`, and from a
   * failed deploy, whatever its target); a busy one is waited for; any other (a failed clean, a node
   * never deployed, a node the API refuses to undeploy) is let go of as it is, so no server is ever
   * left DELETING.
   */
  async deleteStep(row: InstanceRow): Promise<Step> {
    const log = this.deps.logger.child({ instance: row.uuid, node: row.node });
    const node = row.node ? await this.node(row.node) : null;
    if (node && node.instance_uuid === row.uuid) {
      const state = node.provision_state ?? '';
      const settled = !node.target_provision_state;
      const failedAgain = NODE_FAILED_STATES.has(state) && this.undeployAsked.has(row.uuid);
      if (UNDEPLOYABLE.has(state) && (settled || NODE_FAILED_STATES.has(state) || state === 'wait call-back') && !failedAgain) {
        try {
          await this.deps.baremetal.setProvisionState(node.uuid, 'deleted');
          this.undeployAsked.add(row.uuid);
          log.info({ from: state }, 'undeploy requested');
          return 'undeploy-requested';
        } catch (err) {
          // Locked by a conductor at work: look again. Refused outright (maintenance…): let go below.
          if (!(err instanceof BaremetalApiError) || err.status === 409 || err.status === 0 || err.status >= 500) throw err;
          log.warn({ state, err: err.message }, 'the bare-metal API refused to undeploy the node; releasing it as it is');
        }
      } else if (!settled && !NODE_FAILED_STATES.has(state)) {
        return 'waiting';
      }
      // Never deployed (available, manageable…), or in a state undeploy cannot leave (clean failed…):
      // let go of the node; an operator takes it from where it is.
      if (state !== 'available' && state !== 'manageable' && state !== 'enroll') log.warn({ state, last_error: node.last_error }, 'node released in a state undeploy cannot leave');
      await this.deps.baremetal.patchNode(node.uuid, [
        { op: 'remove', path: '/instance_uuid' },
        { op: 'replace', path: '/instance_info', value: {} },
      ]);
      log.info('node released');
      return 'released';
    }
    this.undeployAsked.delete(row.uuid);
    await this.deps.cell.db.deleteFrom('instances').where('uuid', '=', row.uuid).where('task_state', '=', 'deleting').execute();
    await deleteInstanceMapping(this.deps.api, row.uuid);
    log.info('instance deleted');
    return 'deleted';
  }
}
