/**
 * Membership and lock release: behaviour that mutants of scripts/mutants.json showed untested
 * (issue #21; docs/testing.md). Each case names the mutants it kills.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { conductorMembership } from '../../src/cluster/conductor-rings.js';
import { LiveRings } from '../../src/cluster/live-rings.js';
import { releaseDeadReservations } from '../../src/cluster/dead-locks.js';
import { TaskReleased } from '../../src/cluster/errors.js';
import { DuplicateConductor, heartbeat, heartbeatingHosts, listConductors, markOffline, membersByGroup, registerConductor } from '../../src/cluster/membership.js';
import { releaseReservationsOf } from '../../src/cluster/reservations.js';
import { acquireTask } from '../../src/cluster/task.js';
import { createLogger } from '../../src/common/logger.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const TIMEOUT = 60;

describe.each(engines)('membership and lock release on %s', (engine) => {
  const db = useMigratedDatabase(engine);

  const register = (store: Store, hostname: string) => registerConductor(store, { hostname, group: '', drivers: ['fake-hardware'] }, TIMEOUT);
  /** Makes a conductor's last heartbeat a day old: dead by any timeout the tests use. */
  const expire = (store: Store, hostname: string) =>
    store.db.updateTable('conductors').set({ updated_at: new Date(Date.now() - 86_400_000) } as never).where('hostname', '=', hostname).execute();
  const lockedNode = async (store: Store, reservation: string) =>
    (
      await store.db
        .insertInto('nodes')
        .values({ uuid: randomUUID(), reservation, driver: 'fake-hardware', provision_state: 'available' })
        .returning(['id', 'uuid'])
        .executeTakeFirstOrThrow()
    ).uuid;

  it('reports a heartbeat of a missing row as failed, so the conductor re-registers (M4)', async () => {
    const id = await register(db.store, 'c1');
    expect(await heartbeat(db.store, id)).toBe(true);
    await db.store.db.deleteFrom('conductors').where('id', '=', id).execute();
    expect(await heartbeat(db.store, id)).toBe(false);
  });

  it('counts only fresh heartbeats, and releases only the locks of conductors without one (M5, DL1)', async () => {
    await register(db.store, 'live');
    await register(db.store, 'gone');
    await expire(db.store, 'gone');
    expect([...(await heartbeatingHosts(db.store, TIMEOUT))]).toEqual(['live']);
    const held = await lockedNode(db.store, 'live');
    const stranded = await lockedNode(db.store, 'gone');
    expect(await releaseDeadReservations(db.store, TIMEOUT, 'live')).toEqual([stranded]);
    const rows = await db.store.db.selectFrom('nodes').select(['uuid', 'reservation']).execute();
    expect(rows.find((r) => r.uuid === held)!.reservation).toBe('live');
    expect(rows.find((r) => r.uuid === stranded)!.reservation).toBeNull();
  });

  it('leaves last_error alone on a released node that had no pending power action (RS4)', async () => {
    const uuid = await lockedNode(db.store, 'dead-host');
    await releaseReservationsOf(db.store, 'dead-host', { by: 'survivor', reason: 'heartbeat expired' });
    const row = await db.store.db.selectFrom('nodes').select(['reservation', 'last_error']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
    expect(row).toEqual({ reservation: null, last_error: null });
  });

  it('has the conductor offline, for every reader, once markOffline returns (M6)', async () => {
    const id = await register(db.store, 'c1');
    const reader = await db.other();
    await markOffline(db.store, id, 'c1');
    const [row] = await listConductors(reader, TIMEOUT, 'c1');
    expect(row).toMatchObject({ online: false, alive: false });
  });

  it('when the history cannot be written: PostgreSQL undoes the release, SQLite keeps it (RS6)', async () => {
    const uuid = await lockedNode(db.store, 'dead-host');
    // A history table that refuses every row.
    if (engine === 'postgres') {
      await sql`create function refuse_history() returns trigger language plpgsql as $$ begin raise exception 'history refused by the test'; end $$`.execute(db.store.db);
      await sql`create trigger refuse_history before insert on node_history for each row execute function refuse_history()`.execute(db.store.db);
    } else {
      await sql`create trigger refuse_history before insert on node_history begin select raise(abort, 'history refused by the test'); end`.execute(db.store.db);
    }
    await expect(releaseReservationsOf(db.store, 'dead-host', { by: 'survivor', reason: 'heartbeat expired' })).rejects.toThrow(/history refused/);
    const row = await db.store.db.selectFrom('nodes').select('reservation').where('uuid', '=', uuid).executeTakeFirstOrThrow();
    // PostgreSQL: release and history commit together. SQLite: two autocommit statements (see
    // releaseReservationsOf), so the history of that call is lost, never the release.
    expect(row.reservation).toBe(engine === 'postgres' ? 'dead-host' : null);
  });

  it('refuses a write to a task whose release has begun, and leaves the node unchanged (TK1)', async () => {
    const uuid = (
      await db.store.db
        .insertInto('nodes')
        .values({ uuid: randomUUID(), driver: 'fake-hardware', provision_state: 'available' })
        .returning('uuid')
        .executeTakeFirstOrThrow()
    ).uuid;
    const task = await acquireTask(db.store, uuid, { host: 'c1', purpose: 'test' });
    const releasing = task.release();
    await expect(task.update({ name: 'late-write' })).rejects.toBeInstanceOf(TaskReleased);
    await releasing;
    const row = await db.store.db.selectFrom('nodes').select(['name', 'reservation']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
    expect(row).toEqual({ name: null, reservation: null });
  });

  it('refuses a second live conductor with a hostname, and takes over a stale row keeping its id (M2)', async () => {
    const id = await register(db.store, 'c1');
    await expect(register(db.store, 'c1')).rejects.toBeInstanceOf(DuplicateConductor);
    await expire(db.store, 'c1');
    expect(await register(db.store, 'c1')).toBe(id);
  });

  it('lists only live conductors as the view\'s members (CV1)', async () => {
    await register(db.store, 'a');
    await register(db.store, 'b');
    await expire(db.store, 'b');
    const view = new LiveRings(db.store, conductorMembership(db.store, TIMEOUT), { pollIntervalMs: 3_600_000, logger: createLogger({ level: 'silent', pretty: false }) });
    try {
      await view.start();
      expect(view.members().map((m) => m.hostname)).toEqual(['a']);
      expect(view.ring('')?.hosts).toEqual(['a']);
    } finally {
      await view.stop();
    }
  });

  it('writes one history row per released node past the 1,000-row insert batch (RS5)', async () => {
    const count = 1001;
    for (let i = 0; i < count; i += 250) {
      const rows = Array.from({ length: Math.min(250, count - i) }, () => ({ uuid: randomUUID(), reservation: 'dead-host', driver: 'fake-hardware', provision_state: 'available' }));
      await db.store.db.insertInto('nodes').values(rows).execute();
    }
    const released = await releaseReservationsOf(db.store, 'dead-host', { by: 'survivor', reason: 'heartbeat expired' });
    expect(released).toHaveLength(count);
    const history = await db.store.db.selectFrom('node_history').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(history.n)).toBe(count);
  });

  it('reports a failed offline write to its caller instead of losing it (M6)', async () => {
    const id = await register(db.store, 'c1');
    const closed = await openDatabase(db.url);
    await closed.close();
    await expect(markOffline(closed, id, 'c1')).rejects.toThrow();
  });
});

describe('ring members from conductor states (M3)', () => {
  const state = (hostname: string, alive: boolean, conductorGroup = '', weight = 1) => ({
    id: hostname.length,
    hostname,
    conductorGroup,
    online: alive,
    alive,
    drivers: ['fake-hardware'],
    weight,
    rpcUrl: null,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  });

  it('takes live conductors only, grouped, with their weights', () => {
    const members = membersByGroup([state('a', true), state('dead', false), state('b', true, 'g1', 2), state('gone', false, 'g1')]);
    expect([...members.keys()].sort()).toEqual(['', 'g1']);
    expect(members.get('')).toEqual([{ name: 'a', weight: 1 }]);
    expect(members.get('g1')).toEqual([{ name: 'b', weight: 2 }]);
    // A group whose conductors are all dead has no ring at all.
    expect(membersByGroup([state('x', false, 'g2')]).has('g2')).toBe(false);
  });
});
