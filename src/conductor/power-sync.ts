/**
 * The power-state sync (Ironic's `_sync_power_states`, same options and semantics): every
 * `sync_power_state_interval` seconds a conductor reads the BMC of each node it owns on the ring and
 * compares it with the recorded `power_state`.
 *
 * - Skipped: nodes in maintenance, locked (an operation is under way), with a power change pending
 *   (`target_power_state`), in `enroll` (credentials not yet verified) or in a working or waiting
 *   provision state (the operation in progress owns the power).
 * - Recorded state null: the BMC's state is recorded.
 * - Mismatch with `force_power_state_during_sync` = true: the BMC is set back to the recorded state;
 *   false: the BMC's state is recorded.
 * - A node whose BMC cannot be read, or that still disagrees, more than `power_state_sync_max_retries`
 *   syncs in a row gets the BMC's state (null when unreadable) recorded and is put in maintenance
 *   with `last_error` and `maintenance_reason` saying why. A matching read resets the count.
 *
 * The BMC is read without the node's lock (Ironic reads under a shared lock), so a sync never holds up
 * an operator; only a correction takes the lock (one attempt: a busy node waits for the next sync) and
 * reads the BMC again under it, so an operation that finished meanwhile is not undone. At most
 * `sync_power_state_workers` BMCs are read at once. Runs, durations, failures and corrections are
 * exported on the conductor's `/metrics`.
 */
import { NodeLocked } from '../cluster/errors.js';
import { PeriodicPass } from './periodic.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import { acquireTask } from '../cluster/task.js';
import type { NodeTask, TaskTracker } from '../cluster/task.js';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import { POWER_STATES } from '../drivers/index.js';
import type { DriverRegistry, DriverTask, PowerState } from '../drivers/index.js';
import type { NodeRow } from '../nodes/node-store.js';
import { WAITING_STATES, WORKING_STATES } from '../nodes/states.js';
import type { ConductorMetrics } from './metrics.js';
import { pool } from './work-pool.js';

/** Provision states whose power the sync leaves alone (Ironic: enroll and the wait states; here every state with work in flight). */
export const POWER_SYNC_EXCLUDED_STATES: ReadonlySet<string> = new Set(['enroll', ...WORKING_STATES, ...WAITING_STATES]);

/** What corrections the sync makes, as the `action` label of its metric. */
export const POWER_SYNC_ACTIONS = ['forced', 'recorded', 'maintenance'] as const;
export type PowerSyncAction = (typeof POWER_SYNC_ACTIONS)[number];

export interface PowerSyncOptions {
  store: Store;
  hostname: string;
  group: string;
  /** Live rings: a node is synced by its owner only. */
  view: Pick<ConductorRings, 'ring'>;
  drivers: DriverRegistry;
  tracker: TaskTracker;
  logger: Logger;
  metrics: ConductorMetrics;
  /** `sync_power_state_interval`: seconds between syncs; 0 disables the timer (`runOnce` still works). */
  intervalSeconds: number;
  /** `force_power_state_during_sync`. */
  force: boolean;
  /** `power_state_sync_max_retries`. */
  maxRetries: number;
  /** `sync_power_state_workers`. */
  workers: number;
}

/** What one sync did. */
export interface PowerSyncReport {
  /** Owned nodes that were eligible and whose BMC was read. */
  checked: number;
  /** BMC reads or corrections that failed. */
  failures: number;
  /** Corrections, by kind. */
  forced: number;
  recorded: number;
  maintenance: number;
  durationMs: number;
}

type Outcome = PowerSyncAction | 'failed' | 'ok' | 'skipped';

function syncable(node: Pick<NodeRow, 'maintenance' | 'target_power_state' | 'provision_state'>): boolean {
  return !node.maintenance && node.target_power_state === null && !POWER_SYNC_EXCLUDED_STATES.has(node.provision_state);
}

function isPowerState(value: string | null): value is PowerState {
  return value !== null && (POWER_STATES as readonly string[]).includes(value);
}

export class PowerSync {
  /** Failed or unsuccessful syncs in a row, per node uuid (Ironic's `power_state_sync_count`). */
  private readonly counts = new Map<string, number>();
  private readonly periodic: PeriodicPass<PowerSyncReport>;
  /** Aborted by `stop`: a BMC that does not answer must not hold up a conductor's graceful stop. */
  private readonly abort = new AbortController();
  private readonly log: Logger;

  constructor(private readonly options: PowerSyncOptions) {
    this.log = options.logger.child({ component: 'power-sync' });
    this.periodic = new PeriodicPass(options.intervalSeconds, () => this.sync(), this.log, 'power-state sync');
  }

  /** Starts the periodic sync; the first runs one interval after start, as Ironic's periodic task. */
  start(): void {
    this.periodic.start();
  }

  /** Stops the timer and waits for a sync in flight. Idempotent. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.periodic.stop();
  }

  /** Consecutive failed syncs of a node (for tests and diagnostics). */
  failuresOf(uuid: string): number {
    return this.counts.get(uuid) ?? 0;
  }

  /** Runs one sync now (or joins the one in flight) and resolves with its report. */
  runOnce(): Promise<PowerSyncReport> {
    return this.periodic.runOnce();
  }

  private async sync(): Promise<PowerSyncReport> {
    const started = performance.now();
    const { store, group, hostname, metrics, view } = this.options;
    const report: PowerSyncReport = { checked: 0, failures: 0, forced: 0, recorded: 0, maintenance: 0, durationMs: 0 };
    const ring = view.ring(group);
    const rows = ring
      ? await store.db
          .selectFrom('nodes')
          .selectAll()
          .where('conductor_group', '=', group)
          .where('maintenance', '=', false)
          .where('reservation', 'is', null)
          .where('target_power_state', 'is', null)
          .execute()
      : [];
    const owned = rows.filter((n) => syncable(n) && ring?.owner(n.uuid) === hostname);
    const live = new Set(owned.map((n) => n.uuid));
    for (const uuid of this.counts.keys()) if (!live.has(uuid)) this.counts.delete(uuid);
    await pool(owned, this.options.workers, async (node) => {
      // A stopping conductor ends the sync between nodes; the next owner syncs the rest.
      if (this.periodic.halting) return;
      let outcome: Outcome;
      try {
        outcome = await this.syncNode(node);
      } catch (err) {
        this.log.warn({ node: node.uuid, err: (err as Error).message }, 'power-state sync of a node failed');
        outcome = 'failed';
      }
      if (outcome === 'skipped') return;
      report.checked += 1;
      if (outcome === 'failed') report.failures += 1;
      else if (outcome !== 'ok') {
        report[outcome] += 1;
        metrics.powerSyncCorrections.inc({ action: outcome });
      }
    });
    report.durationMs = performance.now() - started;
    metrics.powerSyncRuns.inc();
    metrics.powerSyncSeconds.observe(report.durationMs / 1000);
    metrics.powerSyncNodes.set(report.checked);
    if (report.failures > 0) metrics.powerSyncFailures.inc(report.failures);
    if (report.forced + report.recorded + report.maintenance + report.failures > 0) this.log.info(report, 'power-state sync');
    return report;
  }

  private bind(node: NodeRow): DriverTask {
    // Power needs neither ports nor the lock; the logger tags the node like the conductor's tasks.
    return this.options.drivers.bind({ node, ports: [], logger: this.log.child({ node: node.uuid }), signal: this.abort.signal });
  }

  /** One node; see the module comment. */
  private async syncNode(row: NodeRow): Promise<Outcome> {
    const count = (this.counts.get(row.uuid) ?? 0) + 1;
    const { maxRetries } = this.options;
    let driverTask = this.bind(row);
    if (row.power_state === null) {
      // Like Ironic: a node with no recorded state whose power fields do not validate is left alone.
      try {
        await driverTask.driver.power.validate(driverTask);
      } catch {
        this.counts.delete(row.uuid);
        return 'skipped';
      }
    }
    let actual: PowerState | null;
    try {
      actual = await driverTask.driver.power.getPowerState(driverTask);
    } catch (err) {
      return this.readFailed(row, count, err);
    }
    if (row.power_state === actual) {
      this.counts.delete(row.uuid);
      return 'ok';
    }
    const task = await this.lock(row.uuid);
    if (task === null) return 'skipped';
    try {
      const node = task.node;
      if (!syncable(node)) return 'skipped';
      // Read again under the lock: an operation that ended since the first read must not be undone.
      driverTask = this.bind(node);
      try {
        actual = await driverTask.driver.power.getPowerState(driverTask);
      } catch (err) {
        return await this.readFailed(node, count, err, task);
      }
      if (node.power_state === actual) {
        this.counts.delete(node.uuid);
        return 'ok';
      }
      if (node.power_state === null) {
        this.counts.delete(node.uuid);
        await task.update({ power_state: actual });
        await task.recordHistory({ eventType: 'power', severity: 'INFO', event: `power-state sync: no state was recorded; recorded the BMC's "${actual}"` });
        return 'recorded';
      }
      this.counts.set(node.uuid, count);
      if (count > maxRetries) return await this.giveUp(task, actual);
      if (this.options.force && isPowerState(node.power_state)) {
        const wanted = node.power_state;
        this.log.warn({ node: node.uuid, actual, recorded: wanted, attempt: count, retries: maxRetries }, 'power state does not match the record; changing the hardware back');
        try {
          await driverTask.driver.power.setPowerState(driverTask, wanted);
        } catch (err) {
          this.log.error({ node: node.uuid, err: (err as Error).message, attempt: count }, 'could not set the power state back');
          await task.recordHistory({ eventType: 'power', severity: 'ERROR', event: `power-state sync: the BMC reports "${actual}", setting it back to "${wanted}" failed (attempt ${count} of ${maxRetries}): ${(err as Error).message}` });
          return 'failed';
        }
        await task.update({ power_state: await this.readBack(driverTask, wanted) });
        await task.recordHistory({ eventType: 'power', severity: 'WARNING', event: `power-state sync: the BMC reported "${actual}" instead of the recorded "${wanted}"; set it back (attempt ${count} of ${maxRetries})` });
        return 'forced';
      }
      this.log.warn({ node: node.uuid, actual, recorded: node.power_state }, 'power state does not match the record; recording the hardware state');
      await task.update({ power_state: actual });
      await task.recordHistory({ eventType: 'power', severity: 'WARNING', event: `power-state sync: the BMC reports "${actual}", the record said "${node.power_state}"; recorded the BMC's state` });
      return 'recorded';
    } finally {
      await task.release();
    }
  }

  /** The BMC's state after a forced change; the wanted one if the read fails (the change was confirmed). */
  private async readBack(driverTask: DriverTask, wanted: PowerState): Promise<PowerState> {
    try {
      return await driverTask.driver.power.getPowerState(driverTask);
    } catch {
      return wanted;
    }
  }

  /** A BMC read failed: counted; past the retries the node goes to maintenance with power state null. */
  private async readFailed(node: NodeRow, count: number, err: unknown, held?: NodeTask): Promise<Outcome> {
    this.counts.set(node.uuid, count);
    const { maxRetries } = this.options;
    if (count <= maxRetries) {
      this.log.warn({ node: node.uuid, attempt: count, retries: maxRetries, err: (err as Error).message }, 'could not get the power state during the power-state sync');
      return 'failed';
    }
    const task = held ?? (await this.lock(node.uuid));
    if (task === null) return 'failed';
    try {
      if (!syncable(task.node)) return 'failed';
      await this.giveUp(task, null, (err as Error).message);
      return 'failed';
    } finally {
      if (held === undefined) await task.release();
    }
  }

  /** Ironic's "max retries exceeded": record the BMC's state, maintenance on, say why. */
  private async giveUp(task: NodeTask, actual: PowerState | null, why?: string): Promise<Outcome> {
    const node = task.node;
    const message =
      `During sync_power_state, max retries exceeded for node ${node.uuid}, node state ${actual ?? 'None'} does not match expected state ` +
      `'${node.power_state ?? 'None'}'. Updating DB state to '${actual ?? 'None'}' Switching node to maintenance mode.` +
      (why !== undefined ? ` Error: ${why}` : '');
    this.log.error({ node: node.uuid, actual, recorded: node.power_state }, message);
    await task.update({ power_state: actual, last_error: message, maintenance: true, maintenance_reason: message });
    await task.recordHistory({ eventType: 'power', severity: 'ERROR', event: message });
    return 'maintenance';
  }

  /** The node's lock, or null when someone holds it (the next sync tries again). */
  private async lock(uuid: string): Promise<NodeTask | null> {
    try {
      return await acquireTask(this.options.store, uuid, { host: this.options.hostname, tracker: this.options.tracker, purpose: 'power-state sync', retry: { attempts: 1, intervalMs: 0 } });
    } catch (err) {
      if (err instanceof NodeLocked) return null;
      throw err;
    }
  }
}
