/**
 * The take-over part of a reconcile pass (see `reconciler.ts`): nodes this conductor owns whose boot
 * state is missing or stale here are taken over in batches of `BATCH`. This module only
 * orchestrates; the locks, the affinity write and the history are `cluster/task.ts`'s and
 * `cluster/reservations.ts`'s, as for every other writer of a node:
 *
 * 1. one conditional UPDATE locks the batch as tasks the conductor's `TaskTracker` sees (a graceful
 *    stop waits for them); nodes someone else holds stay pending, and nodes written since the pass
 *    read them are unlocked again and left to the next pass, which decides on the new row;
 * 2. the workers rebuild each node's boot state (`deploy.takeOver`: what the node boots in its
 *    provision state, nothing else — no `deploy.prepare`); a waiting node whose boot state cannot
 *    be rebuilt after `WAITING_TAKE_OVER_TRIES` tries is failed rather than left waiting for a
 *    call-back that cannot come;
 * 3. one flush of the file systems makes the batch's files durable;
 * 4. one release sets `conductor_affinity` with the unlock of the done nodes, one more unlocks the
 *    failed ones, one INSERT records the moves in the node history.
 *
 * Steps 3–4 of a batch overlap steps 1–2 of the next one: a batch's flush and database writes are
 * waits, not work, and the next batch's files are made meanwhile. The order that matters still
 * holds per batch — affinity says "here" only after that batch's files are on disk — and batches
 * finish in order, one at a time.
 */
import type { Logger } from '../common/logger.js';
import { ConductorStopping, NodeNotFound, NodeNotLocked } from '../cluster/errors.js';
import { writeHistory } from '../cluster/reservations.js';
import type { HistoryRecord } from '../cluster/reservations.js';
import { acquireTasks, announceNodeChange, releaseTasks } from '../cluster/task.js';
import type { NodeTask } from '../cluster/task.js';
import type { NodeRow } from '../nodes/node-store.js';
import { transition } from '../nodes/state-machine.js';
import { withAgentSession } from './agent-session.js';
import { WAITING_STATES } from '../nodes/states.js';
import type { ProvisionState, StableState } from '../nodes/states.js';
import { fingerprint } from './reconcile-inputs.js';
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
  task: NodeTask;
  error: string;
  /** The first failure for this cause (recorded in the history; retries are not). */
  first: boolean;
  /** Failures in a row for this cause, this one included (0: not a failure of the node's own). */
  count: number;
}

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
  // The rows as this pass decided on them: a node written since is not taken over on that decision.
  const stamps = new Map(candidates.map((n) => [n.id, n.stamp]));

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
    let tasks: NodeTask[];
    try {
      ({ tasks } = await acquireTasks(
        store,
        batch.map((n) => n.id),
        { host: hostname, tracker: options.tracker, purpose: 'take over', group: options.group, unchangedSince: stamps },
      ));
    } catch (err) {
      if (!(err instanceof ConductorStopping)) throw err;
      report.pending += batch.length;
      continue;
    }
    // Held by someone else, or written since this pass read it: the next pass decides again.
    report.pending += batch.length - tasks.length;
    step('lock');

    const done: NodeTask[] = [];
    const failed: Failure[] = [];
    const build = (task: NodeTask) => buildOne(state, task, ports.get(task.node.id) ?? [], fingerprints, done, failed);
    let filesMade!: () => void;
    const madeFiles = new Promise<void>((resolve) => (filesMade = resolve));
    // One flush of the file systems for the whole batch (when `boot.batch` returns), before
    // conductor_affinity says "here".
    const flushed = boot
      ? boot.batch(() => pool(tasks, options.workers, build).finally(filesMade))
      : pool(tasks, options.workers, build).finally(filesMade);
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
        log.debug({ nodes: tasks.length, ms: steps }, 'take-over batch');
      } catch (err) {
        error ??= { err };
        // Whatever is still locked of this batch goes back without affinity (its files may not be
        // durable), and leaves the tracker: a graceful stop must not wait for it.
        await releaseTasks(store, tasks, { announce: false }).catch(() => undefined);
      }
    })();
  }
  await finishing;
  if (error !== undefined) throw error.err;
}

/** Rebuilds one locked node's boot state; sorts it into `done` or `failed` (with its backoff). */
async function buildOne(
  state: TakeOverState,
  task: NodeTask,
  nodePorts: Port[],
  fingerprints: ReadonlyMap<number, string>,
  done: NodeTask[],
  failed: Failure[],
): Promise<void> {
  const { node } = task;
  if (state.stopped()) {
    failed.push({ task, error: 'conductor stopping', first: false, count: 0 });
    return;
  }
  try {
    const driverTask = state.options.drivers.bind({ node, ports: nodePorts, logger: state.log.child({ node: node.uuid }) });
    // Only the boot state is rebuilt: `deploy.prepare` readies a deploy (and insists on instance
    // images), which a node being cleaned, inspected or rescued may well not have.
    await driverTask.driver.deploy.takeOver(driverTask);
    state.memory.clearFailure(node.uuid);
    done.push(task);
  } catch (err) {
    const count = state.memory.recordFailure(node.uuid, fingerprints.get(node.id) ?? '');
    failed.push({ task, error: (err as Error).message, first: count === 1, count });
  }
}

/** Step 4: affinity and unlock for the done nodes, unlock for the failed ones, history for both. */
async function finishBatch(
  state: TakeOverState,
  done: readonly NodeTask[],
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
    // Affinity says "here" in the write that unlocks, only where the lock is still ours; the
    // previous holders clean up as soon as they hear of it.
    const released = await releaseTasks(store, done, { affinity: me });
    // Remember each node as of this write: the next pass skips it unless someone changes it.
    for (const row of released) state.memory.markCurrent(row.uuid, fingerprint(row.stamp, ctx.ports.get(row.id) ?? []));
    confirmed = released.length;
    if (confirmed < done.length) {
      // Our lock was taken away meanwhile (judged dead?): those nodes are not ours yet; try again.
      report.pending += done.length - confirmed;
      log.warn({ nodes: done.length - confirmed }, 'lost the lock of nodes being taken over; retrying them');
    }
  }
  // Waiting nodes that cannot boot from here after all these tries: failed, not left to wait forever.
  const hopeless = failed.filter((f) => f.count >= WAITING_TAKE_OVER_TRIES && WAITING.has(f.task.node.provision_state) && !f.task.node.maintenance);
  const failedHere: Array<{ node: NodeRow; event: string }> = [];
  for (const f of hopeless) {
    const event = await failWaitingNode(state, f);
    if (event !== null) failedHere.push({ node: f.task.node, event });
  }
  // Nothing of theirs changed unless one was failed: no need to wake the other conductors.
  if (failed.length > 0) await releaseTasks(store, failed.map((f) => f.task), { announce: failedHere.length > 0 });
  const history: HistoryRecord[] = [
    ...done
      .filter((t) => ctx.previous.get(t.node.id) !== me)
      .map((t): HistoryRecord => {
        const was = ctx.previous.get(t.node.id);
        const from = was === null || was === undefined ? 'no conductor' : `conductor ${ctx.hostById.get(was) ?? `#${was}`}`;
        return { nodeId: t.node.id, conductor: hostname, eventType: 'conductor', severity: 'INFO', event: `boot state taken over by conductor ${hostname} from ${from}` };
      }),
    // One history row per failure cause, not one per retry.
    ...failed
      .filter((f) => f.first)
      .map((f): HistoryRecord => ({ nodeId: f.task.node.id, conductor: hostname, eventType: 'conductor', severity: 'ERROR', event: `take-over by conductor ${hostname} failed: ${f.error}` })),
    ...failedHere.map((h): HistoryRecord => ({ nodeId: h.node.id, conductor: hostname, eventType: 'provisioning', severity: 'ERROR', event: h.event })),
  ];
  await writeHistory(store, history);
  if (failedHere.length > 0) {
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
      { nodes: failed.slice(0, 5).map((f) => ({ node: f.task.node.uuid, err: f.error })), failed: failed.length },
      'take-over failed; retrying',
    );
  }
}

/**
 * Fails a waiting node whose take-over keeps failing (still locked by this conductor, through its
 * task): its `fail` event, `last_error` saying why; the lock is released with the batch's other
 * failures. Returns the history line, or null when the lock was lost meanwhile (nothing written).
 */
async function failWaitingNode(state: TakeOverState, f: Failure): Promise<string | null> {
  const { hostname } = state.options;
  const { node } = f.task;
  const from = node.provision_state as ProvisionState;
  const next = transition({ state: from, target: node.target_provision_state as StableState | null }, 'fail');
  const error =
    `"${from}" cannot go on: conductor ${hostname}, the node's owner now, could not rebuild its boot files ` +
    `after ${f.count} tries, so the node cannot boot from it: ${f.error}; moved to "${next.state}"`;
  try {
    await f.task.update(withAgentSession(node, { provision_state: next.state, target_provision_state: next.target, provision_updated_at: new Date(), last_error: error }));
  } catch (err) {
    if (err instanceof NodeNotLocked || err instanceof NodeNotFound) return null;
    throw err;
  }
  state.memory.clearFailure(node.uuid);
  state.memory.forgetCurrent(node.uuid);
  return `${from} → ${next.state}: ${error}`;
}
