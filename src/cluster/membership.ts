/**
 * Conductor membership: registration, heartbeats and liveness — all judged by the database clock.
 *
 * A conductor is live while `online` and its heartbeat (`updated_at`, always written as the
 * database's own "now") is younger than `heartbeat_timeout` by that same clock. No process's own
 * clock takes part, so a conductor whose clock is off by minutes is still judged correctly, and
 * judges others correctly (Ironic compares against each process's clock).
 */
import { sql } from 'kysely';
import { IronringError } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { isUniqueViolation } from '../db/errors.js';
import { replaceInterfaces } from './hardware-interfaces.js';
import type { HardwareInterfaceRegistration } from './hardware-interfaces.js';

/** PostgreSQL NOTIFY channel on which membership changes are announced. */
export const MEMBERSHIP_CHANNEL = 'ironring_conductors';

/** Thrown when a conductor starts with the hostname of one that is still live. */
export class DuplicateConductor extends IronringError {
  override readonly httpStatus = 409;
  override readonly exitCode = 1;
  constructor(
    readonly hostname: string,
    readonly secondsSinceHeartbeat: number,
  ) {
    super(
      `conductor ${hostname} is already running (last heartbeat ${secondsSinceHeartbeat.toFixed(1)} s ago by the database clock); ` +
        'stop it first or start this one with another --host',
    );
  }
}

export interface ConductorRegistration {
  hostname: string;
  group: string;
  /** Hardware types this conductor serves. */
  drivers: string[];
  interfaces?: HardwareInterfaceRegistration[];
  rpcUrl?: string | null;
  tftpAddress?: string | null;
  httpUrl?: string | null;
  /** `host:dhcpPort+pxePort` of its ProxyDHCP responder. */
  proxyDhcpAddress?: string | null;
  weight?: number;
}

/** One conductor as the cluster sees it. */
export interface ConductorState {
  id: number;
  hostname: string;
  conductorGroup: string;
  online: boolean;
  /** Live by the database clock: online and heartbeat younger than the timeout. */
  alive: boolean;
  drivers: string[];
  weight: number;
  rpcUrl: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The SQL condition "live": online and heartbeat within `timeout` seconds of the database's now. */
function aliveExpression(store: Store, timeout: number) {
  return sql<boolean>`(online = ${true} and updated_at >= ${store.sqlSecondsAgo(timeout)})`;
}

/**
 * Registers a conductor: upsert by hostname (the row id survives restarts), online, heartbeat now.
 * Refused with `DuplicateConductor` when a live conductor already holds the hostname; a stale row
 * (a crashed predecessor) is taken over. Both checks and the take-over are one conditional write,
 * so two processes starting with one hostname cannot both win.
 */
export async function registerConductor(store: Store, reg: ConductorRegistration, heartbeatTimeout: number): Promise<number> {
  const values = {
    conductor_group: reg.group,
    online: true,
    drivers: JSON.stringify(reg.drivers),
    rpc_url: reg.rpcUrl ?? null,
    tftp_address: reg.tftpAddress ?? null,
    http_url: reg.httpUrl ?? null,
    proxydhcp_address: reg.proxyDhcpAddress ?? null,
    weight: reg.weight ?? 1,
    updated_at: store.sqlNow(),
  };
  const { db } = store;
  let id: number | undefined;
  const taken = await db
    .updateTable('conductors')
    .set(values)
    .where('hostname', '=', reg.hostname)
    .where(sql<boolean>`not ${aliveExpression(store, heartbeatTimeout)}`)
    .returning('id')
    .executeTakeFirst();
  id = taken?.id;
  if (id === undefined) {
    const existing = await db
      .selectFrom('conductors')
      .select('id')
      .where('hostname', '=', reg.hostname)
      .executeTakeFirst();
    if (existing) throw new DuplicateConductor(reg.hostname, await secondsSinceHeartbeat(store, reg.hostname));
    try {
      const inserted = await db
        .insertInto('conductors')
        .values({ hostname: reg.hostname, ...values, created_at: store.sqlNow() })
        .returning('id')
        .executeTakeFirstOrThrow();
      id = inserted.id;
    } catch (err) {
      // Another process registered the same hostname between our update and insert.
      if (isUniqueViolation(err)) {
        throw new DuplicateConductor(reg.hostname, await secondsSinceHeartbeat(store, reg.hostname));
      }
      throw err;
    }
  }
  await replaceInterfaces(store, id, reg.interfaces ?? []);
  await store.notify(MEMBERSHIP_CHANNEL, `registered:${reg.hostname}`);
  return id;
}

/**
 * Throws `DuplicateConductor` when a live conductor already has this hostname. A cheap early check,
 * so a duplicate is refused before it binds ports or touches files; `registerConductor` still makes
 * the final, race-free decision.
 */
export async function assertNotRunning(store: Store, hostname: string, heartbeatTimeout: number): Promise<void> {
  const [existing] = await listConductors(store, heartbeatTimeout, hostname);
  if (existing?.alive) throw new DuplicateConductor(hostname, await secondsSinceHeartbeat(store, hostname));
}

async function secondsSinceHeartbeat(store: Store, hostname: string): Promise<number> {
  const row = await store.db.selectFrom('conductors').select('updated_at').where('hostname', '=', hostname).executeTakeFirst();
  if (!row) return 0;
  return Math.max(0, ((await store.now()).getTime() - row.updated_at.getTime()) / 1000);
}

/**
 * Writes a heartbeat with the database clock. A stopping conductor (offline) keeps heartbeating
 * while it finishes locked work, so survivors know its locks are still held by a living process.
 * Returns false when the row is gone, so the caller can re-register.
 */
export async function heartbeat(store: Store, conductorId: number): Promise<boolean> {
  const res = await store.db
    .updateTable('conductors')
    .set({ updated_at: store.sqlNow() })
    .where('id', '=', conductorId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Marks a conductor offline at once (graceful stop); the row is kept, so its id survives. */
export async function markOffline(store: Store, conductorId: number, hostname: string): Promise<void> {
  await store.db.updateTable('conductors').set({ online: false }).where('id', '=', conductorId).execute();
  await store.notify(MEMBERSHIP_CHANNEL, `offline:${hostname}`);
}

/**
 * Marks a crashed predecessor's conductor row offline at once — only while the row still is the one
 * that process registered (same id, hostname and RPC address), so a row another conductor took since
 * is never touched. The caller must know the predecessor is gone (`ironring up`'s lock file names a
 * dead process). True when released.
 */
export async function releaseConductorOfDeadInstance(store: Store, row: { id: number; hostname: string; rpcUrl: string | null }): Promise<boolean> {
  let query = store.db.updateTable('conductors').set({ online: false }).where('id', '=', row.id).where('hostname', '=', row.hostname);
  query = row.rpcUrl === null ? query.where('rpc_url', 'is', null) : query.where('rpc_url', '=', row.rpcUrl);
  if (Number((await query.executeTakeFirst()).numUpdatedRows) === 0) return false;
  await store.notify(MEMBERSHIP_CHANNEL, `offline:${row.hostname}`).catch(() => undefined);
  return true;
}

/** Every conductor row with its liveness by the database clock, ordered by hostname. */
export async function listConductors(store: Store, heartbeatTimeout: number, hostname?: string): Promise<ConductorState[]> {
  let query = store.db
    .selectFrom('conductors')
    .select(['id', 'hostname', 'conductor_group', 'online', 'drivers', 'weight', 'rpc_url', 'created_at', 'updated_at'])
    .select(store.sqlFlag(aliveExpression(store, heartbeatTimeout)).as('alive'))
    .orderBy('hostname');
  if (hostname !== undefined) query = query.where('hostname', '=', hostname);
  const rows = await query.execute();
  return rows.map((r) => ({
    id: r.id,
    hostname: r.hostname,
    conductorGroup: r.conductor_group,
    online: r.online,
    alive: r.alive,
    drivers: r.drivers,
    weight: r.weight,
    rpcUrl: r.rpc_url,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
}

/** Hostnames whose heartbeat is fresh by the database clock, whether online or stopping. */
export async function heartbeatingHosts(store: Store, heartbeatTimeout: number): Promise<Set<string>> {
  const rows = await store.db
    .selectFrom('conductors')
    .select('hostname')
    .where('updated_at', '>=', store.sqlSecondsAgo(heartbeatTimeout))
    .execute();
  return new Set(rows.map((r) => r.hostname));
}

/** Live conductors grouped for ring building: group → members (hostname, weight). */
export function membersByGroup(conductors: readonly ConductorState[]): Map<string, Array<{ name: string; weight: number }>> {
  const byGroup = new Map<string, Array<{ name: string; weight: number }>>();
  for (const c of conductors) {
    if (!c.alive) continue;
    const list = byGroup.get(c.conductorGroup) ?? [];
    list.push({ name: c.hostname, weight: c.weight });
    byGroup.set(c.conductorGroup, list);
  }
  return byGroup;
}
