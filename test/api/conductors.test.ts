import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const V = { 'x-openstack-ironic-api-version': '1.49' };

function faultstring(body: string): string {
  return (JSON.parse(JSON.parse(body).error_message) as { faultstring: string }).faultstring;
}

describe.each(engines)('conductors and ring API on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let app: FastifyInstance;
  const nodeUuids = Array.from({ length: 30 }, () => randomUUID());

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    app = buildApi({ store, config: loadConfig({ env: {} }).config, logger: createLogger({ level: 'silent', pretty: false }) });
    await registerConductor(store, { hostname: 'c1', group: '', drivers: ['fake-hardware'] }, 60);
    await registerConductor(store, { hostname: 'c2', group: '', drivers: [] }, 60);
    await registerConductor(store, { hostname: 'r1', group: 'rack1', drivers: [] }, 60);
    // A conductor whose heartbeat stopped an hour ago.
    await store.db.insertInto('conductors').values({ hostname: 'old', updated_at: new Date(Date.now() - 3_600_000) }).execute();
    await store.db
      .insertInto('nodes')
      .values(nodeUuids.map((uuid, i) => ({ uuid, name: `n${i}`, driver: 'fake-hardware', provision_state: 'available', conductor_group: i < 10 ? 'rack1' : '' })))
      .execute();
  });
  afterAll(async () => {
    await app.close();
    await store.close();
    await target.drop();
  });

  it('lists conductors with liveness by the database clock', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/conductors', headers: { ...V, host: 'api:6385' } });
    expect(res.statusCode).toBe(200);
    const { conductors } = res.json() as { conductors: Array<Record<string, unknown>> };
    expect(conductors.map((c) => [c.hostname, c.conductor_group, c.alive])).toEqual([
      ['c1', '', true],
      ['c2', '', true],
      ['old', '', false],
      ['r1', 'rack1', true],
    ]);
    expect(Object.keys(conductors[0]!).sort()).toEqual(['alive', 'conductor_group', 'hostname', 'links']);
    expect(conductors[0]!.links).toEqual([
      { href: 'http://api:6385/v1/conductors/c1', rel: 'self' },
      { href: 'http://api:6385/conductors/c1', rel: 'bookmark' },
    ]);
  });

  it('shows details and one conductor', async () => {
    const detail = await app.inject({ method: 'GET', url: '/v1/conductors?detail=True', headers: V });
    const c1 = (detail.json() as { conductors: Array<Record<string, unknown>> }).conductors[0]!;
    expect(c1).toMatchObject({ hostname: 'c1', drivers: ['fake-hardware'] });
    expect(c1.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    const one = await app.inject({ method: 'GET', url: '/v1/conductors/r1?fields=hostname,alive', headers: V });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ hostname: 'r1', alive: true });
    expect(Object.keys(one.json() as object).sort()).toEqual(['alive', 'hostname', 'links']);
  });

  it('answers 404 for an unknown conductor and before microversion 1.49, 400 for bad fields', async () => {
    const unknown = await app.inject({ method: 'GET', url: '/v1/conductors/nope', headers: V });
    expect(unknown.statusCode).toBe(404);
    expect(faultstring(unknown.body)).toBe('conductor nope could not be found');
    const old = await app.inject({ method: 'GET', url: '/v1/conductors', headers: { 'x-openstack-ironic-api-version': '1.48' } });
    expect(old.statusCode).toBe(404);
    const bad = await app.inject({ method: 'GET', url: '/v1/conductors?fields=hostname,colour', headers: V });
    expect(bad.statusCode).toBe(400);
    expect(faultstring(bad.body)).toBe('fields: unknown conductor field "colour"; valid fields: hostname, conductor_group, alive, drivers, created_at, updated_at');
  });

  it('places every node on a live conductor of its group, with ordered replicas', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/ring' });
    expect(res.statusCode).toBe(200);
    const ring = res.json() as {
      replicas: number;
      groups: Array<{ conductor_group: string; hosts: string[]; node_counts: Record<string, number> }>;
      nodes: Array<{ uuid: string; conductor_group: string; owner: string; replicas: string[] }>;
    };
    expect(ring.replicas).toBe(2);
    expect(ring.groups.map((g) => [g.conductor_group, g.hosts])).toEqual([
      ['', ['c1', 'c2']],
      ['rack1', ['r1']],
    ]);
    expect(ring.nodes).toHaveLength(30);
    for (const n of ring.nodes) {
      if (n.conductor_group === 'rack1') expect([n.owner, n.replicas]).toEqual(['r1', []]);
      else {
        expect(['c1', 'c2']).toContain(n.owner);
        expect(n.replicas).toEqual([n.owner === 'c1' ? 'c2' : 'c1']);
      }
    }
    const counts = ring.groups[0]!.node_counts;
    expect(counts.c1! + counts.c2!).toBe(20);
    const one = await app.inject({ method: 'GET', url: '/v1/ring?node=n12' });
    expect((one.json() as { nodes: unknown[] }).nodes).toEqual([ring.nodes.find((n) => n.uuid === nodeUuids[12])]);
    const missing = await app.inject({ method: 'GET', url: '/v1/ring?node=ghost' });
    expect(missing.statusCode).toBe(404);
  });
  it('exports cluster metrics on /metrics: nodes per state, live conductors, owned nodes and pending take-overs', async () => {
    // Two of the available nodes become active, one already on its owner, one on no conductor yet.
    const ring = JSON.parse((await app.inject({ method: 'GET', url: '/v1/ring', headers: V })).body) as { nodes: Array<{ uuid: string; owner: string }> };
    const [onOwner, pending] = ring.nodes.filter((n) => n.owner === 'c1' || n.owner === 'c2');
    const owner = await store.db.selectFrom('conductors').select('id').where('hostname', '=', onOwner!.owner).executeTakeFirstOrThrow();
    await store.db.updateTable('nodes').set({ provision_state: 'active', conductor_affinity: owner.id }).where('uuid', '=', onOwner!.uuid).execute();
    await store.db.updateTable('nodes').set({ provision_state: 'active' }).where('uuid', '=', pending!.uuid).execute();
    try {
      const res = await app.inject({ method: 'GET', url: '/metrics' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toMatch(/^ironring_nodes\{provision_state="available"\} 28$/m);
      expect(res.body).toMatch(/^ironring_nodes\{provision_state="active"\} 2$/m);
      expect(res.body).toMatch(/^ironring_conductors_live\{conductor_group=""\} 2$/m);
      expect(res.body).toMatch(/^ironring_nodes_pending_takeover 1$/m);
      const owned = [...res.body.matchAll(/^ironring_nodes_owned\{conductor="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])] as const);
      expect(owned.map(([h]) => h).sort()).toEqual(['c1', 'c2', 'r1']);
      expect(owned.reduce((a, [, n]) => a + n, 0)).toBe(30);
      expect(res.body).toMatch(/^process_cpu_user_seconds_total /m);
    } finally {
      await store.db.updateTable('nodes').set({ provision_state: 'available', conductor_affinity: null }).where('uuid', 'in', [onOwner!.uuid, pending!.uuid]).execute();
    }
  });
});
