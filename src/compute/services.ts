/**
 * Service rows of a cell database (`services`): registration, heartbeats and liveness of compute
 * services and schedulers, all judged by the database clock (DESIGN §1 invariant 1, §7).
 *
 * A service is live while it is not `forced_down` and its `last_seen_up` (always written as the
 * database's own "now") is younger than `service_down_time` by that same clock. A graceful stop
 * clears `last_seen_up`, so the others see it down at once instead of after the timeout; the row
 * (and its id, its `mapped` bit) is kept.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { IronringError } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { isUniqueViolation } from '../db/errors.js';

/** Compute services register with the binary discovery by service looks for. */
export { COMPUTE_BINARY } from '../cells/cells.js';
export const SCHEDULER_BINARY = 'ironring-scheduler';

/** PostgreSQL NOTIFY channel on which service membership changes of a cell database are announced. */
export const SERVICES_CHANNEL = 'ironring_compute_services';

/** Thrown when a service starts with the host name of one that is still live. */
export class DuplicateService extends IronringError {
  override readonly httpStatus = 409;
  override readonly exitCode = 1;
  constructor(
    readonly host: string,
    readonly binary: string,
  ) {
    super(`${binary} ${host} is already running (its heartbeat is fresh by the database clock); stop it first or start this one with another --host`);
  }
}

/** One service row as the cell sees it. */
export interface ServiceState {
  id: number;
  uuid: string;
  host: string;
  binary: string;
  topic: string | null;
  disabled: boolean;
  forcedDown: boolean;
  mapped: boolean;
  lastSeenUp: Date | null;
  /** Not forced down and heartbeat younger than the down time, by the database clock. */
  live: boolean;
}

/** The SQL condition "live" for a down time in seconds. */
export function liveExpression(store: Store, downTime: number) {
  return sql<boolean>`(forced_down = ${false} and last_seen_up is not null and last_seen_up >= ${store.sqlSecondsAgo(downTime)})`;
}

/**
 * Registers a service: upsert by (host, binary) keeping the row id, heartbeat now. Refused with
 * `DuplicateService` while another process holds the same host with a fresh heartbeat; a stale
 * row (a crashed or stopped predecessor) is taken over. One conditional write decides, so two
 * processes starting with one host name cannot both win.
 */
export async function registerService(store: Store, input: { host: string; binary: string; topic?: string | null; instanceToken?: string }, downTime: number): Promise<number> {
  const { db } = store;
  // A fresh token per registration: whoever holds the row now is told apart from a predecessor.
  const values = { last_seen_up: store.sqlNow(), updated_at: store.sqlNow(), topic: input.topic ?? null, instance_token: input.instanceToken ?? randomUUID() };
  for (let attempt = 0; attempt < 3; attempt++) {
    const taken = await db
      .updateTable('services')
      .set(values)
      .where('host', '=', input.host)
      .where('binary', '=', input.binary)
      .where(sql<boolean>`not ${liveExpression(store, downTime)}`)
      .returning('id')
      .executeTakeFirst();
    if (taken) return taken.id;
    const existing = await db.selectFrom('services').select('id').where('host', '=', input.host).where('binary', '=', input.binary).executeTakeFirst();
    if (existing) throw new DuplicateService(input.host, input.binary);
    try {
      const inserted = await db
        .insertInto('services')
        .values({ uuid: randomUUID(), host: input.host, binary: input.binary, ...values, created_at: store.sqlNow() })
        .returning('id')
        .executeTakeFirstOrThrow();
      return inserted.id;
    } catch (err) {
      // Another process inserted the same (host, binary) between our update and insert: decide again.
      if (!isUniqueViolation(err)) throw err;
    }
  }
  throw new DuplicateService(input.host, input.binary);
}

/** Writes a heartbeat with the database clock; false when the row is gone (re-register then). */
export async function serviceHeartbeat(store: Store, id: number): Promise<boolean> {
  const res = await store.db
    .updateTable('services')
    .set({ last_seen_up: store.sqlNow(), report_count: sql<number>`report_count + 1` })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Marks a service down at once (graceful stop): others take over without waiting for the timeout. */
export async function markServiceDown(store: Store, id: number): Promise<void> {
  await store.db.updateTable('services').set({ last_seen_up: null, updated_at: store.sqlNow() }).where('id', '=', id).execute();
}

/**
 * Marks a crashed predecessor's row down at once — only while the row still carries the token that
 * predecessor registered with, so a row someone else took since is never touched. The caller must
 * know the predecessor is gone (`ironring up`'s lock file names a dead process). True when released.
 */
export async function releaseServiceOfDeadInstance(store: Store, row: { id: number; host: string; binary: string; instanceToken: string }): Promise<boolean> {
  const res = await store.db
    .updateTable('services')
    .set({ last_seen_up: null, updated_at: store.sqlNow() })
    .where('id', '=', row.id)
    .where('host', '=', row.host)
    .where('binary', '=', row.binary)
    .where('instance_token', '=', row.instanceToken)
    .executeTakeFirst();
  const released = Number(res.numUpdatedRows) > 0;
  if (released) await store.notify(SERVICES_CHANNEL, `down:${row.host}`).catch(() => undefined);
  return released;
}

/** The token of the process that registered `host`/`binary` last; null when none. */
export async function serviceInstance(store: Store, host: string, binary: string): Promise<{ id: number; instanceToken: string } | null> {
  const row = await store.db.selectFrom('services').select(['id', 'instance_token']).where('host', '=', host).where('binary', '=', binary).executeTakeFirst();
  return row && row.instance_token ? { id: row.id, instanceToken: row.instance_token } : null;
}

/** Every service of one binary with its liveness by the database clock, ordered by id. */
export async function listServices(store: Store, binary: string, downTime: number): Promise<ServiceState[]> {
  const rows = await store.db
    .selectFrom('services')
    .select(['id', 'uuid', 'host', 'binary', 'topic', 'disabled', 'forced_down', 'mapped', 'last_seen_up'])
    .select(store.sqlFlag(liveExpression(store, downTime)).as('live'))
    .where('binary', '=', binary)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    uuid: r.uuid,
    host: r.host,
    binary: r.binary,
    topic: r.topic,
    disabled: r.disabled,
    forcedDown: r.forced_down,
    mapped: r.mapped,
    lastSeenUp: r.last_seen_up,
    live: r.live,
  }));
}
