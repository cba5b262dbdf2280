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
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };

function fault(body: string): string {
  return (JSON.parse(JSON.parse(body).error_message) as { faultstring: string }).faultstring;
}

describe.each(engines)('nodes and ports API on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let app: FastifyInstance;

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    const config = loadConfig({ env: { IRONRING_API_MAX_LIMIT: '5' } }).config;
    app = buildApi({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    // A live conductor that registered every built-in hardware type: the driver list shows what conductors serve.
    await registerConductor(store, { hostname: 'c1', group: 'no-nodes-here', drivers: ['fake-hardware', 'ipmi'], interfaces: createDriverRegistry().registrations() }, 60);
  });
  afterAll(async () => {
    await app.close();
    await store.close();
    await target.drop();
  });

  const post = (url: string, payload: unknown, headers: Record<string, string> = LATEST) => app.inject({ method: 'POST', url, payload: payload as object, headers });
  const get = (url: string, headers: Record<string, string> = LATEST) => app.inject({ method: 'GET', url, headers });

  it('creates a node in enroll (available before 1.11) and shows it by uuid and by name', async () => {
    const res = await post('/v1/nodes', { name: 'rack1-node1', driver: 'fake-hardware', driver_info: { ipmi_address: '10.0.0.1', ipmi_password: 'hunter2' }, resource_class: 'baremetal.small' });
    expect(res.statusCode, res.body).toBe(201);
    const node = res.json() as Record<string, unknown>;
    expect(node).toMatchObject({ name: 'rack1-node1', driver: 'fake-hardware', provision_state: 'enroll', maintenance: false, conductor_group: '', resource_class: 'baremetal.small' });
    expect(node.driver_info).toEqual({ ipmi_address: '10.0.0.1', ipmi_password: '******' });
    expect(node).toMatchObject({ power_interface: 'fake', management_interface: 'fake', deploy_interface: 'fake' });
    expect(res.headers.location).toMatch(new RegExp(`/v1/nodes/${node.uuid as string}$`));
    const byName = await get('/v1/nodes/rack1-node1');
    expect(byName.json()).toMatchObject({ uuid: node.uuid, name: 'rack1-node1' });
    // Before 1.11 a node starts available — which 1.1 shows as null, as Ironic does.
    const old = await post('/v1/nodes', { driver: 'fake-hardware' }, {});
    expect(old.json()).toMatchObject({ provision_state: null });
    expect((await get(`/v1/nodes/${(old.json() as { uuid: string }).uuid}`, { 'x-openstack-ironic-api-version': '1.2' })).json()).toMatchObject({ provision_state: 'available' });
    // The stored secret is intact; only the API view masks it.
    const stored = await store.db.selectFrom('nodes').select('driver_info').where('uuid', '=', node.uuid as string).executeTakeFirstOrThrow();
    expect(stored.driver_info.ipmi_password).toBe('hunter2');
  });

  it('refuses bad node input with 400 naming the field, duplicates with 409, and stores nothing', async () => {
    const before = (await store.db.selectFrom('nodes').select('uuid').execute()).length;
    const cases: Array<[unknown, number, RegExp]> = [
      [{ name: 'x' }, 400, /^driver: required/],
      [{ driver: 'fake-hardware', colour: 'red' }, 400, /^colour: unknown or read-only field/],
      [{ driver: 'fake-hardware', provision_state: 'active' }, 400, /^provision_state: unknown or read-only/],
      [{ driver: 'fake-hardware', name: 'has space' }, 400, /^name: "has space" is not a valid node name/],
      [{ driver: 'fake-hardware', driver_info: 'x' }, 400, /^driver_info: expected a JSON object/],
      [{ driver: 'fake-hardware', uuid: 'nope' }, 400, /^uuid: expected a UUID/],
      [{ driver: 'fake-hardware', name: 'rack1-node1' }, 409, /^a node named "rack1-node1" already exists$/],
      [[1, 2], 400, /^request body: expected a JSON object/],
      [{ driver: 'redfish' }, 400, /^driver "redfish" is not enabled; valid drivers: fake-hardware, ipmi$/],
      [{ driver: 'ipmi', power_interface: 'fake' }, 400, /^power_interface "fake" is not enabled for driver ipmi; valid power interfaces: ipmitool$/],
    ];
    for (const [payload, status, message] of cases) {
      const res = await post('/v1/nodes', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      expect(fault(res.body)).toMatch(message);
    }
    const bad = await app.inject({ method: 'POST', url: '/v1/nodes', payload: '{"driver": ', headers: { ...LATEST, 'content-type': 'application/json' } });
    expect(bad.statusCode).toBe(400);
    const huge = await app.inject({ method: 'POST', url: '/v1/nodes', payload: JSON.stringify({ driver: 'fake-hardware', extra: { blob: 'x'.repeat(1_100_000) } }), headers: { ...LATEST, 'content-type': 'application/json' } });
    expect(huge.statusCode).toBe(413);
    expect((await store.db.selectFrom('nodes').select('uuid').execute()).length).toBe(before);
    expect((await get('/v1/nodes/ghost')).statusCode).toBe(404);
    expect(fault((await get('/v1/nodes/ghost')).body)).toBe('node ghost could not be found');
  });

  it('lists with default fields, detail, fields, filters, sorting and next links', async () => {
    for (let i = 0; i < 7; i++) {
      await post('/v1/nodes', { name: `page-${i}`, driver: 'fake-hardware', conductor_group: i % 2 ? 'odd' : 'even', resource_class: i < 3 ? 'small' : 'large' });
    }
    const first = await get('/v1/nodes?conductor_group=odd');
    const body = first.json() as { nodes: Array<Record<string, unknown>>; next?: string };
    expect(body.nodes).toHaveLength(3);
    expect(Object.keys(body.nodes[0]!).sort()).toEqual(['instance_uuid', 'links', 'maintenance', 'name', 'power_state', 'provision_state', 'uuid']);
    expect(body.next).toBeUndefined();

    const all: string[] = [];
    let url: string | undefined = '/v1/nodes?sort_key=name&sort_dir=desc&fields=uuid,name&resource_class=large';
    while (url) {
      const page = (await get(url.replace(/^https?:\/\/[^/]+/, ''))).json() as { nodes: Array<{ name: string }>; next?: string };
      all.push(...page.nodes.map((n) => n.name));
      url = page.next;
    }
    expect(all).toEqual(['page-6', 'page-5', 'page-4', 'page-3']);

    const detail = (await get('/v1/nodes/detail?limit=2')).json() as { nodes: Array<Record<string, unknown>>; next: string };
    expect(detail.nodes).toHaveLength(2);
    expect(detail.nodes[0]).toHaveProperty('driver_info');
    expect(detail.next).toMatch(/\/v1\/nodes\/detail\?limit=2&marker=/);

    expect((await get('/v1/nodes?sort_key=driver_info')).statusCode).toBe(400);
    expect(fault((await get('/v1/nodes?fields=uuid,colour')).body)).toMatch(/^fields: unknown node field "colour"/);
    expect(fault((await get('/v1/nodes?maintenance=perhaps')).body)).toBe('maintenance: expected a boolean, got "perhaps"');
    expect((await get('/v1/nodes?limit=-1')).statusCode).toBe(400);
  });

  it('lists the hardware types with their interfaces', async () => {
    const list = (await get('/v1/drivers')).json() as { drivers: Array<{ name: string; hosts: string[]; type: string }> };
    expect(list.drivers.map((d) => [d.name, d.type])).toEqual([
      ['fake-hardware', 'dynamic'],
      ['ipmi', 'dynamic'],
    ]);
    const ipmi = (await get('/v1/drivers/ipmi')).json() as Record<string, unknown>;
    expect(ipmi).toMatchObject({ name: 'ipmi', default_power_interface: 'ipmitool', enabled_power_interfaces: ['ipmitool'] });
    expect((await get('/v1/drivers/redfish')).statusCode).toBe(404);
  });

  it('hides fields newer than the requested microversion', async () => {
    const node = (await get('/v1/nodes/rack1-node1', { 'x-openstack-ironic-api-version': '1.20' })).json() as Record<string, unknown>;
    expect(node).not.toHaveProperty('resource_class');
    expect(node).not.toHaveProperty('conductor_group');
    expect(node).toHaveProperty('network_interface');
    const latest = (await get('/v1/nodes/rack1-node1')).json() as Record<string, unknown>;
    expect(latest).toHaveProperty('conductor', null);
  });

  it('creates, lists, filters and deletes ports with MAC validation', async () => {
    const node = (await get('/v1/nodes/rack1-node1')).json() as { uuid: string };
    const res = await post('/v1/ports', { node_uuid: node.uuid, address: '52-54-00-AA-BB-01', pxe_enabled: true });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ address: '52:54:00:aa:bb:01', node_uuid: node.uuid, pxe_enabled: true });
    expect(fault((await post('/v1/ports', { node_uuid: node.uuid, address: '52:54:00:aa:bb:01' })).body)).toBe('a port with MAC address 52:54:00:aa:bb:01 already exists');
    expect((await post('/v1/ports', { node_uuid: node.uuid, address: '52:54:00:aa:bb:01' })).statusCode).toBe(409);
    expect(fault((await post('/v1/ports', { node_uuid: node.uuid, address: 'zz:54:00:aa:bb:01' })).body)).toBe('address: "zz:54:00:aa:bb:01" is not a valid MAC address');
    // Ironic's answers: an unknown node is 400 (the port is what was asked for), a name is not a uuid.
    expect((await post('/v1/ports', { node_uuid: randomUUID(), address: '52:54:00:aa:bb:02' })).statusCode).toBe(400);
    expect(fault((await post('/v1/ports', { node_uuid: 'rack1-node1', address: '52:54:00:aa:bb:02' })).body)).toBe('node_uuid: expected the UUID of a node, got "rack1-node1"');
    const byNode = (await get(`/v1/nodes/rack1-node1/ports`)).json() as { ports: Array<{ address: string }> };
    expect(byNode.ports.map((p) => p.address)).toEqual(['52:54:00:aa:bb:01']);
    const byAddress = (await get('/v1/ports?address=52:54:00:AA:BB:01&detail=True')).json() as { ports: Array<{ node_uuid: string }> };
    expect(byAddress.ports).toMatchObject([{ node_uuid: node.uuid }]);
    const portUuid = (res.json() as { uuid: string }).uuid;
    const patched = await app.inject({
      method: 'PATCH',
      url: `/v1/ports/${portUuid}`,
      headers: LATEST,
      payload: [
        { op: 'add', path: '/extra/switch', value: 'sw1' },
        { op: 'replace', path: '/pxe_enabled', value: false },
      ],
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ extra: { switch: 'sw1' }, pxe_enabled: false, address: '52:54:00:aa:bb:01' });
    const badPatch = await app.inject({ method: 'PATCH', url: `/v1/ports/${portUuid}`, headers: LATEST, payload: [{ op: 'replace', path: '/uuid', value: 'x' }] });
    expect(badPatch.statusCode).toBe(400);
    expect(fault(badPatch.body)).toBe('/uuid: cannot be changed on a port');
    // A port is addressed by uuid only, as Ironic's: a MAC address there is 400 (use ?address=).
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const byMac = await app.inject({ method, url: '/v1/ports/52:54:00:aa:bb:01', headers: LATEST, ...(method === 'PATCH' ? { payload: [{ op: 'add', path: '/extra/a', value: 1 }] } : {}) });
      expect(byMac.statusCode, method).toBe(400);
      expect(fault(byMac.body)).toMatch(/^port_uuid: expected a UUID, got "52:54:00:aa:bb:01"/);
    }
    const del = await app.inject({ method: 'DELETE', url: `/v1/ports/${portUuid}`, headers: LATEST });
    expect(del.statusCode).toBe(204);
    expect((await get('/v1/ports?node=rack1-node1')).json()).toEqual({ ports: [] });
  });

  it('refuses on create and patch a field newer than the request with 406, as Ironic, but takes its empty value', async () => {
    const at = (version: string) => ({ 'x-openstack-ironic-api-version': version });
    const before = (await store.db.selectFrom('nodes').select('uuid').execute()).length;
    const create = await post('/v1/nodes', { driver: 'fake-hardware', conductor_group: 'g1' }, at('1.45'));
    expect(create.statusCode).toBe(406);
    expect(fault(create.body)).toBe('conductor_group: needs API version 1.46 or later');
    expect((await post('/v1/nodes', { driver: 'fake-hardware', resource_class: 'x' }, at('1.20'))).statusCode).toBe(406);
    expect((await store.db.selectFrom('nodes').select('uuid').execute()).length).toBe(before);
    const empty = await post('/v1/nodes', { driver: 'fake-hardware', name: 'old-client', conductor_group: '' }, at('1.45'));
    expect(empty.statusCode, empty.body).toBe(201);
    // Refused at the edge, before the node's conductor is asked (none runs here).
    const patch = await app.inject({ method: 'PATCH', url: '/v1/nodes/old-client', headers: at('1.20'), payload: [{ op: 'replace', path: '/resource_class', value: 'x' }] });
    expect(patch.statusCode).toBe(406);
    expect(fault(patch.body)).toBe('/resource_class: needs API version 1.21 or later');

    const oldClient = (empty.json() as { uuid: string }).uuid;
    const port = await post('/v1/ports', { node_uuid: oldClient, address: '52:54:00:aa:bb:77', pxe_enabled: false }, at('1.18'));
    expect(port.statusCode).toBe(406);
    const made = await post('/v1/ports', { node_uuid: oldClient, address: '52:54:00:aa:bb:77' }, at('1.18'));
    expect(made.statusCode).toBe(201);
    const portUuid = (made.json() as { uuid: string }).uuid;
    const portPatch = await app.inject({ method: 'PATCH', url: `/v1/ports/${portUuid}`, headers: at('1.33'), payload: [{ op: 'add', path: '/physical_network', value: 'p1' }] });
    expect(portPatch.statusCode).toBe(406);
    const shown = (await get(`/v1/ports/${portUuid}`, at('1.33'))).json() as Record<string, unknown>;
    expect(shown).not.toHaveProperty('physical_network');
    expect(shown).toHaveProperty('pxe_enabled', true);
  });
});
