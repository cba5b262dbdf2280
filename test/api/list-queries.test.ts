/**
 * Every list filter and sort key of every list resource, in-process, on every test engine.
 *
 * Each filter is checked against rows that differ in the filtered field, with the exact answer
 * computed here from the seed: a filter the API ignored (or applied to the wrong column) changes the
 * answer and fails the test. Each sort key is checked in both directions against an order computed
 * here (NULLs lowest, ties broken by creation order in the same direction, as Ironic's
 * `(sort_key, id)` pagination does), whole and walked page by page through `next` links.
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
import { createDriverRegistry } from '../../src/drivers/index.js';
import { at, fault, LATEST } from '../helpers/api-test.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();

/** One seeded node, as this test knows it (independent of the product's own row types). */
interface Seed {
  uuid: string;
  name: string | null;
  driver: string;
  provision_state: string;
  power_state: string | null;
  conductor_group: string;
  resource_class: string | null;
  instance_uuid: string | null;
  maintenance: boolean;
  provision_updated_at: Date | null;
  target_provision_state: string | null;
  target_power_state: string | null;
  maintenance_reason: string | null;
  last_error: string | null;
  reservation: string | null;
  deploy_interface: string | null;
  power_interface: string | null;
  created_at: Date;
  updated_at: Date;
}

const COUNT = 12;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const STATES = ['available', 'active', 'manageable', 'enroll'];
/** Lower-case ASCII only: byte order and every collation agree on these. */
const SEEDS: Seed[] = Array.from({ length: COUNT }, (_, i) => ({
  uuid: randomUUID(),
  name: i % 4 === 0 ? null : `n${String((i * 5) % COUNT).padStart(2, '0')}`,
  driver: i % 3 === 0 ? 'ipmi' : 'fake-hardware',
  provision_state: STATES[i % 4]!,
  power_state: i % 2 === 1 ? 'power on' : i % 5 === 0 ? null : 'power off',
  conductor_group: ['', 'rack1', 'rack2'][i % 3]!,
  resource_class: i % 5 === 0 ? null : ['small', 'large'][i % 2]!,
  instance_uuid: i % 4 === 1 ? randomUUID() : null,
  maintenance: i % 3 === 1,
  provision_updated_at: i % 3 === 0 ? null : new Date(T0 + ((i * 5) % COUNT) * 60_000),
  target_provision_state: i % 4 === 2 ? 'available' : i % 4 === 3 ? 'manageable' : null,
  target_power_state: i % 6 === 1 ? 'power off' : null,
  maintenance_reason: i % 3 === 1 ? `r${String((i * 7) % COUNT).padStart(2, '0')}` : null,
  last_error: i % 5 === 2 ? `e${String(COUNT - i).padStart(2, '0')}` : null,
  reservation: i % 6 === 5 ? `host${i % 4}` : null,
  deploy_interface: ['fake', 'direct', null][i % 3]!,
  power_interface: i % 2 === 0 ? 'fake' : 'ipmitool',
  created_at: new Date(T0 + i * 1_000_000),
  updated_at: new Date(T0 + ((i * 7) % COUNT) * 1_000_000 + 500),
}));

/** The uuids of the seeds matching `pred`, in creation order (the default list order). */
function uuidsWhere(pred: (s: Seed) => boolean): string[] {
  return SEEDS.filter(pred).map((s) => s.uuid);
}

/** Every sortable key, with how to read it from a seed (Ironic refuses only JSON columns). */
const SORT_KEYS: Record<string, (s: Seed) => string | number | boolean | null> = {
  created_at: (s) => s.created_at.getTime(),
  updated_at: (s) => s.updated_at.getTime(),
  provision_updated_at: (s) => s.provision_updated_at?.getTime() ?? null,
  uuid: (s) => s.uuid,
  name: (s) => s.name,
  driver: (s) => s.driver,
  provision_state: (s) => s.provision_state,
  power_state: (s) => s.power_state,
  conductor_group: (s) => s.conductor_group,
  resource_class: (s) => s.resource_class,
  instance_uuid: (s) => s.instance_uuid,
  maintenance: (s) => s.maintenance,
  target_provision_state: (s) => s.target_provision_state,
  target_power_state: (s) => s.target_power_state,
  maintenance_reason: (s) => s.maintenance_reason,
  last_error: (s) => s.last_error,
  reservation: (s) => s.reservation,
  deploy_interface: (s) => s.deploy_interface,
  power_interface: (s) => s.power_interface,
  // Unset on every seed: all ties, so creation order (reversed for desc).
  boot_interface: () => null,
  console_interface: () => null,
  inspect_interface: () => null,
  management_interface: () => null,
  network_interface: () => null,
  rescue_interface: () => null,
  vendor_interface: () => null,
};

/** The expected order: by the key with NULL lowest, ties by creation order, all in `dir`. */
function expectedOrder(key: string, dir: 'asc' | 'desc'): string[] {
  const read = SORT_KEYS[key]!;
  const sign = dir === 'asc' ? 1 : -1;
  const rank = (v: string | number | boolean | null): [number, string | number] => (v === null || v === '' ? [0, 0] : [1, typeof v === 'boolean' ? Number(v) : v]);
  return SEEDS.map((s, i) => ({ s, i }))
    .sort((a, b) => {
      const [na, va] = rank(read(a.s));
      const [nb, vb] = rank(read(b.s));
      if (na !== nb) return sign * (na - nb);
      if (va < vb) return -sign;
      if (va > vb) return sign;
      return sign * (a.i - b.i);
    })
    .map(({ s }) => s.uuid);
}

describe.each(engines)('list filters and sort keys on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let app: FastifyInstance;
  /** Port uuids in creation order, with their node index and MAC. */
  const ports: Array<{ uuid: string; node: number; address: string; pxe: boolean }> = [];

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    app = buildApi({ store, config: loadConfig({ env: {} }).config, logger: createLogger({ level: 'silent', pretty: false }) });
    // Rows straight into the table: the API cannot set every listed column (state, times) at will.
    for (const s of SEEDS) await store.db.insertInto('nodes').values({ ...s }).execute();
    // Each registers the interfaces of its hardware types, as a conductor does: the driver list reads those.
    const interfaces = (types: string[]) => createDriverRegistry().registrations().filter((r) => types.includes(r.hardwareType));
    await registerConductor(store, { hostname: 'cond-b', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: interfaces(['fake-hardware', 'ipmi']) }, 60);
    await registerConductor(store, { hostname: 'cond-a', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: interfaces(['fake-hardware', 'ipmi']) }, 60);
    await registerConductor(store, { hostname: 'cond-r', group: 'rack1', drivers: ['fake-hardware'], interfaces: interfaces(['fake-hardware']) }, 60);
    // Ports on nodes 1, 2 and 3, created in an order that differs from their MAC order.
    const macs = ['52:54:00:00:00:05', '52:54:00:00:00:01', '52:54:00:00:00:04', '52:54:00:00:00:02', '52:54:00:00:00:06', '52:54:00:00:00:03'];
    for (const [k, address] of macs.entries()) {
      const node = 1 + (k % 3);
      const pxe = k % 2 === 0;
      const res = await app.inject({ method: 'POST', url: '/v1/ports', headers: LATEST, payload: { node_uuid: SEEDS[node]!.uuid, address, pxe_enabled: pxe } });
      expect(res.statusCode, res.body).toBe(201);
      ports.push({ uuid: (res.json() as { uuid: string }).uuid, node, address, pxe });
    }
    // Generous: the set-up does no timing, and a loaded machine may take long to migrate two databases.
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await target?.drop();
  });

  const get = (url: string, headers: Record<string, string> = LATEST) => app.inject({ method: 'GET', url, headers });

  /** Every item of a list, following `next` links; checks each page holds at most `limit`. */
  async function walk<T>(url: string, key: string, limit?: number, headers: Record<string, string> = LATEST): Promise<T[]> {
    const out: T[] = [];
    let next: string | undefined = url;
    for (let pages = 0; next !== undefined; pages++) {
      expect(pages, `too many pages for ${url}`).toBeLessThan(50);
      const res = await get(next.replace(/^https?:\/\/[^/]+/, ''), headers);
      expect(res.statusCode, `${next}: ${res.body}`).toBe(200);
      const body = res.json() as Record<string, unknown> & { next?: string };
      const items = body[key] as T[];
      if (limit !== undefined) expect(items.length).toBeLessThanOrEqual(limit);
      out.push(...items);
      next = body.next;
    }
    return out;
  }

  const nodeUuids = async (query: string, headers: Record<string, string> = LATEST) => {
    const res = await get(`/v1/nodes?${query}`, headers);
    expect(res.statusCode, `${query}: ${res.body}`).toBe(200);
    return (res.json() as { nodes: Array<{ uuid: string }> }).nodes.map((n) => n.uuid);
  };

  describe('GET /v1/nodes filters', () => {
    const all = SEEDS.map((s) => s.uuid);
    const cases: Array<[string, (s: Seed) => boolean]> = [
      ...STATES.map((v): [string, (s: Seed) => boolean] => [`provision_state=${encodeURIComponent(v)}`, (s) => s.provision_state === v]),
      ['provision_state=deploy%20failed', () => false],
      ['driver=ipmi', (s) => s.driver === 'ipmi'],
      ['driver=fake-hardware', (s) => s.driver === 'fake-hardware'],
      ['driver=redfish', () => false],
      ['resource_class=small', (s) => s.resource_class === 'small'],
      ['resource_class=large', (s) => s.resource_class === 'large'],
      ['conductor_group=rack1', (s) => s.conductor_group === 'rack1'],
      ['conductor_group=', (s) => s.conductor_group === ''],
      // Ironic lower-cases the group it filters by, as it does the group it stores.
      ['conductor_group=RACK2', (s) => s.conductor_group === 'rack2'],
      ['maintenance=true', (s) => s.maintenance],
      ['maintenance=False', (s) => !s.maintenance],
      ['associated=true', (s) => s.instance_uuid !== null],
      ['associated=false', (s) => s.instance_uuid === null],
      [`instance_uuid=${SEEDS[5]!.instance_uuid!}`, (s) => s === SEEDS[5]],
      [`instance_uuid=${randomUUID()}`, () => false],
      // Filters combine with AND.
      ['provision_state=available&driver=ipmi', (s) => s.provision_state === 'available' && s.driver === 'ipmi'],
      ['driver=fake-hardware&maintenance=true&resource_class=small', (s) => s.driver === 'fake-hardware' && s.maintenance && s.resource_class === 'small'],
      ['conductor_group=rack1&associated=true', (s) => s.conductor_group === 'rack1' && s.instance_uuid !== null],
      // No node has a fault (ironring records none), so a valid fault matches nothing.
      ['fault=power%20failure', () => false],
      ['fault=clean%20failure', () => false],
    ];

    it('seeds data in which every filter changes the answer', () => {
      // Guard for the test itself: a filter matching all or none of the rows could not catch one ignored.
      for (const [query, pred] of cases.filter(([q]) => !/redfish|deploy%20failed|fault=|instance_uuid=(?!.*=)/.test(q))) {
        const n = SEEDS.filter(pred).length;
        expect(n, query).toBeGreaterThan(0);
        expect(n, query).toBeLessThan(COUNT);
      }
    });

    it.each(cases)('%s lists exactly the matching nodes, on /v1/nodes and /v1/nodes/detail', async (query, pred) => {
      const expected = uuidsWhere(pred);
      expect(await nodeUuids(query)).toEqual(expected);
      const detail = await get(`/v1/nodes/detail?${query}`);
      expect(detail.statusCode, detail.body).toBe(200);
      expect((detail.json() as { nodes: Array<{ uuid: string }> }).nodes.map((n) => n.uuid)).toEqual(expected);
      // The filter travels in the next links: page by page, the same answer.
      expect((await walk<{ uuid: string }>(`/v1/nodes?${query}&limit=2`, 'nodes', 2)).map((n) => n.uuid)).toEqual(expected);
      if (expected.length < COUNT) expect(expected).not.toEqual(all);
    });

    it('filters by the conductor the ring gives each node (1.49), page by page', async () => {
      const shown = (await walk<{ uuid: string; conductor: string | null }>('/v1/nodes?fields=uuid,conductor', 'nodes')).map((n) => [n.uuid, n.conductor] as const);
      expect(shown.map(([u]) => u)).toEqual(SEEDS.map((s) => s.uuid));
      // rack2 has no conductor; the other groups' nodes spread over their live conductors.
      for (const [u, c] of shown) expect(c === null).toBe(SEEDS.find((s) => s.uuid === u)!.conductor_group === 'rack2');
      // cond-r alone serves rack1; how the '' group splits between cond-a and cond-b depends on the
      // random uuids (either may hold none: the filter must then answer nothing, not everything).
      expect(shown.filter(([, c]) => c === 'cond-r').map(([u]) => u)).toEqual(uuidsWhere((s) => s.conductor_group === 'rack1'));
      for (const [u, c] of shown) if (c !== null && c !== 'cond-r') expect(['cond-a', 'cond-b'], u).toContain(c);
      for (const host of ['cond-a', 'cond-b', 'cond-r']) {
        const expected = shown.filter(([, c]) => c === host).map(([u]) => u);
        expect(await nodeUuids(`conductor=${host}`)).toEqual(expected);
        expect((await walk<{ uuid: string }>(`/v1/nodes/detail?conductor=${host}&limit=1`, 'nodes', 1)).map((n) => n.uuid)).toEqual(expected);
        // With other filters too.
        expect(await nodeUuids(`conductor=${host}&maintenance=true`)).toEqual(shown.filter(([u, c]) => c === host && SEEDS.find((s) => s.uuid === u)!.maintenance).map(([u]) => u));
      }
      expect(await nodeUuids('conductor=nobody')).toEqual([]);
      // Sorted like any other list.
      const desc = await nodeUuids('conductor=cond-r&sort_key=updated_at&sort_dir=desc');
      expect(desc).toEqual(expectedOrder('updated_at', 'desc').filter((u) => shown.some(([su, c]) => su === u && c === 'cond-r')));
    });

    it('refuses an unknown provision state or fault with 400 naming it', async () => {
      const state = await get('/v1/nodes?provision_state=sleeping');
      expect(state.statusCode).toBe(400);
      expect(fault(state.body)).toMatch(/provision_state.*"sleeping"/);
      const overheated = await get('/v1/nodes?fault=overheated');
      expect(overheated.statusCode).toBe(400);
      expect(fault(overheated.body)).toMatch(/fault.*power failure.*"overheated"/);
      expect((await get('/v1/nodes?maintenance=perhaps')).statusCode).toBe(400);
      expect((await get('/v1/nodes?associated=perhaps')).statusCode).toBe(400);
    });

    it('refuses a filter older clients cannot know with 406, as Ironic does', async () => {
      const since: Array<[string, string, string]> = [
        ['provision_state=active', '1.8', '1.9'],
        ['driver=ipmi', '1.15', '1.16'],
        ['resource_class=small', '1.20', '1.21'],
        ['fault=power%20failure', '1.41', '1.42'],
        ['conductor_group=rack1', '1.45', '1.46'],
        ['conductor=cond-a', '1.48', '1.49'],
      ];
      for (const [query, before, from] of since) {
        const refused = await get(`/v1/nodes?${query}`, at(before));
        expect(refused.statusCode, `${query} at ${before}`).toBe(406);
        expect(fault(refused.body)).toContain(from);
        expect((await get(`/v1/nodes?${query}`, at(from))).statusCode, `${query} at ${from}`).toBe(200);
      }
      // Filters every version knows.
      expect(await nodeUuids('maintenance=true', {})).toEqual(uuidsWhere((s) => s.maintenance));
      expect(await nodeUuids('associated=true', {})).toEqual(uuidsWhere((s) => s.instance_uuid !== null));
    });
  });

  describe('GET /v1/nodes sorting, limits, markers and fields', () => {
    it.each(Object.keys(SORT_KEYS).flatMap((k) => [[k, 'asc'], [k, 'desc']] as const))('sort_key=%s sort_dir=%s orders exactly, whole and page by page', async (key, dir) => {
      const expected = expectedOrder(key, dir);
      expect(await nodeUuids(`sort_key=${key}&sort_dir=${dir}`)).toEqual(expected);
      expect((await walk<{ uuid: string }>(`/v1/nodes?sort_key=${key}&sort_dir=${dir}&limit=5`, 'nodes', 5)).map((n) => n.uuid)).toEqual(expected);
      // A marker resumes right after the node it names.
      const marker = expected[3]!;
      expect(await nodeUuids(`sort_key=${key}&sort_dir=${dir}&marker=${marker}&limit=4`)).toEqual(expected.slice(4, 8));
    });

    it('sorts by creation order by default, ascending by default, and takes sort_key=id', async () => {
      expect(await nodeUuids('')).toEqual(SEEDS.map((s) => s.uuid));
      expect(await nodeUuids('sort_dir=desc')).toEqual(SEEDS.map((s) => s.uuid).reverse());
      expect(await nodeUuids('sort_key=name')).toEqual(expectedOrder('name', 'asc'));
      expect(await nodeUuids('sort_key=id&sort_dir=desc')).toEqual(SEEDS.map((s) => s.uuid).reverse());
    });

    it('refuses JSON, unknown and not-yet-served sort keys and a bad direction with 400/406', async () => {
      for (const key of ['driver_info', 'properties', 'extra', 'instance_info', 'driver_internal_info', 'colour', 'description']) {
        const res = await get(`/v1/nodes?sort_key=${key}`);
        expect(res.statusCode, key).toBe(400);
        expect(fault(res.body)).toContain('sort_key');
      }
      const dir = await get('/v1/nodes?sort_dir=up');
      expect(dir.statusCode).toBe(400);
      expect(fault(dir.body)).toMatch(/sort_dir.*"up"/);
      // A field an older client cannot see is no sort key for it either (Ironic: 406).
      expect((await get('/v1/nodes?sort_key=resource_class', at('1.20'))).statusCode).toBe(406);
      expect((await get('/v1/nodes?sort_key=conductor_group', at('1.45'))).statusCode).toBe(406);
      expect(await nodeUuids('sort_key=resource_class', at('1.21'))).toEqual(expectedOrder('resource_class', 'asc'));
    });

    it('limits pages, links the next one only when full, and refuses bad limits and markers', async () => {
      const page = (await get('/v1/nodes?limit=5')).json() as { nodes: Array<{ uuid: string }>; next?: string };
      expect(page.nodes.map((n) => n.uuid)).toEqual(SEEDS.slice(0, 5).map((s) => s.uuid));
      expect(page.next).toMatch(new RegExp(`/v1/nodes\\?limit=5&marker=${SEEDS[4]!.uuid}$`));
      const whole = (await get(`/v1/nodes?limit=${COUNT + 1}`)).json() as { nodes: unknown[]; next?: string };
      expect(whole.nodes).toHaveLength(COUNT);
      expect(whole.next).toBeUndefined();
      // limit=0 means the maximum page, as in Ironic.
      expect(await nodeUuids('limit=0')).toEqual(SEEDS.map((s) => s.uuid));
      expect(await nodeUuids(`marker=${SEEDS[COUNT - 1]!.uuid}`)).toEqual([]);
      for (const bad of ['limit=-1', 'limit=two', 'marker=not-a-uuid', `marker=${randomUUID()}`]) {
        const res = await get(`/v1/nodes?${bad}`);
        expect(res.statusCode, bad).toBe(400);
        expect(fault(res.body), bad).toContain(bad.split('=')[0]!);
      }
    });

    it('returns just the fields asked for, on any filter', async () => {
      const res = await get('/v1/nodes?fields=uuid,driver,resource_class&driver=ipmi');
      const nodes = (res.json() as { nodes: Array<Record<string, unknown>> }).nodes;
      expect(nodes.map((n) => n.uuid)).toEqual(uuidsWhere((s) => s.driver === 'ipmi'));
      for (const n of nodes) {
        expect(Object.keys(n).sort()).toEqual(['driver', 'links', 'resource_class', 'uuid']);
        const seed = SEEDS.find((s) => s.uuid === n.uuid)!;
        expect([n.driver, n.resource_class]).toEqual([seed.driver, seed.resource_class]);
      }
      const list = (await get('/v1/nodes?provision_state=active')).json() as { nodes: Array<Record<string, unknown>> };
      expect(Object.keys(list.nodes[0]!).sort()).toEqual(['instance_uuid', 'links', 'maintenance', 'name', 'power_state', 'provision_state', 'uuid']);
      expect(list.nodes.every((n) => n.provision_state === 'active')).toBe(true);
      expect((await get('/v1/nodes?fields=uuid&detail=true')).statusCode).toBe(400);
      // A field of a later microversion: 406, as Ironic answers.
      expect((await get('/v1/nodes?fields=uuid,resource_class', at('1.20'))).statusCode).toBe(406);
    });
  });

  describe('GET /v1/ports', () => {
    const portUuids = async (url: string) => {
      const res = await get(url);
      expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
      return (res.json() as { ports: Array<{ uuid: string }> }).ports.map((p) => p.uuid);
    };
    const onNode = (node: number) => ports.filter((p) => p.node === node).map((p) => p.uuid);

    it('filters by node (uuid or name), node_uuid and the node path', async () => {
      for (const node of [1, 2, 3]) {
        const expected = onNode(node);
        expect(expected.length).toBeGreaterThan(0);
        expect(expected.length).toBeLessThan(ports.length);
        const seed = SEEDS[node]!;
        expect(await portUuids(`/v1/ports?node=${seed.uuid}`)).toEqual(expected);
        expect(await portUuids(`/v1/ports?node=${seed.name!}`)).toEqual(expected);
        expect(await portUuids(`/v1/ports?node_uuid=${seed.uuid}`)).toEqual(expected);
        expect(await portUuids(`/v1/ports/detail?node_uuid=${seed.uuid}`)).toEqual(expected);
        expect(await portUuids(`/v1/nodes/${seed.uuid}/ports`)).toEqual(expected);
      }
      expect(await portUuids(`/v1/ports?node=${SEEDS[4]!.uuid}`)).toEqual([]);
      expect((await get(`/v1/ports?node=${randomUUID()}`)).statusCode).toBe(404);
    });

    it('filters by address in any MAC spelling, and refuses a malformed one', async () => {
      const port = ports[2]!;
      for (const spelling of [port.address, port.address.toUpperCase(), port.address.replace(/:/g, '-'), port.address.replace(/:/g, '')]) {
        expect(await portUuids(`/v1/ports?address=${encodeURIComponent(spelling)}`)).toEqual([port.uuid]);
      }
      expect(await portUuids('/v1/ports?address=52:54:00:00:00:99')).toEqual([]);
      expect(await portUuids(`/v1/ports?address=${port.address}&node=${SEEDS[port.node]!.uuid}`)).toEqual([port.uuid]);
      expect(await portUuids(`/v1/ports?address=${port.address}&node=${SEEDS[port.node === 1 ? 2 : 1]!.uuid}`)).toEqual([]);
      const bad = await get('/v1/ports?address=not-a-mac');
      expect(bad.statusCode).toBe(400);
      expect(fault(bad.body)).toMatch(/address/);
    });

    it('sorts by every sortable port field both ways, whole and page by page', async () => {
      const created = ports.map((p) => p.uuid);
      const byAddress = [...ports].sort((a, b) => (a.address < b.address ? -1 : 1)).map((p) => p.uuid);
      const byUuid = [...created].sort();
      // false before true, ties by creation order.
      const byPxe = [...ports.filter((p) => !p.pxe), ...ports.filter((p) => p.pxe)].map((p) => p.uuid);
      const orders: Record<string, string[]> = { id: created, created_at: created, address: byAddress, uuid: byUuid, pxe_enabled: byPxe };
      expect(byAddress).not.toEqual(created);
      for (const [key, asc] of Object.entries(orders)) {
        expect(await portUuids(`/v1/ports?sort_key=${key}`), key).toEqual(asc);
        const desc = key === 'pxe_enabled' ? [...ports.filter((p) => p.pxe).reverse(), ...ports.filter((p) => !p.pxe).reverse()].map((p) => p.uuid) : [...asc].reverse();
        expect(await portUuids(`/v1/ports?sort_key=${key}&sort_dir=desc`), `${key} desc`).toEqual(desc);
        expect((await walk<{ uuid: string }>(`/v1/ports?sort_key=${key}&sort_dir=desc&limit=4`, 'ports', 4)).map((p) => p.uuid), `${key} pages`).toEqual(desc);
      }
      expect(await portUuids('/v1/ports?sort_dir=desc')).toEqual([...created].reverse());
      for (const key of ['extra', 'internal_info', 'local_link_connection', 'colour']) {
        const res = await get(`/v1/ports?sort_key=${key}`);
        expect(res.statusCode, key).toBe(400);
        expect(fault(res.body)).toContain('sort_key');
      }
      expect((await get('/v1/ports?sort_dir=sideways')).statusCode).toBe(400);
    });

    it('limits, resumes at a marker, and keeps filters in next links', async () => {
      const created = ports.map((p) => p.uuid);
      const first = (await get('/v1/ports?limit=4')).json() as { ports: Array<{ uuid: string }>; next: string };
      expect(first.ports.map((p) => p.uuid)).toEqual(created.slice(0, 4));
      expect(first.next).toContain(`marker=${created[3]!}`);
      expect(await portUuids(`/v1/ports?marker=${created[1]!}&limit=2`)).toEqual(created.slice(2, 4));
      const node1 = onNode(1);
      expect((await walk<{ uuid: string }>(`/v1/ports?node=${SEEDS[1]!.uuid}&limit=1`, 'ports', 1)).map((p) => p.uuid)).toEqual(node1);
      const fields = (await get('/v1/ports?fields=uuid,pxe_enabled&sort_key=address')).json() as { ports: Array<Record<string, unknown>> };
      expect(fields.ports.map((p) => Object.keys(p).sort())).toEqual(ports.map(() => ['links', 'pxe_enabled', 'uuid']));
      expect(fields.ports.map((p) => p.pxe_enabled)).toEqual([...ports].sort((a, b) => (a.address < b.address ? -1 : 1)).map((p) => p.pxe));
      expect((await get(`/v1/ports?marker=${randomUUID()}`)).statusCode).toBe(400);
      expect((await get('/v1/ports?limit=-2')).statusCode).toBe(400);
    });
  });

  describe('GET /v1/conductors', () => {
    const hostnames = async (query: string) => {
      const res = await get(`/v1/conductors?${query}`);
      expect(res.statusCode, `${query}: ${res.body}`).toBe(200);
      return (res.json() as { conductors: Array<{ hostname: string }> }).conductors.map((c) => c.hostname);
    };

    it('sorts by hostname by default, and by any sortable field either way', async () => {
      expect(await hostnames('')).toEqual(['cond-a', 'cond-b', 'cond-r']);
      expect(await hostnames('sort_dir=desc')).toEqual(['cond-r', 'cond-b', 'cond-a']);
      expect(await hostnames('sort_key=hostname&sort_dir=desc')).toEqual(['cond-r', 'cond-b', 'cond-a']);
      // Registered b, a, r: creation order differs from name order.
      expect(await hostnames('sort_key=created_at')).toEqual(['cond-b', 'cond-a', 'cond-r']);
      expect(await hostnames('sort_key=id&sort_dir=desc')).toEqual(['cond-r', 'cond-a', 'cond-b']);
      expect(await hostnames('sort_key=conductor_group&sort_dir=desc')).toEqual(['cond-r', 'cond-a', 'cond-b']);
      for (const key of ['alive', 'drivers', 'colour']) expect((await get(`/v1/conductors?sort_key=${key}`)).statusCode, key).toBe(400);
      expect((await get('/v1/conductors?sort_dir=up')).statusCode).toBe(400);
    });

    it('pages with limit and a hostname marker', async () => {
      const first = (await get('/v1/conductors?limit=2')).json() as { conductors: Array<{ hostname: string }>; next: string };
      expect(first.conductors.map((c) => c.hostname)).toEqual(['cond-a', 'cond-b']);
      expect(first.next).toMatch(/\/v1\/conductors\?limit=2&marker=cond-b$/);
      expect(await hostnames('limit=2&marker=cond-b')).toEqual(['cond-r']);
      expect((await walk<{ hostname: string }>('/v1/conductors?sort_dir=desc&limit=1', 'conductors', 1)).map((c) => c.hostname)).toEqual(['cond-r', 'cond-b', 'cond-a']);
      expect((await get('/v1/conductors?marker=nobody')).statusCode).toBe(400);
      expect((await get('/v1/conductors?limit=x')).statusCode).toBe(400);
      const fields = (await get('/v1/conductors?fields=hostname,drivers&limit=1')).json() as { conductors: Array<Record<string, unknown>> };
      expect(fields.conductors).toEqual([{ hostname: 'cond-a', drivers: ['fake-hardware', 'ipmi'], links: expect.any(Array) }]);
    });
  });

  describe('GET /v1/drivers', () => {
    const names = async (query: string, headers: Record<string, string> = LATEST) => {
      const res = await get(`/v1/drivers?${query}`, headers);
      expect(res.statusCode, `${query}: ${res.body}`).toBe(200);
      return (res.json() as { drivers: Array<Record<string, unknown>> }).drivers;
    };

    it('filters by type: every hardware type is dynamic, none classic; anything else is refused', async () => {
      const all = await names('');
      expect(all.length).toBeGreaterThan(1);
      expect((await names('type=dynamic')).map((d) => d.name)).toEqual(all.map((d) => d.name));
      expect(await names('type=classic')).toEqual([]);
      const bad = await get('/v1/drivers?type=hybrid');
      expect(bad.statusCode).toBe(400);
      expect(fault(bad.body)).toMatch(/type.*"hybrid"/);
      // Before 1.30 there were no types to filter by.
      expect((await get('/v1/drivers?type=dynamic', at('1.29'))).statusCode).toBe(406);
    });

    it('shows interfaces only with detail, and which live conductors serve each driver', async () => {
      const plain = await names('');
      expect(plain.every((d) => !('default_power_interface' in d))).toBe(true);
      const detail = await names('detail=true&type=dynamic');
      expect(detail.every((d) => 'default_power_interface' in d && 'enabled_power_interfaces' in d)).toBe(true);
      const hosts = Object.fromEntries(plain.map((d) => [d.name, d.hosts]));
      expect(hosts['fake-hardware']).toEqual(['cond-a', 'cond-b', 'cond-r']);
      expect(hosts.ipmi).toEqual(['cond-a', 'cond-b']);
      expect((await get('/v1/drivers?detail=true', at('1.29'))).statusCode).toBe(406);
    });
  });
});
