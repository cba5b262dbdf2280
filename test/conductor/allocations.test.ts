/**
 * The allocating process across conductors (`conductor/allocations.ts`, `nodes/allocation-store.ts`):
 * two conductors racing for one node never both get it — whether two allocations want it, or one
 * allocation is worked on by two conductors at once — and an allocation left `allocating` by a
 * conductor that died is finished by a survivor, through the ring. On both engines, each
 * "conductor" with its own database connection.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { conductorRings } from '../../src/cluster/conductor-rings.js';
import type { ConductorRings } from '../../src/cluster/conductor-rings.js';
import { markOffline, registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { AllocationWorker, allocationOwner } from '../../src/conductor/allocations.js';
import { loadConfig } from '../../src/config/load.js';
import type { Store } from '../../src/db/connect.js';
import { ALLOCATIONS_CHANNEL, claimNode, createAllocation } from '../../src/nodes/allocation-store.js';
import { createNode } from '../../src/nodes/node-store.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const logger = createLogger({ level: 'silent', pretty: false });
const { config } = loadConfig({ env: {} });

async function freeNode(store: Store, rc: string): Promise<{ id: number; uuid: string }> {
  const node = await createNode(store, { driver: 'fake-hardware', resource_class: rc, provision_state: 'available', power_state: 'power off' });
  return { id: node.id, uuid: node.uuid };
}

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(engines)('allocating across conductors on %s', (engine) => {
  const db = useMigratedDatabase(engine);

  function worker(store: Store, hostname: string, view: ConductorRings, pollMs = 0): AllocationWorker {
    return new AllocationWorker({ store, hostname, view, logger, conductorId: () => undefined, pollMs, retry: { attempts: 2, intervalMs: 20 } });
  }
  const rings = (store: Store, pollIntervalMs = 0) => conductorRings(store, config.conductor, { logger, pollIntervalMs });
  /**
   * Another conductor's connection. On SQLite that is the same handle: two connections of one
   * process cannot interleave write transactions (the synchronous driver's busy wait blocks the
   * thread the other commit needs); conductors on one SQLite file are separate processes, and on
   * PostgreSQL the connections here are truly concurrent.
   */
  const connection = async (): Promise<Store> => (engine === 'sqlite' ? db.store : db.other());
  const allocationRow = (store: Store, uuid: string) => store.db.selectFrom('allocations').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();

  it('gives one node to one of two allocations worked on by two conductors at once, every time', async () => {
    const other = await connection();
    const views = [rings(db.store), rings(other)];
    const [w1, w2] = [worker(db.store, 'c1', views[0]!), worker(other, 'c2', views[1]!)];
    try {
      for (let round = 0; round < 8; round += 1) {
        const rc = `rc-${round}`;
        const node = await freeNode(db.store, rc);
        const a = await createAllocation(db.store, { resource_class: rc });
        const b = await createAllocation(db.store, { resource_class: rc });
        await Promise.all([w1.allocate(a.id), w2.allocate(b.id)]);
        const rows = await Promise.all([allocationRow(db.store, a.uuid), allocationRow(db.store, b.uuid)]);
        expect(rows.map((r) => r.state).sort(), `round ${round}`).toEqual(['active', 'error']);
        const winner = rows.find((r) => r.state === 'active')!;
        expect(winner.node_id).toBe(node.id);
        expect(rows.find((r) => r.state === 'error')!.last_error).toMatch(/all nodes were filtered out during reservation|no available nodes match the resource class/);
        const held = await db.store.db.selectFrom('nodes').select(['allocation_id', 'instance_uuid']).where('id', '=', node.id).executeTakeFirstOrThrow();
        expect(held).toEqual({ allocation_id: winner.id, instance_uuid: winner.uuid });
      }
    } finally {
      await Promise.all(views.map((v) => v.stop()));
    }
  });

  it('lets exactly one of many simultaneous claims of a node win, and one allocation hold one node only', async () => {
    const stores = [db.store, await connection(), await connection()];
    const node = await freeNode(db.store, 'race');
    const allocations = await Promise.all([0, 1, 2, 3, 4, 5].map(() => createAllocation(db.store, { resource_class: 'race' })));
    const outcomes = await Promise.all(allocations.map((allocation, i) => claimNode(stores[i % stores.length]!, { allocation, node: { ...node, instance_info: {} }, conductorId: null })));
    expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
    expect(outcomes.filter((o) => o !== 'claimed').every((o) => o === 'taken')).toBe(true);

    // One allocation, two nodes, two conductors: it ends up with one of them; the other stays free.
    const [n1, n2] = [await freeNode(db.store, 'pair'), await freeNode(db.store, 'pair')];
    const one = await createAllocation(db.store, { resource_class: 'pair' });
    const both = await Promise.all([claimNode(stores[0]!, { allocation: one, node: { ...n1, instance_info: {} }, conductorId: null }), claimNode(stores[1]!, { allocation: one, node: { ...n2, instance_info: {} }, conductorId: null })]);
    expect([...both].sort()).toEqual(['claimed', 'gone']);
    const nodes = await db.store.db.selectFrom('nodes').select(['id', 'allocation_id', 'instance_uuid']).where('id', 'in', [n1.id, n2.id]).orderBy('id').execute();
    expect(nodes.filter((n) => n.allocation_id === one.id && n.instance_uuid === one.uuid)).toHaveLength(1);
    expect(nodes.filter((n) => n.allocation_id === null && n.instance_uuid === null)).toHaveLength(1);
  });

  it('finishes an allocation a dead conductor left allocating, on the survivor the ring gives it to', async () => {
    const c1 = await registerConductor(db.store, { hostname: 'c1', group: '', drivers: [], rpcUrl: null }, 60);
    await registerConductor(db.store, { hostname: 'c2', group: '', drivers: [], rpcUrl: null }, 60);
    const other = await db.other();
    const view = rings(other, 100);
    const survivor = worker(other, 'c2', view, 100);
    try {
      await view.start();
      await freeNode(db.store, 'gold');
      // An allocation the ring gives to c1, which "died" before working on it.
      let uuid = randomUUID();
      while (allocationOwner(view, uuid) !== 'c1') uuid = randomUUID();
      const stranded = await createAllocation(db.store, { uuid, resource_class: 'gold' });
      expect(await survivor.pass()).toBe(0);
      await survivor.idle();
      expect((await allocationRow(db.store, uuid)).state).toBe('allocating');

      // c2 runs its own loop from here: c1 leaving changes the ring, and c2 takes the allocation.
      await survivor.start();
      await markOffline(db.store, c1, 'c1');
      const done = await eventually(() => allocationRow(db.store, stranded.uuid), (r) => r.state !== 'allocating');
      expect(done).toMatchObject({ state: 'active', last_error: null });
      expect(allocationOwner(view, uuid)).toBe('c2');
    } finally {
      await survivor.stop();
      await view.stop();
    }
  });

  // SQLite has no notifications: there a conductor polls (`pollMs`), as the other tests do; this
  // test is PostgreSQL's alone.
  if (engine !== 'sqlite') it('starts on an announced allocation at once, with no poll at all', async () => {
    await registerConductor(db.store, { hostname: 'n1', group: '', drivers: [], rpcUrl: null }, 60);
    const other = await db.other();
    const view = rings(other);
    const notified = worker(other, 'n1', view, 0);
    try {
      await view.fresh();
      await notified.start();
      // The first pass (at start) is over before the allocation exists: only the notification is left.
      await notified.pass();
      await freeNode(db.store, 'fast');
      const made = await createAllocation(db.store, { resource_class: 'fast' });
      await db.store.notify(ALLOCATIONS_CHANNEL, made.uuid);
      const row = await eventually(() => allocationRow(db.store, made.uuid), (r) => r.state !== 'allocating');
      expect(row.state).toBe('active');
    } finally {
      await notified.stop();
      await view.stop();
    }
  });

  it('takes only nodes owned or leased by the allocation\'s owner when it has one', async () => {
    await registerConductor(db.store, { hostname: 'o1', group: '', drivers: [], rpcUrl: null }, 60);
    const view = rings(db.store);
    try {
      await view.fresh();
      const w = worker(db.store, 'o1', view);
      const [mine, leased, theirs] = [await freeNode(db.store, 'p'), await freeNode(db.store, 'p'), await freeNode(db.store, 'p')];
      await db.store.db.updateTable('nodes').set({ owner: 'team-a' }).where('id', '=', mine.id).execute();
      await db.store.db.updateTable('nodes').set({ owner: 'team-b', lessee: 'team-a' }).where('id', '=', leased.id).execute();
      await db.store.db.updateTable('nodes').set({ owner: 'team-b' }).where('id', '=', theirs.id).execute();
      const made = await Promise.all([0, 1, 2].map(() => createAllocation(db.store, { resource_class: 'p', owner: 'team-a' })));
      for (const a of made) await w.allocate(a.id);
      const rows = await Promise.all(made.map((a) => allocationRow(db.store, a.uuid)));
      expect(rows.filter((r) => r.state === 'active').map((r) => r.node_id).sort()).toEqual([mine.id, leased.id].sort());
      expect(rows.filter((r) => r.state === 'error')).toHaveLength(1);
    } finally {
      await view.stop();
    }
  });

  it('works on allocations without a default-group conductor, on the ring of all live conductors', async () => {
    await registerConductor(db.store, { hostname: 'g1', group: 'rack-a', drivers: [], rpcUrl: null }, 60);
    const view = rings(db.store);
    try {
      await view.fresh();
      expect(allocationOwner(view, randomUUID())).toBe('g1');
      const only = worker(db.store, 'g1', view);
      await freeNode(db.store, 'any');
      const made = await createAllocation(db.store, { resource_class: 'any' });
      expect(await only.pass()).toBe(1);
      await only.idle();
      expect((await allocationRow(db.store, made.uuid)).state).toBe('active');
    } finally {
      await view.stop();
    }
  });
});
