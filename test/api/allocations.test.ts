/**
 * `/v1/allocations` and `/v1/nodes/{node}/allocation` against Ironic's semantics (ironic/api/
 * controllers/v1/allocation.py, conductor/allocations.py): every route, its refusals (400 naming the
 * field, 404, 405 and 406 by microversion, 409), the allocating process as a conductor runs it
 * (`AllocationWorker`, driven pass by pass here), backfilling (1.58), and the node side: its
 * `allocation_uuid` (1.52), clearing its instance, deleting it in maintenance.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { conductorRings } from '../../src/cluster/conductor-rings.js';
import { createLogger } from '../../src/common/logger.js';
import { AllocationWorker } from '../../src/conductor/allocations.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { loadConfig } from '../../src/config/load.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const V = (v: string) => ({ 'x-openstack-ironic-api-version': v });
const LATEST = V('latest');
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

type Json = Record<string, unknown>;

function fault(body: string): string {
  return (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
}

describe.each(engines)('allocation API on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let worker: AllocationWorker;
  let stopRings: () => Promise<void>;

  beforeEach(async () => {
    const env = { IRONRING_API_MAX_LIMIT: '5', IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth', IRONRING_CONDUCTOR_NODE_LOCKED_RETRY_ATTEMPTS: '1', IRONRING_CONDUCTOR_NODE_LOCKED_RETRY_INTERVAL: '0' };
    const { config } = loadConfig({ env });
    const logger = createLogger({ level: 'silent', pretty: false });
    ({ app, ops } = await startInProcessApi(db.store, config, logger));
    // The in-process API's conductor is `aio`: its allocating process, driven by hand below.
    const view = conductorRings(db.store, config.conductor, { logger, pollIntervalMs: 0 });
    stopRings = () => view.stop();
    worker = new AllocationWorker({ store: db.store, hostname: 'aio', view, logger, conductorId: () => undefined, pollMs: 0, retry: { attempts: 1, intervalMs: 0 }, random: () => 0 });
  });
  afterEach(async () => {
    await worker.stop();
    await stopRings();
    await Promise.allSettled([...ops.running]);
    await app.close();
  });

  const send = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = LATEST) =>
    app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const get = (url: string, headers?: Record<string, string>) => send('GET', url, undefined, headers);
  const json = async (url: string, headers?: Record<string, string>) => {
    const res = await get(url, headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Json;
  };
  async function allocate(body: Json, headers = LATEST): Promise<Json> {
    const res = await send('POST', '/v1/allocations', body, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Json;
  }
  /** Runs the conductor's pass and waits for what it started. */
  async function process(): Promise<void> {
    await worker.pass();
    await worker.idle();
  }
  /** A node ready to be allocated: available, powered off, of `rc`. */
  async function freeNode(rc: string, extra: Json = {}): Promise<Json> {
    const res = await send('POST', '/v1/nodes', { driver: 'fake-hardware', resource_class: rc, ...extra });
    expect(res.statusCode, res.body).toBe(201);
    const node = res.json() as Json;
    await db.store.db.updateTable('nodes').set({ provision_state: 'available', power_state: 'power off' }).where('uuid', '=', node.uuid as string).execute();
    return node;
  }
  const setNode = (uuid: string, values: { provision_state?: string; maintenance?: boolean; instance_uuid?: string | null; reservation?: string | null; traits?: string }) =>
    db.store.db.updateTable('nodes').set(values).where('uuid', '=', uuid).execute();
  const links = (path: string) => [
    { href: `http://localhost:80/v1/${path}`, rel: 'self' },
    { href: `http://localhost:80/${path}`, rel: 'bookmark' },
  ];

  it('is not there before 1.52: 404 for GET, 405 for the other verbs, no link, no allocation_uuid', async () => {
    for (const url of ['/v1/allocations', `/v1/allocations/${randomUUID()}`]) expect((await get(url, V('1.51'))).statusCode, url).toBe(404);
    const node = await freeNode('small');
    expect((await get(`/v1/nodes/${node.uuid as string}/allocation`, V('1.51'))).statusCode).toBe(404);
    expect((await send('POST', '/v1/allocations', { resource_class: 'small' }, V('1.51'))).statusCode).toBe(405);
    expect((await send('DELETE', `/v1/allocations/${randomUUID()}`, undefined, V('1.51'))).statusCode).toBe(405);
    expect((await json('/v1', V('1.51'))).allocations).toBeUndefined();
    expect((await json('/v1', V('1.52'))).allocations).toEqual([{ href: 'http://localhost:80/v1/allocations/', rel: 'self' }, { href: 'http://localhost:80/allocations/', rel: 'bookmark' }]);
    expect(await json(`/v1/nodes/${node.uuid as string}`, V('1.51'))).not.toHaveProperty('allocation_uuid');
    expect(await json(`/v1/nodes/${node.uuid as string}`, V('1.52'))).toHaveProperty('allocation_uuid', null);
    // PATCH came with 1.57, backfilling with 1.58, owner with 1.60.
    const made = await allocate({ resource_class: 'small', name: 'a1' }, V('1.52'));
    expect(made).not.toHaveProperty('owner');
    const early = await send('PATCH', '/v1/allocations/a1', [{ op: 'replace', path: '/name', value: 'a2' }], V('1.56'));
    expect(early.statusCode).toBe(405);
    const backfill = await send('POST', '/v1/allocations', { node: node.uuid }, V('1.57'));
    expect([backfill.statusCode, fault(backfill.body)]).toEqual([400, expect.stringMatching(/^node: cannot set node when creating an allocation in this API version/)]);
    for (const [res, what] of [
      [await send('POST', '/v1/allocations', { resource_class: 'small', owner: 'p' }, V('1.59')), 'create'],
      [await get('/v1/allocations?owner=p', V('1.59')), 'filter'],
      [await get('/v1/allocations?fields=owner', V('1.59')), 'fields'],
    ] as const) expect(res.statusCode, what).toBe(406);
    expect(await json('/v1/allocations/a1', V('1.60'))).toHaveProperty('owner', null);
  });

  it('creates an allocation (201, Location, allocating) that the conductor fulfils with a matching node', async () => {
    const node = await freeNode('gold');
    await freeNode('silver');
    const res = await send('POST', '/v1/allocations', { resource_class: 'gold', name: 'web-1', extra: { team: 'a' }, traits: [], owner: null });
    expect(res.statusCode, res.body).toBe(201);
    const made = res.json() as Json;
    const uuid = made.uuid as string;
    expect(res.headers.location).toBe(`http://localhost:80/v1/allocations/${uuid}`);
    expect(made).toEqual({
      uuid: expect.stringMatching(UUID_RE), name: 'web-1', node_uuid: null, state: 'allocating', last_error: null, resource_class: 'gold',
      traits: [], candidate_nodes: [], extra: { team: 'a' }, owner: null, created_at: expect.stringMatching(TIME_RE), updated_at: expect.stringMatching(TIME_RE),
      links: links(`allocations/${uuid}`),
    });
    await process();
    const done = await json(`/v1/allocations/${uuid}`);
    expect(done).toMatchObject({ state: 'active', node_uuid: node.uuid, last_error: null });
    // The node's side, as Ironic's: the allocation's uuid as its instance, traits in instance_info.
    const shown = await json(`/v1/nodes/${node.uuid as string}`);
    expect(shown).toMatchObject({ allocation_uuid: uuid, instance_uuid: uuid, instance_info: { traits: [] } });
    expect(await json(`/v1/nodes/${node.uuid as string}/allocation`)).toEqual(done);
    expect(await json('/v1/allocations/web-1')).toEqual(done);
    expect(await json(`/v1/nodes/${node.uuid as string}/allocation?fields=state`)).toEqual({ state: 'active', links: links(`allocations/${uuid}`) });
    // The node list shows it too (a joined column, also when asked for by fields).
    const listed = (await json('/v1/nodes?fields=uuid,allocation_uuid')).nodes as Json[];
    expect(listed.find((n) => n.uuid === node.uuid)).toEqual({ uuid: node.uuid, allocation_uuid: uuid, links: links(`nodes/${node.uuid as string}`) });
  });

  it('matches traits and candidate nodes (names stored as uuids), prefers a node named like the allocation, and fails with a reason', async () => {
    const plain = await freeNode('rc');
    const meow = await freeNode('rc', { name: 'meow-node' });
    await setNode(meow.uuid as string, { traits: JSON.stringify(['CUSTOM_MEOW']) });
    const withTraits = await allocate({ resource_class: 'rc', traits: ['CUSTOM_MEOW'] });
    expect(withTraits.traits).toEqual(['CUSTOM_MEOW']);
    await process();
    expect(await json(`/v1/allocations/${withTraits.uuid as string}`)).toMatchObject({ state: 'active', node_uuid: meow.uuid });

    const named = await freeNode('rc', { name: 'twin' });
    const byName = await allocate({ resource_class: 'rc', candidate_nodes: ['twin', plain.uuid] });
    expect(byName.candidate_nodes).toEqual([named.uuid, plain.uuid]);
    await process();
    expect([named.uuid, plain.uuid]).toContain((await json(`/v1/allocations/${byName.uuid as string}`)).node_uuid);
    // Named like a candidate: that one first, whatever the shuffle (1.79's behaviour). The fixed
    // shuffle here (random 0) puts the second of five first: the fourth is taken only by its name.
    const five = [];
    for (const name of ['z-a', 'z-b', 'z-c', 'z-d', 'z-e']) five.push(await freeNode('rz', { name }));
    const plainPick = await allocate({ resource_class: 'rz' });
    await process();
    expect((await json(`/v1/allocations/${plainPick.uuid as string}`)).node_uuid).toBe(five[1]!.uuid);
    const twin = await allocate({ resource_class: 'rz', name: 'z-d' });
    await process();
    expect((await json(`/v1/allocations/${twin.uuid as string}`)).node_uuid).toBe(five[3]!.uuid);

    // The last free node of rc goes to the next allocation; then rc has none.
    const last = await allocate({ resource_class: 'rc' });
    await process();
    expect(await json(`/v1/allocations/${last.uuid as string}`)).toMatchObject({ state: 'active' });
    const failures: Array<[Json, RegExp]> = [
      [{ resource_class: 'rc' }, /no available nodes match the resource class rc/],
      [{ resource_class: 'other' }, /no available nodes match the resource class other/],
      [{ resource_class: 'rc', candidate_nodes: [plain.uuid] }, /none of the requested nodes are available and match the resource class rc/],
    ];
    await freeNode('rc2');
    failures.push([{ resource_class: 'rc2', traits: ['CUSTOM_NOPE'] }, /no suitable nodes have the requested traits CUSTOM_NOPE/]);
    for (const [body, why] of failures) {
      const made = await allocate(body);
      await process();
      const failed = await json(`/v1/allocations/${made.uuid as string}`);
      expect(failed, JSON.stringify(body)).toMatchObject({ state: 'error', node_uuid: null });
      expect(failed.last_error, JSON.stringify(body)).toMatch(why);
    }
  });

  it('skips nodes in maintenance, locked, without power state, with an instance, or not available', async () => {
    const nodes = await Promise.all([0, 1, 2, 3, 4].map(() => freeNode('x')));
    await setNode(nodes[0]!.uuid as string, { maintenance: true });
    await setNode(nodes[1]!.uuid as string, { reservation: 'someone' });
    await db.store.db.updateTable('nodes').set({ power_state: null }).where('uuid', '=', nodes[2]!.uuid as string).execute();
    await setNode(nodes[3]!.uuid as string, { instance_uuid: randomUUID() });
    await setNode(nodes[4]!.uuid as string, { provision_state: 'manageable' });
    const made = await allocate({ resource_class: 'x' });
    await process();
    // Only the locked node qualified, and it stayed locked through every attempt.
    expect((await json(`/v1/allocations/${made.uuid as string}`)).last_error).toMatch(/could not reserve any of 1 suitable nodes/);
  });

  it('refuses bad input with 400 naming the field, a name or uuid in use with 409, and stores nothing', async () => {
    const node = await freeNode('x', { name: 'n1' });
    const taken = await allocate({ resource_class: 'x', name: 'taken' });
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{}, 400, /^resource_class: required when not backfilling/],
      [{ resource_class: '' }, 400, /^resource_class: required/],
      [{ resource_class: 'x'.repeat(81) }, 400, 'resource_class: expected a string of at most 80 characters'],
      [{ resource_class: 'x', name: 'a b' }, 400, /^name: "a b" is not a valid allocation name/],
      [{ resource_class: 'x', name: randomUUID() }, 400, /^name: .* is not a valid allocation name/],
      [{ resource_class: 'x', traits: ['meow'] }, 400, /^traits: entry 0: invalid trait "meow"/],
      [{ resource_class: 'x', traits: 'CUSTOM_A' }, 400, /^traits: expected a list of traits/],
      [{ resource_class: 'x', candidate_nodes: ['nowhere'] }, 400, 'candidate_nodes: node nowhere could not be found'],
      [{ resource_class: 'x', candidate_nodes: [7] }, 400, /^candidate_nodes: 7 is not a node name or uuid/],
      [{ resource_class: 'x', extra: [] }, 400, 'extra: expected a JSON object'],
      [{ resource_class: 'x', extra: { big: 'x'.repeat(70000) } }, 400, /^extra: \d+ bytes of JSON/],
      [{ resource_class: 'x', uuid: 'nope' }, 400, 'uuid: expected a UUID, got "nope"'],
      [{ resource_class: 'x', state: 'active' }, 400, /^state: unknown or read-only field/],
      [{ resource_class: 'x', node_uuid: node.uuid }, 400, /^node_uuid: unknown or read-only field/],
      [{ resource_class: 'x', node: 'ghost' }, 400, 'node: node ghost could not be found'],
      [[1], 400, 'request body: expected a JSON object'],
      [{ resource_class: 'x', name: 'taken' }, 409, 'an allocation with name taken already exists'],
      [{ resource_class: 'x', uuid: (taken.uuid as string).toUpperCase() }, 409, `an allocation with uuid ${taken.uuid as string} already exists`],
    ];
    for (const [payload, status, message] of cases) {
      const res = await send('POST', '/v1/allocations', payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 100)).toBe(status);
      expect(fault(res.body), JSON.stringify(payload).slice(0, 100)).toMatch(message);
    }
    const raw = await app.inject({ method: 'POST', url: '/v1/allocations', headers: { ...LATEST, 'content-type': 'application/json' }, payload: '{"resource_class":"x","extra":{"__proto__":{"x":1}}}' });
    expect([raw.statusCode, fault(raw.body)]).toEqual([400, expect.stringMatching(/__proto__/)]);
    expect(((await json('/v1/allocations')).allocations as Json[]).map((a) => a.uuid)).toEqual([taken.uuid]);
  });

  it('lists allocations with filters, fields, pages and sorting, and refuses bad queries', async () => {
    const node = await freeNode('a');
    const made: Json[] = [];
    for (const [rc, name] of [['a', 'n0'], ['b', 'n1'], ['b', 'n2'], ['c', 'n3'], ['c', null], ['c', 'n5']] as const) {
      made.push(await allocate({ resource_class: rc, ...(name ? { name } : {}), owner: name === 'n3' ? 'p1' : null }));
    }
    await process();
    const uuids = (body: Json) => (body.allocations as Json[]).map((a) => a.uuid);
    const first = await json('/v1/allocations');
    expect(uuids(first)).toEqual(made.slice(0, 5).map((a) => a.uuid));
    expect(first.next).toBe(`http://localhost:80/v1/allocations?limit=5&marker=${made[4]!.uuid as string}`);
    expect(uuids(await json((first.next as string).replace('http://localhost:80', '')))).toEqual([made[5]!.uuid]);
    expect(uuids(await json('/v1/allocations?resource_class=b'))).toEqual([made[1]!.uuid, made[2]!.uuid]);
    expect(uuids(await json('/v1/allocations?state=active'))).toEqual([made[0]!.uuid]);
    expect(uuids(await json('/v1/allocations?state=error&limit=10'))).toEqual(made.slice(1).map((a) => a.uuid));
    expect(uuids(await json('/v1/allocations?state=allocating'))).toEqual([]);
    expect(uuids(await json(`/v1/allocations?node=${node.uuid as string}`))).toEqual([made[0]!.uuid]);
    expect(uuids(await json('/v1/allocations?owner=p1'))).toEqual([made[3]!.uuid]);
    expect((await json('/v1/allocations?fields=name&limit=1')).allocations).toEqual([{ name: 'n0', links: links(`allocations/${made[0]!.uuid as string}`) }]);
    expect(((await json('/v1/allocations?sort_key=name&sort_dir=desc&limit=3')).allocations as Json[]).map((a) => a.name)).toEqual(['n5', 'n3', 'n2']);
    for (const [query, status, message] of [
      ['state=done', 400, /^state: expected one of allocating, active, error/],
      ['sort_key=traits', 400, 'sort_key: traits is an invalid field for sorting'],
      ['sort_key=colour', 400, /^sort_key: expected one of id, /],
      ['sort_dir=up', 400, /^sort_dir: expected one of asc, desc/],
      ['node=ghost', 400, 'node: node ghost could not be found'],
      ['marker=nope', 400, /^marker: expected an allocation uuid/],
      [`marker=${randomUUID()}`, 400, /^marker: no allocation with uuid/],
      ['limit=-1', 400, /^limit: expected a non-negative integer/],
      ['fields=colour', 400, /^fields: unknown allocation field "colour"/],
    ] as const) {
      const res = await get(`/v1/allocations?${query}`);
      expect([res.statusCode, fault(res.body)], query).toEqual([status, expect.stringMatching(message)]);
    }
  });

  it('shows by uuid or name, changes name and extra by PATCH (1.57), and refuses the rest', async () => {
    const made = await allocate({ resource_class: 'x', name: 'one' });
    await allocate({ resource_class: 'x', name: 'two' });
    expect((await get('/v1/allocations/nothing-here')).statusCode).toBe(404);
    expect(fault((await get(`/v1/allocations/${randomUUID()}`)).body)).toMatch(/^allocation .* could not be found$/);
    expect((await get('/v1/allocations/a%20b')).statusCode).toBe(400);
    const patched = await send('PATCH', '/v1/allocations/one', [{ op: 'replace', path: '/name', value: 'uno' }, { op: 'add', path: '/extra/k', value: [1] }], V('1.57'));
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ uuid: made.uuid, name: 'uno', extra: { k: [1] } });
    expect((await send('PATCH', '/v1/allocations/uno', [{ op: 'remove', path: '/name' }])).json()).toMatchObject({ name: null });
    for (const [ops, status, message] of [
      [[{ op: 'replace', path: '/resource_class', value: 'y' }], 400, /^\/resource_class: cannot be changed on an allocation; only the following can be updated: name, extra$/],
      [[{ op: 'replace', path: '/owner', value: 'p' }], 400, /^\/owner: cannot be changed/],
      [[{ op: 'replace', path: '/name', value: 'two' }], 409, 'an allocation with name two already exists'],
      [[{ op: 'replace', path: '/name', value: 'a b' }], 400, /^\/name: "a b" is not a valid allocation name/],
      [[{ op: 'replace', path: '/extra', value: 'x' }], 400, '/extra: expected a JSON object'],
      [[{ op: 'move', path: '/name' }], 400, /^patch\[0\]\.op/],
    ] as const) {
      const res = await send('PATCH', `/v1/allocations/${made.uuid as string}`, ops);
      expect([res.statusCode, fault(res.body)], JSON.stringify(ops)).toEqual([status, expect.stringMatching(message)]);
    }
    expect((await send('PATCH', '/v1/allocations/owner-test', [{ op: 'replace', path: '/owner', value: 'p' }], V('1.59'))).statusCode).toBe(406);
  });

  it('deletes an allocation, freeing its node, under Ironic\'s state rules', async () => {
    const node = await freeNode('x', { name: 'held' });
    const made = await allocate({ resource_class: 'x', name: 'del-me' });
    await process();
    await setNode(node.uuid as string, { provision_state: 'active' });
    const refused = await send('DELETE', '/v1/allocations/del-me');
    expect([refused.statusCode, fault(refused.body)]).toEqual([409, expect.stringMatching(/because the node is active \(and maintenance mode is off\)$/)]);
    await setNode(node.uuid as string, { provision_state: 'available', reservation: 'c9' });
    const locked = await send('DELETE', `/v1/nodes/held/allocation`);
    expect([locked.statusCode, fault(locked.body)]).toEqual([409, `node ${node.uuid as string} is locked by conductor c9, please retry later`]);
    await setNode(node.uuid as string, { reservation: null, provision_state: 'active', maintenance: true });
    expect((await send('DELETE', '/v1/nodes/held/allocation')).statusCode).toBe(204);
    expect((await get(`/v1/allocations/${made.uuid as string}`)).statusCode).toBe(404);
    expect(await json('/v1/nodes/held')).toMatchObject({ allocation_uuid: null, instance_uuid: null });
    expect(fault((await get('/v1/nodes/held/allocation')).body)).toBe('allocation for node held was not found');
    expect((await send('DELETE', '/v1/nodes/held/allocation')).statusCode).toBe(404);
    expect((await send('DELETE', '/v1/nodes/nobody/allocation')).statusCode).toBe(404);
    // An allocation with no node (still allocating, or failed) just goes.
    const loose = await allocate({ resource_class: 'none' });
    expect((await send('DELETE', `/v1/allocations/${loose.uuid as string}`)).statusCode).toBe(204);
    expect((await send('DELETE', `/v1/allocations/${loose.uuid as string}`)).statusCode).toBe(404);
  });

  it('backfills a deployed node (1.58): active at once, resource class from the node, uuid from its instance', async () => {
    const node = await freeNode('deployed', { name: 'bf' });
    const instance = randomUUID();
    await setNode(node.uuid as string, { provision_state: 'active', instance_uuid: instance });
    const res = await send('POST', '/v1/allocations', { node: 'bf' }, V('1.58'));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ uuid: instance, state: 'active', node_uuid: node.uuid, resource_class: 'deployed', last_error: null });
    expect(await json('/v1/nodes/bf')).toMatchObject({ allocation_uuid: instance, instance_uuid: instance });
    // A second allocation for the same node, another instance, a node not deployed: refused, left in error.
    const sameUuid = await send('POST', '/v1/allocations', { node: 'bf' });
    expect([sameUuid.statusCode, fault(sameUuid.body)]).toEqual([409, `an allocation with uuid ${instance} already exists`]);
    const again = await send('POST', '/v1/allocations', { node: 'bf', name: 'again', uuid: randomUUID() });
    expect([again.statusCode, fault(again.body)]).toEqual([409, expect.stringMatching(/is associated with allocation/)]);
    expect(await json('/v1/allocations/again')).toMatchObject({ state: 'error', last_error: expect.stringMatching(/is associated with allocation/) });
    const other = await freeNode('deployed', { name: 'other' });
    await setNode(other.uuid as string, { provision_state: 'active', instance_uuid: randomUUID() });
    expect((await send('POST', '/v1/allocations', { node: 'other', uuid: randomUUID() })).statusCode).toBe(409);
    const idle = await freeNode('deployed', { name: 'idle' });
    const notActive = await send('POST', '/v1/allocations', { node: idle.uuid, resource_class: 'gold', name: 'na' });
    expect([notActive.statusCode, fault(notActive.body)]).toEqual([400, expect.stringMatching(/Node must be in the "active" state.*Resource class deployed does not match the requested resource class gold/)]);
    expect(await json('/v1/allocations/na')).toMatchObject({ state: 'error', node_uuid: null });
    expect(await json('/v1/nodes/idle')).toMatchObject({ allocation_uuid: null, instance_uuid: null });
  });

  it('removes a backfilled allocation when its node is undeployed, as Ironic\'s tear-down', async () => {
    const node = await freeNode('x', { name: 'undeploy-me' });
    await setNode(node.uuid as string, { provision_state: 'active' });
    const made = await allocate({ node: 'undeploy-me' });
    expect(made).toMatchObject({ state: 'active', node_uuid: node.uuid });
    const res = await send('PUT', '/v1/nodes/undeploy-me/states/provision', { target: 'deleted' });
    expect(res.statusCode, res.body).toBe(202);
    for (let i = 0; i < 100 && ops.running.size > 0; i += 1) await Promise.allSettled([...ops.running]);
    expect((await get(`/v1/allocations/${made.uuid as string}`)).statusCode).toBe(404);
    expect(await json('/v1/nodes/undeploy-me')).toMatchObject({ allocation_uuid: null, instance_uuid: null, provision_state: 'available' });
  });

  it('removes the allocation with the node\'s instance, and with the node deleted in maintenance', async () => {
    const node = await freeNode('x', { name: 'inst' });
    const made = await allocate({ resource_class: 'x' });
    await process();
    const cleared = await send('PATCH', '/v1/nodes/inst', [{ op: 'remove', path: '/instance_uuid' }]);
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect((await get(`/v1/allocations/${made.uuid as string}`)).statusCode).toBe(404);
    expect(await json('/v1/nodes/inst')).toMatchObject({ allocation_uuid: null, instance_uuid: null });

    const second = await allocate({ resource_class: 'x' });
    await process();
    await setNode(node.uuid as string, { provision_state: 'active' });
    const refused = await send('PATCH', '/v1/nodes/inst', [{ op: 'remove', path: '/instance_uuid' }]);
    expect([refused.statusCode, fault(refused.body)]).toEqual([409, expect.stringMatching(/with an allocation can not have instance_uuid removed/)]);
    // Ironic's rule: a node with an instance goes only in maintenance (and ironring's delete states).
    await setNode(node.uuid as string, { provision_state: 'available' });
    expect((await send('DELETE', '/v1/nodes/inst')).statusCode).toBe(409);
    await setNode(node.uuid as string, { maintenance: true });
    const deleted = await send('DELETE', '/v1/nodes/inst');
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect((await get(`/v1/allocations/${second.uuid as string}`)).statusCode).toBe(404);
  });
});
