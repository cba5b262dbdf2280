/**
 * `GET /v1/nodes?conductor=`: ownership is no column, so the API sifts pages of candidates by the
 * ring; over more nodes than one scan reads (200), every page is still full, in order, without
 * repeats or gaps, in both directions — in-process, on every test engine.
 */
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
import { LATEST } from '../helpers/api-test.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const T0 = Date.parse('2026-01-01T00:00:00Z');

describe.each(engines)('the conductor filter over more nodes than one scan reads, on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let app: FastifyInstance;
  // More candidates than the API reads per scan (200), so a page is sifted from several scans.
  const uuids = Array.from({ length: 450 }, () => randomUUID());

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    app = buildApi({ store, config: loadConfig({ env: {} }).config, logger: createLogger({ level: 'silent', pretty: false }) });
    await store.db.insertInto('nodes').values(uuids.map((uuid, i) => ({ uuid, driver: 'fake-hardware', provision_state: 'available', created_at: new Date(T0 + i * 1000) }))).execute();
    await registerConductor(store, { hostname: 'cond-x', group: '', drivers: ['fake-hardware'] }, 60);
    await registerConductor(store, { hostname: 'cond-y', group: '', drivers: ['fake-hardware'] }, 60);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await target?.drop();
  });

  async function pages(url: string, limit: number): Promise<string[]> {
    const out: string[] = [];
    for (let next: string | undefined = url; next !== undefined;) {
      const res = await app.inject({ method: 'GET', url: next.replace(/^https?:\/\/[^/]+/, ''), headers: LATEST });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json() as { nodes: Array<{ uuid: string }>; next?: string };
      expect(body.nodes.length).toBeLessThanOrEqual(limit);
      out.push(...body.nodes.map((n) => n.uuid));
      next = body.next;
    }
    return out;
  }

  it('fills each page from as many scans as it takes, without repeats or gaps', async () => {
    const shown = await pages('/v1/nodes?fields=uuid,conductor&limit=1000', 1000);
    expect(shown).toEqual(uuids);
    const owners = ((await app.inject({ method: 'GET', url: '/v1/nodes?fields=uuid,conductor', headers: LATEST })).json() as { nodes: Array<{ uuid: string; conductor: string }> }).nodes;
    for (const host of ['cond-x', 'cond-y']) {
      const owned = owners.filter((n) => n.conductor === host).map((n) => n.uuid);
      // Both hold well over one scan's worth of candidates between them; neither holds all.
      expect(owned.length).toBeGreaterThan(150);
      expect(owned.length).toBeLessThan(300);
      const full = (await app.inject({ method: 'GET', url: `/v1/nodes?conductor=${host}&limit=1000`, headers: LATEST })).json() as { nodes: Array<{ uuid: string }> };
      expect(full.nodes.map((n) => n.uuid)).toEqual(owned);
      // 150 at a time: a scan of 200 candidates holds about 100 of one host's, so pages take two scans.
      const first = (await app.inject({ method: 'GET', url: `/v1/nodes?conductor=${host}&limit=150`, headers: LATEST })).json() as { nodes: Array<{ uuid: string }> };
      expect(first.nodes.map((n) => n.uuid)).toEqual(owned.slice(0, 150));
      expect(await pages(`/v1/nodes?conductor=${host}&limit=150`, 150)).toEqual(owned);
      expect(await pages(`/v1/nodes?conductor=${host}&limit=70`, 70)).toEqual(owned);
      expect(await pages(`/v1/nodes?conductor=${host}&limit=70&sort_dir=desc`, 70)).toEqual([...owned].reverse());
    }
  });
});
