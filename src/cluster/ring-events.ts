/**
 * Ring events: a bounded, durable record of what changed the conductors' rings and of the reconcile
 * passes that followed — what the dashboard's take-over timeline shows.
 *
 * Who writes what, so that each event is written once:
 * - `joined`: the conductor itself, once registered (its ring entry appears for everyone then);
 * - `left`: the conductor itself, when it goes offline on a graceful stop;
 * - `died`: a survivor whose ring dropped a conductor that is still marked online (its heartbeat
 *   expired by the database clock); several survivors see it, the first write wins (`dedupe_key`);
 * - `pass`: a conductor, for passes worth showing (`PassLog` in the conductor decides).
 *
 * Times are the database clock. Recording never fails its caller: a lost event is logged, not fatal.
 * Only the last `RING_EVENTS_KEPT` events are kept.
 */
import type { Store } from '../db/connect.js';

/** PostgreSQL NOTIFY channel on which a new ring event is announced (payload: its kind). */
export const RING_EVENTS_CHANNEL = 'ironring_ring_events';

/** Events kept; older ones are deleted as new ones are written. */
export const RING_EVENTS_KEPT = 1000;

export const RING_EVENT_KINDS = ['joined', 'left', 'died', 'pass'] as const;
export type RingEventKind = (typeof RING_EVENT_KINDS)[number];

/** One ring event as read back. */
export interface RingEvent {
  id: number;
  kind: RingEventKind;
  conductorGroup: string;
  hostname: string;
  /** Database clock. */
  at: Date;
  /** Passes: nodes taken over. */
  nodesMoved: number | null;
  /** Passes: owned nodes left not current (0: this conductor converged). */
  pending: number | null;
  durationMs: number | null;
  /** Passes: trigger and counts; deaths: observer and last heartbeat. */
  detail: Record<string, unknown>;
}

export interface NewRingEvent {
  kind: RingEventKind;
  conductorGroup: string;
  hostname: string;
  nodesMoved?: number;
  pending?: number;
  durationMs?: number;
  detail?: Record<string, unknown>;
  /** Events with one key are written once, whoever writes first. */
  dedupeKey?: string;
}

/** Writes one event (time: the database's now) and trims the record; true when written (not a duplicate). */
export async function recordRingEvent(store: Store, event: NewRingEvent): Promise<boolean> {
  const inserted = await store.db
    .insertInto('ring_events')
    .values({
      kind: event.kind,
      conductor_group: event.conductorGroup,
      hostname: event.hostname,
      nodes_moved: event.nodesMoved ?? null,
      pending: event.pending ?? null,
      duration_ms: event.durationMs === undefined ? null : Math.round(event.durationMs),
      dedupe_key: event.dedupeKey ?? null,
      detail: JSON.stringify(event.detail ?? {}),
      at: store.sqlNow(),
    })
    .onConflict((oc) => oc.column('dedupe_key').doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted === undefined) return false;
  await store.db.deleteFrom('ring_events').where('id', '<=', inserted.id - RING_EVENTS_KEPT).execute();
  await store.notify(RING_EVENTS_CHANNEL, event.kind).catch(() => undefined);
  return true;
}

/**
 * Records the departures of a ring change seen by `observer`: for each removed conductor still
 * marked online (its heartbeat expired) a `died` event, once per heartbeat whoever sees it. Graceful
 * departures (offline) were recorded by the conductor that left.
 */
export async function recordDepartures(store: Store, change: { group: string; removed: readonly string[] }, observer: string): Promise<void> {
  if (change.removed.length === 0) return;
  const rows = await store.db
    .selectFrom('conductors')
    .select(['hostname', 'online', 'updated_at'])
    .where('hostname', 'in', [...change.removed])
    .execute();
  for (const row of rows) {
    if (!row.online) continue;
    const heartbeat = row.updated_at.toISOString();
    await recordRingEvent(store, {
      kind: 'died',
      conductorGroup: change.group,
      hostname: row.hostname,
      detail: { observer, last_heartbeat: heartbeat },
      dedupeKey: `died:${change.group}:${row.hostname}:${heartbeat}`,
    });
  }
}

export interface RingEventQuery {
  /** Newest events first, at most this many. */
  limit: number;
  /** Only this conductor group. */
  group?: string;
  /** Only events after this id (for a live view that has the earlier ones). */
  afterId?: number;
}

/** The newest events, returned oldest first. */
export async function listRingEvents(store: Store, query: RingEventQuery): Promise<RingEvent[]> {
  let q = store.db.selectFrom('ring_events').selectAll().orderBy('id', 'desc').limit(query.limit);
  if (query.group !== undefined) q = q.where('conductor_group', '=', query.group);
  if (query.afterId !== undefined) q = q.where('id', '>', query.afterId);
  const rows = await q.execute();
  return rows.reverse().map((r) => ({
    id: r.id,
    kind: (RING_EVENT_KINDS as readonly string[]).includes(r.kind) ? (r.kind as RingEventKind) : 'pass',
    conductorGroup: r.conductor_group,
    hostname: r.hostname,
    at: r.at,
    nodesMoved: r.nodes_moved,
    pending: r.pending,
    durationMs: r.duration_ms,
    detail: r.detail,
  }));
}
