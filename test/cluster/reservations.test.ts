import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { NodeLocked, NodeNotFound, NodeNotLocked } from '../../src/cluster/errors.js';
import { releaseNode, releaseReservationsOf, reserveNode } from '../../src/cluster/reservations.js';
import type { Store } from '../../src/db/connect.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

describe.each(engines)('node reservations on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let store: Store;
  beforeEach(() => {
    store = db.store;
  });

  const otherStore = () => db.other();

  async function insertNode(values: { name?: string; reservation?: string | null } = {}) {
    return store.db
      .insertInto('nodes')
      .values({ uuid: randomUUID(), name: values.name ?? null, reservation: values.reservation ?? null, driver: 'fake-hardware', provision_state: 'available' })
      .returning(['id', 'uuid'])
      .executeTakeFirstOrThrow();
  }

  async function holderOf(id: number): Promise<string | null> {
    const row = await store.db.selectFrom('nodes').select('reservation').where('id', '=', id).executeTakeFirstOrThrow();
    return row.reservation;
  }

  const noSleep = () => vi.fn(async (_ms: number) => undefined);

  describe('reserveNode', () => {
    it('locks a free node for the host and returns the locked row', async () => {
      const node = await insertNode();
      const row = await reserveNode(store, { id: node.id }, 'c1');
      expect(row).toMatchObject({ id: node.id, uuid: node.uuid, reservation: 'c1', driver: 'fake-hardware' });
      expect(row.extra).toEqual({});
      expect(await holderOf(node.id)).toBe('c1');
    });

    it('finds the node by id, uuid or name', async () => {
      const byId = await insertNode();
      const byUuid = await insertNode();
      const byName = await insertNode({ name: 'rack1-u07' });
      expect((await reserveNode(store, byId.id, 'c1')).uuid).toBe(byId.uuid);
      expect((await reserveNode(store, byUuid.uuid, 'c1')).id).toBe(byUuid.id);
      expect((await reserveNode(store, 'rack1-u07', 'c1')).id).toBe(byName.id);
    });

    it('throws NodeNotFound at once, without retrying, for a node that does not exist', async () => {
      const sleep = noSleep();
      const missing = randomUUID();
      const err = await reserveNode(store, missing, 'c1', { sleep }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NodeNotFound);
      expect(err).toMatchObject({ node: missing, httpStatus: 404 });
      await expect(reserveNode(store, { id: 999_999 }, 'c1', { sleep })).rejects.toBeInstanceOf(NodeNotFound);
      expect(sleep).not.toHaveBeenCalled();
    });

    it('retries a held node attempts-1 times, interval apart, then throws NodeLocked naming the holder', async () => {
      const node = await insertNode();
      await reserveNode(store, node.id, 'conductor-a');
      const sleep = noSleep();
      const err = await reserveNode(store, node.id, 'conductor-b', { attempts: 4, intervalMs: 250, sleep }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NodeLocked);
      expect(err).toMatchObject({ node: node.uuid, holder: 'conductor-a', httpStatus: 409, name: 'NodeLocked' });
      expect((err as Error).message).toBe(`node ${node.uuid} is locked by conductor conductor-a, please retry later`);
      expect(sleep.mock.calls).toEqual([[250], [250], [250]]);
      expect(await holderOf(node.id)).toBe('conductor-a');
    });

    it("defaults to Ironic's three attempts one second apart", async () => {
      const node = await insertNode({ reservation: 'conductor-a' });
      const sleep = noSleep();
      await expect(reserveNode(store, node.id, 'conductor-b', { sleep })).rejects.toBeInstanceOf(NodeLocked);
      expect(sleep.mock.calls).toEqual([[1000], [1000]]);
    });

    it('takes the lock on a retry once the holder released it during the back-off', async () => {
      const node = await insertNode();
      await reserveNode(store, node.id, 'conductor-a');
      const sleep = vi.fn(async () => {
        await releaseNode(store, node.id, 'conductor-a');
      });
      const row = await reserveNode(store, node.id, 'conductor-b', { sleep });
      expect(row.reservation).toBe('conductor-b');
      expect(sleep).toHaveBeenCalledTimes(1);
    });

    it('refuses a second lock by the same host: the lock excludes tasks of one conductor too', async () => {
      const node = await insertNode();
      await reserveNode(store, node.id, 'c1');
      await expect(reserveNode(store, node.id, 'c1', { attempts: 1 })).rejects.toMatchObject({ holder: 'c1' });
    });
  });

  describe('releaseNode', () => {
    it('frees the node so that another host can lock it', async () => {
      const node = await insertNode();
      await reserveNode(store, node.id, 'c1');
      await releaseNode(store, node.id, 'c1');
      expect(await holderOf(node.id)).toBeNull();
      expect((await reserveNode(store, node.uuid, 'c2', { attempts: 1 })).reservation).toBe('c2');
    });

    it("refuses to release another host's lock and leaves it in place", async () => {
      const node = await insertNode();
      await reserveNode(store, node.id, 'c1');
      const err = await releaseNode(store, node.id, 'c2').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NodeNotLocked);
      expect(err).toMatchObject({ node: node.uuid, host: 'c2', holder: 'c1', httpStatus: 409 });
      expect(await holderOf(node.id)).toBe('c1');
    });

    it('refuses to release an unlocked node, and a missing one', async () => {
      const node = await insertNode();
      await expect(releaseNode(store, node.id, 'c1')).rejects.toMatchObject({ name: 'NodeNotLocked', holder: null });
      await expect(releaseNode(store, 999_999, 'c1')).rejects.toBeInstanceOf(NodeNotFound);
    });
  });

  describe('releaseReservationsOf', () => {
    it("releases every lock of the dead host, and only those, with one history entry each", async () => {
      const dead = await Promise.all([1, 2, 3].map(() => insertNode({ reservation: 'dead-host' })));
      const alive = await insertNode({ reservation: 'live-host' });
      const free = await insertNode();

      const released = await releaseReservationsOf(store, 'dead-host', { by: 'survivor', reason: 'heartbeat expired' });
      expect(released.sort()).toEqual(dead.map((n) => n.uuid).sort());
      for (const n of dead) expect(await holderOf(n.id)).toBeNull();
      expect(await holderOf(alive.id)).toBe('live-host');
      expect(await holderOf(free.id)).toBeNull();

      const history = await store.db.selectFrom('node_history').selectAll().orderBy('node_id').execute();
      expect(history.map((h) => h.node_id)).toEqual(dead.map((n) => n.id).sort((a, b) => a - b));
      for (const h of history) {
        expect(h).toMatchObject({ conductor: 'survivor', event_type: 'conductor', severity: 'WARNING' });
        expect(h.event).toContain('dead-host');
        expect(h.event).toContain('heartbeat expired');
        expect(h.uuid).toMatch(/^[0-9a-f-]{36}$/);
      }
      expect(new Set(history.map((h) => h.uuid)).size).toBe(history.length);

      expect(await releaseReservationsOf(store, 'dead-host', { by: 'survivor', reason: 'again' })).toEqual([]);
      expect(await store.db.selectFrom('node_history').select('id').execute()).toHaveLength(dead.length);
    });

    it('clears the pending power action of a released node, with last_error saying it was aborted (issue #14 item 13)', async () => {
      const pending = await insertNode({ reservation: 'dead-host' });
      const other = await insertNode({ reservation: 'live-host' });
      await store.db.updateTable('nodes').set({ target_power_state: 'power off' }).where('id', 'in', [pending.id, other.id]).execute();
      await releaseReservationsOf(store, 'dead-host', { by: 'survivor', reason: 'heartbeat expired' });
      const rows = await store.db.selectFrom('nodes').select(['id', 'target_power_state', 'last_error', 'reservation']).orderBy('id').execute();
      expect(rows.find((r) => r.id === pending.id)).toMatchObject({ target_power_state: null, reservation: null });
      expect(rows.find((r) => r.id === pending.id)!.last_error).toMatch(/^pending power action aborted: lock held by conductor dead-host released by conductor survivor: heartbeat expired$/);
      // Another holder's power action is its own business.
      expect(rows.find((r) => r.id === other.id)).toMatchObject({ target_power_state: 'power off', last_error: null, reservation: 'live-host' });
    });

    it('releases each node once when three survivors do it at the same time', async () => {
      const dead: { id: number; uuid: string }[] = [];
      for (let i = 0; i < 60; i++) dead.push(await insertNode({ reservation: 'dead-host' }));
      const alive = await insertNode({ reservation: 'live-host' });
      const survivors = [store, await otherStore(), await otherStore()];

      const results = await Promise.all(
        survivors.map((s, i) => releaseReservationsOf(s, 'dead-host', { by: `survivor-${i}`, reason: 'heartbeat expired' })),
      );

      const all = results.flat();
      expect(all.sort()).toEqual(dead.map((n) => n.uuid).sort());
      expect(new Set(all).size).toBe(all.length);
      const history = await store.db.selectFrom('node_history').select(['node_id', 'conductor']).execute();
      expect(history.map((h) => h.node_id).sort((a, b) => a - b)).toEqual(dead.map((n) => n.id).sort((a, b) => a - b));
      // Each history row is written by the survivor whose call returned that node.
      const releasedBy = new Map<string, string>();
      results.forEach((uuids, i) => uuids.forEach((u) => releasedBy.set(u, `survivor-${i}`)));
      const idToUuid = new Map(dead.map((n) => [n.id, n.uuid]));
      for (const h of history) expect(h.conductor).toBe(releasedBy.get(idToUuid.get(h.node_id)!));
      expect(await holderOf(alive.id)).toBe('live-host');
    });
  });
});
