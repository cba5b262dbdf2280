/**
 * The take-over part of a reconcile pass (see `reconciler.ts`): nodes this conductor owns whose boot
 * state is missing or stale here are taken over in batches of `BATCH`:
 *
 * 1. one UPDATE locks the batch (nodes someone else holds stay pending);
 * 2. the workers rebuild each node's boot state (`deploy.prepare` — not for a node running the
 *    deploy ramdisk — and `deploy.takeOver`); a waiting node whose boot state cannot be rebuilt
 *    after `WAITING_TAKE_OVER_TRIES` tries is failed rather than left waiting for a call-back that
 *    cannot come;
 * 3. one flush of the file systems makes the batch's files durable;
 * 4. one UPDATE sets `conductor_affinity` and unlocks the done nodes, one more unlocks the failed
 *    ones, one INSERT records the moves in the node history.
 *
 * Steps 3–4 of a batch overlap steps 1–2 of the next one: a batch's flush and database writes are
 * waits, not work, and the next batch's files are made meanwhile. The order that matters still
 * holds per batch — affinity says "here" only after that batch's files are on disk — and batches
 * finish in order, one at a time.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../common/logger.js';
import { announceNodeChange } from '../cluster/task.js';
import { RAMDISK_STATES } from '../drivers/ramdisk/ramdisk-deploy.js';
import type { NodeRow } from '../nodes/node-store.js';
import { transition } from '../nodes/state-machine.js';
import { WAITING_STATES } from '../nodes/states.js';
import type { ProvisionState, StableState } from '../nodes/states.js';
import { fingerprint, stampColumn } from './reconcile-inputs.js';
import type { NodeBrief, Port } from './reconcile-inputs.js';
import type { NodeMemory } from './reconcile-memory.js';
import type { ReconcilerOptions } from './reconcile-options.js';
import type { PassReport } from './reconcile-report.js';
import { BATCH, chunks, pool } from './work-pool.js';

/** The reconciler's state a take-over reads and updates. */
export interface TakeOverState {
  options: ReconcilerOptions;
  log: Logger;
  stopped: () => boolean;
  /** Per-node memory: what is current here, and the back-off of failed take-overs. */
  memory: NodeMemory;
}

interface Failure {
  node: NodeRow;
  error: string;
  /** The first failure for this cause (recorded in the history; retries are not). */
  first: boolean;
  /** Failures in a row for this cause, this one included (0: not a failure of the node's own). */
  count: number;
}

/**
 * States in which a node boots the deploy ramdisk, not an instance: their take-over rebuilds the
 * ramdisk's boot files and needs no instance images, so `deploy.prepare` (which readies a deploy
 * and may insist on them) is not run for them (else a node being cleaned, inspected or
 * rescued without instance images failed its take-over on every pass).
 */
const DEPLOY_RAMDISK_STATES: ReadonlySet<string> = new Set(RAMDISK_STATES);

/** Waiting states: the node waits for its ramdisk to call back, so it must boot from its owner. */
const WAITING: ReadonlySet<string> = new Set(WAITING_STATES);

/**
 * Take-over tries after which a node in a waiting state (`clean wait`, `wait call-back`…) is failed
 * (its `fail` event, with `last_error`): it cannot boot from its owner, so its ramdisk would never
 * call back and it would wait forever. With the backoff (1, 2, 4, 8 s) that is about 15 s of
 * unchanged inputs; a change to the node (a fixed `driver_info`) starts the count again.
 */
export const WAITING_TAKE_OVER_TRIES = 5;

export async function takeOverNodes(
  state: TakeOverState,
  candidates: readonly NodeBrief[],
  fingerprints: ReadonlyMap<number, string>,
  ports: ReadonlyMap<number, Port[]>,
  me: number,
  report: PassReport,
): Promise<void> {
  const { options, log } = state;
  const { store, hostname } = options;
  const previous = new Map(candidates.map((n) => [n.id, n.conductor_affinity]));
  // Names of previous holders, departed ones included, for the history.
  const hostById = new Map((await store.db.selectFrom('conductors').select(['id', 'hostname']).execute()).map((c) => [c.id, c.hostname]));
  const version = options.view.version;
  const { boot } = options;

  /** Steps 3–4 of the batch before, still running: each batch's finish waits for the previous one. */
  let finishing: Promise<void> = Promise.resolve();
  let error: { err: unknown } | undefined;
  for (const batch of chunks(candidates, BATCH)) {
    // The ring moved under this pass: what is left may not be ours any more. The pass that the
    // ring change queued decides again.
    if (state.stopped() || options.tracker.draining || options.view.version !== version) {
      report.pending += batch.length;
      continue;
    }
    // Where a batch's time goes (debug log).
    const steps: Record<string, number> = {};
    let at = performance.now();
    const step = (name: string) => {
      const now = performance.now();
      steps[name] = Math.round(now - at);
      at = now;
    };
    const locked = await store.db
      .updateTable('nodes')
      .set({ reservation: hostname })
      .where(
        'id',
        'in',
        batch.map((n) => n.id),
      )
      .where('reservation', 'is', null)
      .where('conductor_group', '=', options.group)
      .returningAll()
      .execute();
    report.pending += batch.length - locked.length;
    step('lock');

    const done: NodeRow[] = [];
    const failed: Failure[] = [];
    const build = (node: NodeRow) => buildOne(state, node, ports.get(node.id) ?? [], fingerprints, done, failed);
    let filesMade!: () => void;
    const madeFiles = new Promise<void>((resolve) => (filesMade = resolve));
    // One flush of the file systems for the whole batch (when `boot.batch` returns), before
    // conductor_affinity says "here".
    const flushed = boot
      ? boot.batch(() => pool(locked, options.workers, build).finally(filesMade))
      : pool(locked, options.workers, build).finally(filesMade);
    await madeFiles;
    step('files');

    const before = finishing;
    // Never rejects: a failure is kept for the end of the take-over, and later batches still finish
    // (their nodes are locked by this conductor until they do).
    finishing = (async () => {
      try {
        await flushed;
        await before;
        step('flush');
        await finishBatch(state, done, failed, { me, previous, hostById, fingerprints, ports, report });
        step('record');
        log.debug({ nodes: locked.length, ms: steps }, 'take-over batch');
      } catch (err) {
        error ??= { err };
      }
    })();
  }
  await finishing;
  if (error !== undefined) throw error.err;
}

/** Rebuilds one locked node's boot state; sorts it into `done` or `failed` (with its backoff). */
async function buildOne(
  state: TakeOverState,
  node: NodeRow,
  nodePorts: Port[],
  fingerprints: ReadonlyMap<number, string>,
  done: NodeRow[],
  failed: Failure[],
): Promise<void> {
  if (state.stopped()) {
    failed.push({ node, error: 'conductor stopping', first: false, count: 0 });
    return;
  }
  try {
    const task = state.options.drivers.bind({ node, ports: nodePorts, logger: state.log.child({ node: node.uuid }) });
    if (!DEPLOY_RAMDISK_STATES.has(node.provision_state)) await task.driver.deploy.prepare(task);
    await task.driver.deploy.takeOver(task);
    state.memory.clearFailure(node.uuid);
    done.push(node);
  } catch (err) {
    const count = state.memory.recordFailure(node.uuid, fingerprints.get(node.id) ?? '');
    failed.push({ node, error: (err as Error).message, first: count === 1, count });
  }
}

/** Step 4: affinity and unlock for the done nodes, unlock for the failed ones, history for both. */
async function finishBatch(
  state: TakeOverState,
  done: readonly NodeRow[],
  failed: readonly Failure[],
  ctx: {
    me: number;
    previous: ReadonlyMap<number, number | null>;
    hostById: ReadonlyMap<number, string>;
    fingerprints: ReadonlyMap<number, string>;
    ports: ReadonlyMap<number, Port[]>;
    report: PassReport;
  },
): Promise<void> {
  const { options, log } = state;
  const { store, hostname, metrics } = options;
  const { me, report } = ctx;
  let confirmed = 0;
  if (done.length > 0) {
    const updated = await store.db
      .updateTable('nodes')
      .set({ conductor_affinity: me, reservation: null, updated_at: store.sqlNow() })
      .where(
        'id',
        'in',
        done.map((n) => n.id),
      )
      .where('reservation', '=', hostname)
      .returning(['id', 'uuid', stampColumn])
      .execute();
    // Remember each node as of this write: the next pass skips it unless someone changes it.
    for (const row of updated) state.memory.markCurrent(row.uuid, fingerprint(row.stamp, ctx.ports.get(row.id) ?? []));
    confirmed = updated.length;
    if (confirmed < done.length) {
      // Our lock was taken away meanwhile (judged dead?): those nodes are not ours yet; try again.
      report.pending += done.length - confirmed;
      log.warn({ nodes: done.length - confirmed }, 'lost the lock of nodes being taken over; retrying them');
    }
    // The previous holders clean up as soon as they hear of it.
    announceNodeChange(store, options.group);
  }
  // Waiting nodes that cannot boot from here after all these tries: failed, not left to wait forever.
  const hopeless = failed.filter((f) => f.count >= WAITING_TAKE_OVER_TRIES && WAITING.has(f.node.provision_state) && !f.node.maintenance);
  const failedHere: Array<{ node: NodeRow; event: string }> = [];
  for (const f of hopeless) {
    const event = await failWaitingNode(state, f);
    if (event !== null) failedHere.push({ node: f.node, event });
  }
  if (failed.length > 0) {
    await store.db
      .updateTable('nodes')
      .set({ reservation: null })
      .where(
        'id',
        'in',
        failed.map((f) => f.node.id),
      )
      .where('reservation', '=', hostname)
      .execute();
  }
  const history = [
    ...done
      .filter((n) => ctx.previous.get(n.id) !== me)
      .map((n) => {
        const was = ctx.previous.get(n.id);
        const from = was === null || was === undefined ? 'no conductor' : `conductor ${ctx.hostById.get(was) ?? `#${was}`}`;
        return { node_id: n.id, severity: 'INFO', event: `boot state taken over by conductor ${hostname} from ${from}` };
      }),
    // One history row per failure cause, not one per retry.
    ...failed.filter((f) => f.first).map((f) => ({ node_id: f.node.id, severity: 'ERROR', event: `take-over by conductor ${hostname} failed: ${f.error}` })),
  ];
  if (history.length > 0) {
    await store.db
      .insertInto('node_history')
      .values(history.map((h) => ({ uuid: randomUUID(), conductor: hostname, event_type: 'conductor', created_at: store.sqlNow(), ...h })))
      .execute();
  }
  if (failedHere.length > 0) {
    await store.db
      .insertInto('node_history')
      .values(failedHere.map((h) => ({ uuid: randomUUID(), node_id: h.node.id, conductor: hostname, event_type: 'provisioning', severity: 'ERROR', event: h.event, created_at: store.sqlNow() })))
      .execute();
    log.warn({ nodes: failedHere.map((h) => h.node.uuid).slice(0, 10), failed: failedHere.length }, 'failed waiting nodes whose boot state cannot be rebuilt here');
    announceNodeChange(store, options.group);
  }
  report.takenOver += confirmed;
  metrics.takeovers.inc(confirmed);
  report.failed += failed.length;
  report.backingOff += failed.length;
  if (failed.length > 0) {
    metrics.failures.inc(failed.length);
    (failed.some((f) => f.first) ? log.warn.bind(log) : log.debug.bind(log))(
      { nodes: failed.slice(0, 5).map((f) => ({ node: f.node.uuid, err: f.error })), failed: failed.length },
      'take-over failed; retrying',
    );
  }
}

/**
 * Fails a waiting node whose take-over keeps failing (still locked by this conductor): its `fail`
 * event, `last_error` saying why, lock released. Returns the history line, or null when the lock
 * was lost meanwhile (nothing written).
 */
async function failWaitingNode(state: TakeOverState, f: Failure): Promise<string | null> {
  const { store, hostname } = state.options;
  const { node } = f;
  const from = node.provision_state as ProvisionState;
  const next = transition({ state: from, target: node.target_provision_state as StableState | null }, 'fail');
  const error =
    `"${from}" cannot go on: conductor ${hostname}, the node's owner now, could not rebuild its boot files ` +
    `after ${f.count} tries, so the node cannot boot from it: ${f.error}; moved to "${next.state}"`;
  const updated = await store.db
    .updateTable('nodes')
    .set({ provision_state: next.state, target_provision_state: next.target, provision_updated_at: new Date(), last_error: error, reservation: null, updated_at: store.sqlNow() })
    .where('id', '=', node.id)
    .where('reservation', '=', hostname)
    .where('provision_state', '=', from)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) return null;
  state.memory.clearFailure(node.uuid);
  state.memory.forgetCurrent(node.uuid);
  return `${from} → ${next.state}: ${error}`;
}
