import { describe, expect, it } from 'vitest';
import { applyPlan, readComputeNodes } from '../../src/compute/compute-nodes.js';
import { planFor } from '../../src/compute/ownership.js';
import { COMPUTE_BINARY, DuplicateService, listServices, markServiceDown, registerService, releaseServiceOfDeadInstance, serviceHeartbeat, serviceInstance } from '../../src/compute/services.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

for (const engine of engines) {
  describe(`compute service rows on ${engine}`, () => {
    const db = useMigratedDatabase(engine);

    it('registers once per host and binary, keeps the row id, and refuses a second live process', async () => {
      const id = await registerService(db.store, { host: 'c1', binary: COMPUTE_BINARY }, 60);
      await expect(registerService(db.store, { host: 'c1', binary: COMPUTE_BINARY }, 60)).rejects.toThrow(DuplicateService);
      await markServiceDown(db.store, id);
      expect(await registerService(db.store, { host: 'c1', binary: COMPUTE_BINARY }, 60)).toBe(id);
      expect(await registerService(db.store, { host: 'c1', binary: 'ironring-scheduler' }, 60)).not.toBe(id);
      expect(await db.store.db.selectFrom('services').select('id').where('host', '=', 'c1').execute()).toHaveLength(2);
    });

    it('judges liveness by the database clock: stale heartbeats, a graceful stop and forced_down are down', async () => {
      const a = await registerService(db.store, { host: 'a', binary: COMPUTE_BINARY }, 60);
      const b = await registerService(db.store, { host: 'b', binary: COMPUTE_BINARY }, 60);
      const c = await registerService(db.store, { host: 'c', binary: COMPUTE_BINARY }, 60);
      const d = await registerService(db.store, { host: 'd', binary: COMPUTE_BINARY }, 60);
      await db.store.db.updateTable('services').set({ last_seen_up: db.store.sqlSecondsAgo(61) }).where('id', '=', b).execute();
      await markServiceDown(db.store, c);
      await db.store.db.updateTable('services').set({ forced_down: true }).where('id', '=', d).execute();
      const live = (await listServices(db.store, COMPUTE_BINARY, 60)).filter((s) => s.live).map((s) => s.id);
      expect(live).toEqual([a]);
      expect(await serviceHeartbeat(db.store, b)).toBe(true);
      expect((await listServices(db.store, COMPUTE_BINARY, 60)).filter((s) => s.live).map((s) => s.id)).toEqual([a, b]);
      // A crashed predecessor's stale row is taken over by the next process with that host.
      await db.store.db.updateTable('services').set({ last_seen_up: db.store.sqlSecondsAgo(61) }).where('id', '=', a).execute();
      expect(await registerService(db.store, { host: 'a', binary: COMPUTE_BINARY }, 60)).toBe(a);
    });

    it('lets a restart take back a live row only while it carries the dead process\'s instance token', async () => {
      const id = await registerService(db.store, { host: 'r1', binary: COMPUTE_BINARY }, 60);
      const dead = (await serviceInstance(db.store, 'r1', COMPUTE_BINARY))!;
      expect(dead.id).toBe(id);
      // Someone else's token (the row taken over since): untouched, still live, still refused.
      expect(await releaseServiceOfDeadInstance(db.store, { id, host: 'r1', binary: COMPUTE_BINARY, instanceToken: 'not-the-holder' })).toBe(false);
      await expect(registerService(db.store, { host: 'r1', binary: COMPUTE_BINARY }, 60)).rejects.toThrow(DuplicateService);
      // The dead holder's token: marked down at once, and the restart registers with a new token.
      expect(await releaseServiceOfDeadInstance(db.store, { host: 'r1', binary: COMPUTE_BINARY, ...dead })).toBe(true);
      expect(await registerService(db.store, { host: 'r1', binary: COMPUTE_BINARY }, 60)).toBe(id);
      const now = (await serviceInstance(db.store, 'r1', COMPUTE_BINARY))!;
      expect(now.instanceToken).not.toBe(dead.instanceToken);
      expect(await releaseServiceOfDeadInstance(db.store, { id, host: 'r1', binary: COMPUTE_BINARY, instanceToken: dead.instanceToken })).toBe(false);
    });
  });

  describe(`compute node writes on ${engine}`, () => {
    const db = useMigratedDatabase(engine);
    const nodes = Array.from({ length: 40 }, (_, i) => ({ uuid: uuid(i), resourceClass: 'baremetal' }));

    it('creates each row once even when two services both think they own a node', async () => {
      const plan = planFor('c1', { liveHosts: ['c1'], nodes, computeNodes: [], instances: [] });
      const other = await db.other();
      const [first, second] = await Promise.all([applyPlan(db.store, 'c1', plan), applyPlan(other, 'c2', planFor('c2', { liveHosts: ['c2'], nodes, computeNodes: [], instances: [] }))]);
      expect(first.created + second.created).toBe(40);
      expect(first.lost + second.lost).toBe(40);
      const rows = await readComputeNodes(db.store);
      expect(rows).toHaveLength(40);
      expect(new Set(rows.map((r) => r.uuid)).size).toBe(40);
    });

    it('moves rows in place, unmarks them for discovery, and never lets the old owner undo a take-over', async () => {
      await applyPlan(db.store, 'c1', planFor('c1', { liveHosts: ['c1'], nodes, computeNodes: [], instances: [] }));
      await db.store.db.updateTable('compute_nodes').set({ mapped: true }).execute();
      const ids = new Map((await db.store.db.selectFrom('compute_nodes').select(['uuid', 'id']).execute()).map((r) => [r.uuid, r.id]));
      const seen = await readComputeNodes(db.store);
      const c2 = planFor('c2', { liveHosts: ['c1', 'c2'], nodes, computeNodes: seen, instances: [] });
      const applied = await applyPlan(db.store, 'c2', c2);
      expect(applied.takenOver).toBe(c2.claim.length);
      const after = await db.store.db.selectFrom('compute_nodes').select(['uuid', 'id', 'host', 'mapped']).execute();
      expect(after).toHaveLength(40);
      for (const r of after) {
        expect(r.id).toBe(ids.get(r.uuid));
        expect(r.mapped).toBe(r.host === 'c1');
      }
      // c1, with a stale view in which it still owns everything, tries to take the rows back from a
      // host it believes them on — and changes nothing, because they are no longer where it thinks.
      const stale = planFor('c1', { liveHosts: ['c1'], nodes, computeNodes: seen.map((r) => ({ ...r, host: 'c3' })), instances: [] });
      const undo = await applyPlan(db.store, 'c1', stale);
      expect(undo.takenOver).toBe(0);
      // …and its removal of a row the new owner holds is a no-op too.
      const moved = c2.claim[0]!.uuid;
      const res = await applyPlan(db.store, 'c1', { claim: [], adoptInstances: [], remove: [{ uuid: moved, host: 'c1' }], owned: 0 });
      expect(res.removed).toBe(0);
      expect((await readComputeNodes(db.store)).find((r) => r.uuid === moved)?.host).toBe('c2');
    });

    it('moves an instance with its node when its host is dead', async () => {
      await db.store.db.insertInto('compute_nodes').values({ uuid: uuid(1), host: 'dead', hypervisor_hostname: uuid(1) }).execute();
      await db.store.db.insertInto('instances').values({ uuid: 'inst-1', host: 'dead', node: uuid(1), vm_state: 'active' }).execute();
      const input = { liveHosts: ['c1'], nodes: [{ uuid: uuid(1), resourceClass: null }], computeNodes: await readComputeNodes(db.store), instances: [{ uuid: 'inst-1', host: 'dead', node: uuid(1) }] };
      const applied = await applyPlan(db.store, 'c1', planFor('c1', input));
      expect(applied).toMatchObject({ takenOver: 1, adopted: 1 });
      expect(await db.store.db.selectFrom('instances').select('host').executeTakeFirst()).toEqual({ host: 'c1' });
    });
  });
}
