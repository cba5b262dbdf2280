/**
 * The task: the one way to mutate a node (Ironic's `TaskManager`).
 *
 * An exclusive task holds the node's reservation for its whole life and every write it makes is
 * conditional on still holding it, so a conductor whose lock was taken away (survivors judged it
 * dead) cannot overwrite the node afterwards. A shared task only reads: it takes no lock and refuses
 * writes. Tasks are taken one at a time (`acquireTask`) or a batch at a time (`acquireTasks`, for
 * take-over); either way a `TaskTracker` counts the exclusive tasks in flight so that a conductor's
 * graceful stop can wait for its locked work. The locking itself, history and affinity writes are
 * `reservations.ts`'s.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Updateable } from 'kysely';
import type { Store } from '../db/connect.js';
import type { NodesTable } from '../db/schema.js';
import { ConductorStopping, NodeNotFound, NodeNotLocked, SharedTaskWrite, TaskReleased } from './errors.js';
import { nodeKey, releaseNode, releaseNodes, reserveNode, reserveNodes, writeHistory } from './reservations.js';
import type { HistorySeverity, NodeRef, NodeRow, ReleasedNode, ReleaseOptions, ReserveOptions } from './reservations.js';

export { HISTORY_SEVERITIES } from './reservations.js';
export type { HistorySeverity, ReleasedNode, ReleaseOptions } from './reservations.js';

/** The node's JSON columns: a patch gives them as objects, the task encodes them. */
type JsonColumn = 'driver_info' | 'driver_internal_info' | 'properties' | 'instance_info' | 'extra' | 'network_data';
/**
 * Columns a task never writes: identity, the lock itself, timestamps the task maintains, and
 * `conductor_affinity`, which only a release says (`release({ affinity })`), with the lock.
 */
type FixedColumn = 'id' | 'uuid' | 'reservation' | 'conductor_affinity' | 'created_at' | 'updated_at';

/** The columns an exclusive task may change; JSON columns as plain objects. */
export type NodePatch = Omit<Updateable<NodesTable>, FixedColumn | JsonColumn> & {
  [K in JsonColumn]?: Record<string, unknown>;
};

const JSON_PATCH_COLUMNS: readonly JsonColumn[] = ['driver_info', 'driver_internal_info', 'properties', 'instance_info', 'extra', 'network_data'];
const FIXED_COLUMNS: readonly FixedColumn[] = ['id', 'uuid', 'reservation', 'conductor_affinity', 'created_at', 'updated_at'];

/** PostgreSQL NOTIFY channel announcing that a node changed (payload: its conductor group). */
export const NODES_CHANNEL = 'ironring_nodes';

/** Tells other processes (their reconcilers) that nodes of `group` changed; never fails the caller. */
export function announceNodeChange(store: Store, group: string): void {
  store.notify(NODES_CHANNEL, group).catch(() => undefined);
}

/** One entry of a node's history. */
export interface HistoryEntry {
  /** What kind of event: `provisioning`, `power`, `conductor`, `deploy`… */
  eventType: string;
  severity: HistorySeverity;
  /** The text an operator reads. */
  event: string;
  /** Who asked for the operation, when known. */
  user?: string | null;
}

/** A node held for reading (shared) or for changing (exclusive). */
export interface NodeTask {
  /** The node as of the lock (or the last write through this task). */
  readonly node: NodeRow;
  /** True for a read-only task that holds no lock. */
  readonly shared: boolean;
  /** Hostname of the conductor the task runs on. */
  readonly host: string;
  /** What the task is for, for logs and shutdown reports. */
  readonly purpose: string | undefined;
  /** True once `release()` has completed. */
  readonly released: boolean;
  /**
   * Writes `patch` to the node, sets `updated_at` by the database clock, and refreshes `node`.
   * Throws `SharedTaskWrite` on a shared task, `TaskReleased` after release, and `NodeNotLocked` when
   * this conductor no longer holds the lock (nothing is written then).
   */
  update(patch: NodePatch): Promise<NodeRow>;
  /** Appends an entry to the node's history, recorded as by this conductor. */
  recordHistory(entry: HistoryEntry): Promise<void>;
  /** Re-reads the node. Throws `NodeNotFound` if it was deleted. */
  refresh(): Promise<NodeRow>;
  /**
   * Drops the lock (if any) and leaves the tracker; idempotent, and quiet if the lock was already
   * lost. With `affinity`, the work of this task left the node booting from that conductor's files:
   * `conductor_affinity` is set in the same conditional write. Resolves with the node as released,
   * or null when nothing was released (a shared task, released before, or the lock lost).
   */
  release(options?: ReleaseOptions): Promise<ReleasedNode | null>;
}

/** How to take a task. */
export interface AcquireOptions {
  /** Hostname of the conductor taking the task; it becomes the node's reservation. */
  host: string;
  /** Read-only, without a lock; default false (exclusive). */
  shared?: boolean;
  /** What the task is for (e.g. `power on`, `take over`). */
  purpose?: string;
  /** Tracker to register an exclusive task with until it is released. */
  tracker?: TaskTracker;
  /** Retries while another task holds the lock; Ironic's defaults otherwise. */
  retry?: ReserveOptions;
}

class Task implements NodeTask {
  #node: NodeRow;
  #released = false;
  #releasing: Promise<ReleasedNode | null> | undefined;

  constructor(
    private readonly store: Store,
    node: NodeRow,
    readonly shared: boolean,
    readonly host: string,
    readonly purpose: string | undefined,
    private readonly tracker: TaskTracker | undefined,
  ) {
    this.#node = node;
  }

  get node(): NodeRow {
    return this.#node;
  }

  get released(): boolean {
    return this.#released;
  }

  async update(patch: NodePatch): Promise<NodeRow> {
    if (this.shared) throw new SharedTaskWrite(this.#node.uuid, this.purpose);
    if (this.#released || this.#releasing) throw new TaskReleased(this.#node.uuid);
    const values = { ...patch } as Updateable<NodesTable>;
    // Types keep these out of a literal patch, but not out of an object built elsewhere (a row
    // spread into a patch): the lock and identity must never ride along.
    for (const column of FIXED_COLUMNS) delete values[column];
    for (const column of JSON_PATCH_COLUMNS) {
      const value = patch[column];
      if (value !== undefined) values[column] = JSON.stringify(value);
    }
    // The write is conditional on the lock, not merely preceded by it: a lock released behind our
    // back (survivors thought us dead) must not be followed by our stale write.
    const row = await this.store.db
      .updateTable('nodes')
      .set({ ...values, updated_at: this.store.sqlNow() })
      .where('id', '=', this.#node.id)
      .where('reservation', '=', this.host)
      .returningAll()
      .executeTakeFirst();
    if (!row) {
      const current = await this.store.db
        .selectFrom('nodes')
        .select('reservation')
        .where('id', '=', this.#node.id)
        .executeTakeFirst();
      if (!current) throw new NodeNotFound(this.#node.uuid);
      throw new NodeNotLocked(this.#node.uuid, this.host, current.reservation);
    }
    this.#node = row;
    return row;
  }

  async recordHistory(entry: HistoryEntry): Promise<void> {
    // History is append-only and separate from the node row, so a shared task may record too (e.g.
    // a failed read-only check); released tasks may not, their node may be someone else's by now.
    if (this.#released) throw new TaskReleased(this.#node.uuid);
    await writeHistory(this.store, [{ nodeId: this.#node.id, conductor: this.host, ...entry }]);
  }

  async refresh(): Promise<NodeRow> {
    const row = await this.store.db.selectFrom('nodes').selectAll().where('id', '=', this.#node.id).executeTakeFirst();
    if (!row) throw new NodeNotFound(this.#node.uuid);
    this.#node = row;
    return row;
  }

  release(options: ReleaseOptions = {}): Promise<ReleasedNode | null> {
    if (this.#released) return Promise.resolve(null);
    this.#releasing ??= this.#release(options).finally(() => {
      this.#releasing = undefined;
    });
    return this.#releasing;
  }

  async #release(options: ReleaseOptions): Promise<ReleasedNode | null> {
    let released: ReleasedNode | null = null;
    try {
      if (!this.shared) {
        try {
          released = await releaseNode(this.store, this.#node.id, this.host, options);
          // The end of a change: reconcilers elsewhere look now instead of at their next poll.
          announceNodeChange(this.store, this.#node.conductor_group);
        } catch (err) {
          // Lost (released by survivors, maybe already re-taken) or deleted: there is nothing of
          // ours left to release, and the other holder's lock must stay.
          if (!(err instanceof NodeNotLocked) && !(err instanceof NodeNotFound)) throw err;
        }
      }
      this.#released = true;
      return released;
    } finally {
      // The work is over either way; a lock left behind by a failed release is cleared with the
      // conductor's own stale locks, so shutdown must not wait for it.
      this.tracker?.unregister(this);
    }
  }

  /**
   * Ends the task after `releaseTasks` dropped its lock with others' in one write (`released`), or
   * failed to (the lock is then left to the clean-up of the conductor's own stale locks, as a
   * failed `release` leaves it): either way the work is over for the tracker.
   */
  settleBatchRelease(released: boolean): void {
    if (released) this.#released = true;
    this.tracker?.unregister(this);
  }
}

/**
 * Takes a task on `node`: exclusive by default (the reservation, retried per `options.retry`, then
 * `NodeLocked`), or shared (a plain read). Throws `NodeNotFound` if the node does not exist.
 */
export async function acquireTask(store: Store, node: NodeRef, options: AcquireOptions): Promise<NodeTask> {
  const shared = options.shared ?? false;
  let row: NodeRow;
  if (shared) {
    const key = nodeKey(node);
    const found = await store.db.selectFrom('nodes').selectAll().where(key.column, '=', key.value).executeTakeFirst();
    if (!found) throw new NodeNotFound(typeof node === 'object' ? node.id : node);
    row = found;
  } else {
    if (options.tracker?.draining) throw new ConductorStopping(options.host);
    row = await reserveNode(store, node, options.host, options.retry);
  }
  const task = new Task(store, row, shared, options.host, options.purpose, shared ? undefined : options.tracker);
  if (!shared) options.tracker?.register(task);
  return task;
}

/** How to take a batch of tasks (`acquireTasks`). */
export interface AcquireBatchOptions {
  /** Hostname of the conductor taking the tasks. */
  host: string;
  /** What the tasks are for (e.g. `take over`). */
  purpose?: string;
  /** Tracker to register the tasks with until they are released. */
  tracker?: TaskTracker;
  /** Only nodes of this conductor group. */
  group?: string;
  /**
   * The stamps (`updated_at` as text) the caller decided on, by node id: a node written since is
   * released again at once and not returned, so a decision made on an old row never overwrites a
   * newer one. Nodes missing here are not checked.
   */
  unchangedSince?: ReadonlyMap<number, string>;
}

/**
 * Takes exclusive tasks on the free nodes among `ids` in one conditional UPDATE per batch (no
 * retries: a held node is simply not returned, the caller tries again later). Nodes that changed
 * since the caller's read (`unchangedSince`) are unlocked again and reported in `changed`. Throws
 * `ConductorStopping` while the tracker drains.
 */
export async function acquireTasks(store: Store, ids: readonly number[], options: AcquireBatchOptions): Promise<{ tasks: NodeTask[]; changed: NodeRow[] }> {
  if (options.tracker?.draining) throw new ConductorStopping(options.host);
  const rows = await reserveNodes(store, ids, options.host, options.group === undefined ? {} : { group: options.group });
  const tasks: NodeTask[] = [];
  const changed: NodeRow[] = [];
  for (const { stamp, ...row } of rows) {
    const expected = options.unchangedSince?.get(row.id);
    if (expected !== undefined && expected !== stamp) {
      changed.push(row);
      continue;
    }
    const task = new Task(store, row, false, options.host, options.purpose, options.tracker);
    options.tracker?.register(task);
    tasks.push(task);
  }
  if (changed.length > 0) {
    await releaseNodes(
      store,
      changed.map((n) => n.id),
      options.host,
    );
  }
  return { tasks, changed };
}

/**
 * Releases tasks taken by `acquireTasks` (or one by one) in one conditional write per batch — with
 * `affinity`, setting `conductor_affinity` in it too (see `NodeTask.release`) — and returns the
 * nodes released; tasks whose lock was lost meanwhile are settled without touching their node.
 * `announce` (default true) tells the other conductors' reconcilers that the nodes changed.
 */
export async function releaseTasks(store: Store, tasks: readonly NodeTask[], options: ReleaseOptions & { announce?: boolean } = {}): Promise<ReleasedNode[]> {
  const open = tasks.filter((t) => !t.released && !t.shared);
  if (open.length === 0) return [];
  const host = open[0]!.host;
  if (open.some((t) => t.host !== host)) throw new Error('releaseTasks: tasks of different hosts');
  let released: ReleasedNode[];
  try {
    released = await releaseNodes(
      store,
      open.map((t) => t.node.id),
      host,
      options.affinity === undefined ? {} : { affinity: options.affinity },
    );
  } catch (err) {
    for (const task of open) if (task instanceof Task) task.settleBatchRelease(false);
    throw err;
  }
  for (const task of open) {
    if (task instanceof Task) task.settleBatchRelease(true);
    // Another implementation of the interface: released its own way (its lock is gone already).
    else await task.release();
  }
  if (options.announce ?? true) for (const group of new Set(open.map((t) => t.node.conductor_group))) announceNodeChange(store, group);
  return released;
}

/**
 * Runs `fn` with a task on `node` and releases the task however `fn` ends. An error from `fn` wins
 * over an error from the release, which would only hide the cause.
 */
export async function withTask<T>(store: Store, node: NodeRef, options: AcquireOptions, fn: (task: NodeTask) => Promise<T> | T): Promise<T> {
  const task = await acquireTask(store, node, options);
  let result: T;
  try {
    result = await fn(task);
  } catch (err) {
    await task.release().catch(() => undefined);
    throw err;
  }
  await task.release();
  return result;
}

/** Options of a `TaskTracker`. */
export interface TaskTrackerOptions {
  /** How `waitIdle` waits for its deadline; default a real timer. Injected by tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** A task in flight, as reported by `TaskTracker.tasks()`. */
export interface TrackedTask {
  /** Uuid of the locked node. */
  node: string;
  purpose: string | undefined;
}

/**
 * Counts a conductor's exclusive tasks in flight, so that its graceful stop can wait for locked
 * work (`waitIdle`) and report what it is waiting for (`tasks()`).
 */
export class TaskTracker {
  readonly #tasks = new Set<NodeTask>();
  #idleWaiters: Array<() => void> = [];
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(options: TaskTrackerOptions = {}) {
    this.#sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, { signal }));
  }

  #draining = false;

  /** True once `drain()` was called: exclusive tasks are refused with `ConductorStopping`. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Stops accepting exclusive tasks (a graceful stop); tasks in flight finish. */
  drain(): void {
    this.#draining = true;
  }

  /** Number of exclusive tasks not yet released. */
  get active(): number {
    return this.#tasks.size;
  }

  /** The tasks in flight. */
  tasks(): TrackedTask[] {
    return [...this.#tasks].map((t) => ({ node: t.node.uuid, purpose: t.purpose }));
  }

  /** Adds a task; `acquireTask` calls it. */
  register(task: NodeTask): void {
    this.#tasks.add(task);
  }

  /** Removes a task (no-op if absent); the task's `release()` calls it. */
  unregister(task: NodeTask): void {
    if (!this.#tasks.delete(task) || this.#tasks.size > 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }

  /**
   * Resolves true as soon as no task is in flight, or false once `timeoutMs` has passed with tasks
   * still running (the caller then releases their locks itself).
   */
  async waitIdle(timeoutMs: number): Promise<boolean> {
    if (this.#tasks.size === 0) return true;
    const deadline = new AbortController();
    let wake: () => void = () => undefined;
    const idle = new Promise<boolean>((resolve) => {
      wake = () => resolve(true);
      this.#idleWaiters.push(wake);
    });
    const timedOut = this.#sleep(timeoutMs, deadline.signal).then(
      () => this.#tasks.size === 0,
      // The timer is aborted only once idleness has won the race; any other failure of the timer
      // leaves the answer to the facts.
      () => this.#tasks.size === 0,
    );
    try {
      return await Promise.race([idle, timedOut]);
    } finally {
      deadline.abort();
      this.#idleWaiters = this.#idleWaiters.filter((w) => w !== wake);
    }
  }
}
