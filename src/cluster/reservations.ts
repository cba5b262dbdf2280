/**
 * One writer per node: node locks ("reservations", as Ironic calls them) and the writes that belong
 * to holding one. A node's `reservation` column holds the hostname of the conductor allowed to
 * mutate it. Taking and dropping the lock are conditional UPDATEs — one node or a batch at a time —
 * so the database decides who wins and no transaction is ever held open, which matters on SQLite,
 * where a writer waiting for a lock blocks its whole process.
 *
 * This module is also the only writer of `conductor_affinity` (set by the release that ends the
 * work which made the node's boot files, in the same conditional UPDATE: affinity never names a
 * conductor that no longer held the node) and of `node_history` rows (`writeHistory`).
 *
 * The lock only names a host, so it excludes tasks of the same conductor from each other too: a
 * second `reserveNode` by the holder itself fails like anyone else's until the first is released.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Store } from '../db/connect.js';
import type { Database, NodeRow } from '../db/schema.js';
import { NodeLocked, NodeNotFound, NodeNotLocked } from './errors.js';

export type { NodeRow };

/** A node named by row id (`42` or `{ id: 42 }`), uuid, or name. */
export type NodeRef = number | { readonly id: number } | string;

/** Waits `ms` milliseconds; injectable so tests never sleep for real. */
export type Sleep = (ms: number) => Promise<void>;

/** How `reserveNode` retries a node another task holds. */
export interface ReserveOptions {
  /** Tries in all, the first included (Ironic's `node_locked_retry_attempts`); default 3. */
  attempts?: number;
  /** Milliseconds between tries (Ironic's `node_locked_retry_interval`); default 1000. */
  intervalMs?: number;
  /** How to wait between tries; default a real timer. */
  sleep?: Sleep;
}

/** Options of `releaseReservationsOf`. */
export interface ReleaseReservationsOptions {
  /** Hostname of the conductor doing the release, recorded in each node's history. */
  by: string;
  /** Why, for the history entry (e.g. `heartbeat expired`, `conductor restarted`). */
  reason: string;
}

/** Ironic's defaults: three tries, one second apart. */
export const DEFAULT_RESERVE_ATTEMPTS = 3;
export const DEFAULT_RESERVE_INTERVAL_MS = 1000;

const defaultSleep: Sleep = (ms) => delay(ms);

interface NodeKey {
  column: 'id' | 'uuid' | 'name';
  value: number | string;
}

/** Which column a `NodeRef` matches: the id, a uuid-shaped string's uuid, otherwise the name. */
export function nodeKey(node: NodeRef): NodeKey {
  if (typeof node === 'number') return { column: 'id', value: node };
  if (typeof node === 'object') return { column: 'id', value: node.id };
  return { column: UUID_PATTERN.test(node) ? 'uuid' : 'name', value: node };
}

function describeRef(node: NodeRef): string | number {
  return typeof node === 'object' ? node.id : node;
}

/** Reads the node's uuid and current holder, or throws `NodeNotFound`. */
async function readHolder(store: Store, node: NodeRef): Promise<{ uuid: string; reservation: string | null }> {
  const key = nodeKey(node);
  const row = await store.db
    .selectFrom('nodes')
    .select(['uuid', 'reservation'])
    .where(key.column, '=', key.value)
    .executeTakeFirst();
  if (!row) throw new NodeNotFound(describeRef(node));
  return row;
}

/**
 * Takes the exclusive lock of `node` for conductor `host` and returns the node as locked.
 *
 * One conditional UPDATE per try (`reservation IS NULL`); when it matches nothing, one SELECT tells
 * a missing node (`NodeNotFound`, at once) from a held one, which is retried `attempts` times in all,
 * `intervalMs` apart, before `NodeLocked` names the holder. A lock that turns out free between the
 * two statements is tried again at once: someone released it, there is nothing to wait for.
 */
export async function reserveNode(store: Store, node: NodeRef, host: string, options: ReserveOptions = {}): Promise<NodeRow> {
  const attempts = Math.max(1, Math.floor(options.attempts ?? DEFAULT_RESERVE_ATTEMPTS));
  const intervalMs = options.intervalMs ?? DEFAULT_RESERVE_INTERVAL_MS;
  const sleep = options.sleep ?? defaultSleep;
  const key = nodeKey(node);
  let last: { uuid: string; reservation: string | null } | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const row = await store.db
      .updateTable('nodes')
      .set({ reservation: host })
      .where(key.column, '=', key.value)
      .where('reservation', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (row) return row;
    last = await readHolder(store, node);
    if (attempt < attempts && last.reservation !== null) await sleep(intervalMs);
  }
  throw new NodeLocked(last!.uuid, last!.reservation);
}

/**
 * A node row's version as text: its `updated_at` as the database wrote it (every write of a node row
 * sets it, by the database clock, to the microsecond on PostgreSQL). Equal stamps: nothing was
 * written to the row in between. Taking or dropping a lock alone leaves it unchanged.
 */
export const nodeStamp = sql<string>`cast(updated_at as text)`.as('stamp');

/** A node row as locked by `reserveNodes`, with its stamp. */
export type LockedNodeRow = NodeRow & { stamp: string };

/** A node as released by `releaseNodes`: its stamp after the release. */
export interface ReleasedNode {
  id: number;
  uuid: string;
  stamp: string;
}

/** Options of `releaseNode` and `releaseNodes`. */
export interface ReleaseOptions {
  /**
   * The row id of the conductor whose boot files the node now boots from: written as
   * `conductor_affinity` with the release, and `updated_at` with it (the conductors that served
   * the node before see the row change and clean up). Only the work that made those files, and
   * still holds the lock, may say so.
   */
  affinity?: number;
}

/** Nodes locked or released per UPDATE: far below both engines' bound-parameter limits. */
export const NODE_BATCH = 500;

/**
 * Takes the locks of the free nodes among `ids` (of `group`, when given) for conductor `host` in
 * one conditional UPDATE per `NODE_BATCH`, and returns the rows it locked with their stamps. Held,
 * missing or moved nodes are simply not returned: a batch never waits for a node.
 */
export async function reserveNodes(store: Store, ids: readonly number[], host: string, options: { group?: string } = {}): Promise<LockedNodeRow[]> {
  const locked: LockedNodeRow[] = [];
  for (let i = 0; i < ids.length; i += NODE_BATCH) {
    let query = store.db
      .updateTable('nodes')
      .set({ reservation: host })
      .where('id', 'in', ids.slice(i, i + NODE_BATCH))
      .where('reservation', 'is', null);
    if (options.group !== undefined) query = query.where('conductor_group', '=', options.group);
    locked.push(...((await query.returningAll().returning(nodeStamp).execute()) as LockedNodeRow[]));
  }
  return locked;
}

/**
 * Drops conductor `host`'s locks on the nodes among `ids` it still holds, in one conditional UPDATE
 * per `NODE_BATCH` (with `affinity`: sets `conductor_affinity` too, see `ReleaseOptions`), and
 * returns the nodes released. A node whose lock was taken away meanwhile is left alone — its new
 * holder's lock, its row — and is not returned.
 */
export async function releaseNodes(store: Store, ids: readonly number[], host: string, options: ReleaseOptions = {}): Promise<ReleasedNode[]> {
  const released: ReleasedNode[] = [];
  for (let i = 0; i < ids.length; i += NODE_BATCH) {
    const set = options.affinity === undefined ? { reservation: null } : { reservation: null, conductor_affinity: options.affinity, updated_at: store.sqlNow() };
    released.push(
      ...(await store.db
        .updateTable('nodes')
        .set(set)
        .where('id', 'in', ids.slice(i, i + NODE_BATCH))
        .where('reservation', '=', host)
        .returning(['id', 'uuid', nodeStamp])
        .execute()),
    );
  }
  return released;
}

/**
 * Drops conductor `host`'s lock on `node` (with `affinity`: sets `conductor_affinity` too) and
 * returns it as released. Throws `NodeNotLocked` when `host` does not hold it (unlocked, or held by
 * another conductor — whose lock is left alone) and `NodeNotFound` when the node is gone.
 */
export async function releaseNode(store: Store, node: NodeRef, host: string, options: ReleaseOptions = {}): Promise<ReleasedNode> {
  const key = nodeKey(node);
  const set = options.affinity === undefined ? { reservation: null } : { reservation: null, conductor_affinity: options.affinity, updated_at: store.sqlNow() };
  const row = await store.db
    .updateTable('nodes')
    .set(set)
    .where(key.column, '=', key.value)
    .where('reservation', '=', host)
    .returning(['id', 'uuid', nodeStamp])
    .executeTakeFirst();
  if (row) return row;
  const current = await readHolder(store, node);
  throw new NodeNotLocked(current.uuid, host, current.reservation);
}

/** Ironic's node history severities. */
export const HISTORY_SEVERITIES = ['INFO', 'WARNING', 'ERROR'] as const;
export type HistorySeverity = (typeof HISTORY_SEVERITIES)[number];

/** One row of a node's history, as `writeHistory` records it. */
export interface HistoryRecord {
  nodeId: number;
  /** Hostname of the conductor recording it. */
  conductor: string;
  /** What kind of event: `provisioning`, `power`, `conductor`, `deploy`… */
  eventType: string;
  severity: HistorySeverity;
  /** The text an operator reads. */
  event: string;
  /** Who asked for the operation, when known. */
  user?: string | null;
}

/** Rows per history INSERT: far below SQLite's and PostgreSQL's bound-parameter limits. */
const HISTORY_BATCH = 1000;

/**
 * Appends `records` to the node history, time-stamped by the database clock, in one INSERT per
 * `HISTORY_BATCH`. `db` is the store's handle or a transaction of it (the rows then commit with the
 * change they describe). History is append-only and separate from the node row, so it needs no
 * lock; callers record only what they did.
 */
export async function writeHistory(store: Store, records: readonly HistoryRecord[], db: Kysely<Database> = store.db): Promise<void> {
  for (let i = 0; i < records.length; i += HISTORY_BATCH) {
    await db
      .insertInto('node_history')
      .values(
        records.slice(i, i + HISTORY_BATCH).map((r) => ({
          uuid: randomUUID(),
          node_id: r.nodeId,
          conductor: r.conductor,
          event_type: r.eventType,
          severity: r.severity,
          event: r.event,
          user: r.user ?? null,
          created_at: store.sqlNow(),
        })),
      )
      .execute();
  }
}

/** PostgreSQL's SQLSTATE for a deadlock it broke by aborting us. */
const PG_DEADLOCK = '40P01';

/**
 * Releases every lock held by conductor `deadHost` and records one `node_history` WARNING per node
 * released; returns the uuids of those nodes. A pending power action of a released node
 * (`target_power_state`) is cleared, with `last_error` saying it was aborted. Survivors call it for
 * a conductor whose heartbeat expired, and a conductor calls it for itself at start (locks left by
 * its previous life).
 *
 * One `UPDATE … WHERE reservation = deadHost RETURNING` claims the nodes: when several survivors run
 * it at once, the database gives each node to exactly one of them (PostgreSQL re-checks the condition
 * of a row another transaction changed; SQLite runs writers one at a time), so each node is released
 * once and gets one history row. On PostgreSQL the release and its history commit together. On SQLite
 * they are two autocommit statements — a transaction would hold the write lock across an `await`,
 * stalling every other handle in the process — so a crash between them can lose the history rows of
 * that one call, never a release.
 */
export async function releaseReservationsOf(store: Store, deadHost: string, options: ReleaseReservationsOptions): Promise<string[]> {
  const event = `lock held by conductor ${deadHost} released by conductor ${options.by}: ${options.reason}`;
  const run = async (db: Kysely<Database>): Promise<string[]> => {
    // A power action runs in its lock holder's memory too: with the lock gone nobody finishes it, and
    // the `target_power_state` it left would refuse every later power action (409) forever. Ironic's
    // conductor clears it the same way at start, with `last_error` saying so.
    await db
      .updateTable('nodes')
      .set({ target_power_state: null, last_error: `pending power action aborted: ${event}` })
      .where('reservation', '=', deadHost)
      .where('target_power_state', 'is not', null)
      .execute();
    const released = await db
      .updateTable('nodes')
      .set({ reservation: null })
      .where('reservation', '=', deadHost)
      .returning(['id', 'uuid'])
      .execute();
    await writeHistory(
      store,
      released.map((n) => ({ nodeId: n.id, conductor: options.by, eventType: 'conductor', severity: 'WARNING', event })),
      db,
    );
    return released.map((n) => n.uuid);
  };
  if (store.engine !== 'postgres') return run(store.db);
  // Concurrent survivors lock the same rows; should two plans ever visit them in different orders,
  // PostgreSQL aborts one of them with a deadlock. Its work is then simply undone: try again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.db.transaction().execute(run);
    } catch (err) {
      if (attempt >= 3 || (err as { code?: unknown }).code !== PG_DEADLOCK) throw err;
    }
  }
}
