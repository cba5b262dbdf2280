/**
 * `/v1/portgroups`, a node's port groups and a port's `portgroup_uuid`, against Ironic's semantics
 * (ironic/api/controllers/v1/portgroup.py and port.py): every route, its refusals (400 naming the
 * field, 404 for an unknown group or below 1.23, 409 for a uuid, name or address in use, 400 for
 * deleting a group with ports), the port side (joining a group of the same node, one physical
 * network per group) and a node's delete taking its groups.
 */
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { LATEST, TIME_RE, UUID_RE, at, fault, useInProcessApi } from '../helpers/api-test.js';
import type { Json } from '../helpers/api-test.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

describe.each(engines)('port group API on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db, { IRONRING_API_MAX_LIMIT: '5' });
  const { send, get } = api;
  let node: string;
  beforeEach(async () => {
    node = (await made('/v1/nodes', { driver: 'fake-hardware', name: 'n1' })).uuid as string;
  });
  async function made(url: string, body: Json, headers: Record<string, string> = LATEST): Promise<Json> {
    const res = await send('POST', url, body, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Json;
  }
  const group = (body: Json = {}) => made('/v1/portgroups', { node_uuid: node, ...body });
  const links = (path: string) => [
    { href: `http://localhost:80/v1/${path}`, rel: 'self' },
    { href: `http://localhost:80/${path}`, rel: 'bookmark' },
  ];

  it('creates a port group (201, Location) and shows it by uuid and by name, with its links', async () => {
    const res = await send('POST', '/v1/portgroups', { node_uuid: node.toUpperCase(), name: 'bond0', address: '52-54-00-AA-BB-01', extra: { a: 1 }, properties: { miimon: '100' } });
    expect(res.statusCode, res.body).toBe(201);
    const g = res.json() as Json;
    const uuid = g.uuid as string;
    expect(uuid).toMatch(UUID_RE);
    expect(res.headers.location).toBe(`http://localhost:80/v1/portgroups/${uuid}`);
    expect(g).toEqual({
      uuid, name: 'bond0', address: '52:54:00:aa:bb:01', node_uuid: node, standalone_ports_supported: true, extra: { a: 1 }, internal_info: {},
      mode: 'active-backup', properties: { miimon: '100' }, created_at: expect.stringMatching(TIME_RE), updated_at: expect.stringMatching(TIME_RE),
      links: links(`portgroups/${uuid}`), ports: links(`portgroups/${uuid}/ports`),
    });
    expect((await get(`/v1/portgroups/${uuid}`)).json()).toEqual(g);
    expect((await get('/v1/portgroups/bond0')).json()).toEqual(g);
    expect((await get(`/v1/portgroups/${uuid}?fields=name,mode`)).json()).toEqual({ name: 'bond0', mode: 'active-backup', links: g.links });
    // Ironic's views show mode and properties at every version; naming them in fields needs 1.26 (406).
    expect((await get(`/v1/portgroups/${uuid}`, at('1.23'))).json()).toEqual(g);
    expect((await get(`/v1/portgroups/${uuid}?fields=mode`, at('1.25'))).statusCode).toBe(406);
    expect((await get('/v1/portgroups?fields=properties', at('1.25'))).statusCode).toBe(406);
    expect(await group()).toMatchObject({ name: null, address: null, mode: 'active-backup', extra: {}, properties: {} });
  });

  it('answers 404 below 1.23 (and for a node\'s groups below 1.24), and 404 for an unknown group', async () => {
    for (const [url, version] of [['/v1/portgroups', '1.22'], ['/v1/portgroups/detail', '1.22'], [`/v1/nodes/${node}/portgroups`, '1.23'], ['/v1/portgroups/x/ports', '1.23']] as const) {
      expect((await get(url, at(version))).statusCode, url).toBe(404);
    }
    expect((await send('POST', '/v1/portgroups', { node_uuid: node }, at('1.22'))).statusCode).toBe(404);
    expect((await get('/v1/portgroups', at('1.23'))).statusCode).toBe(200);
    const missing = await get(`/v1/portgroups/${randomUUID()}`);
    expect(missing.statusCode).toBe(404);
    expect(fault(missing.body)).toMatch(/^portgroup .* could not be found$/);
    expect((await get('/v1/portgroups/no-such-group')).statusCode).toBe(404);
    expect((await get('/v1/portgroups/bad%20name')).statusCode).toBe(400);
    // GET /v1 links the resource from 1.23.
    expect((await get('/v1', at('1.23'))).json()).toHaveProperty('portgroups');
    expect((await get('/v1', at('1.22'))).json()).not.toHaveProperty('portgroups');
  });

  it('refuses bad input with 400 naming the field, 409 for what is in use, 406 for a newer field, and stores nothing', async () => {
    const taken = await group({ name: 'bond0', address: '52:54:00:aa:bb:01' });
    const cases: Array<[unknown, number, string | RegExp, Record<string, string>?]> = [
      [{}, 400, "node_uuid: required, the uuid of the port group's node"],
      [{ node_uuid: 'n1' }, 400, 'node_uuid: expected the UUID of a node, got "n1"'],
      [{ node_uuid: randomUUID() }, 400, /^node_uuid: node .* could not be found$/],
      [{ node_uuid: node, address: 'zz' }, 400, 'address: "zz" is not a valid MAC address'],
      [{ node_uuid: node, name: 'a b' }, 400, /^name: "a b" is not a valid port group name/],
      [{ node_uuid: node, name: randomUUID() }, 400, /^name: .* is not a valid port group name/],
      [{ node_uuid: node, standalone_ports_supported: 'perhaps' }, 400, 'standalone_ports_supported: expected true or false'],
      [{ node_uuid: node, extra: [1] }, 400, 'extra: expected a JSON object'],
      [{ node_uuid: node, uuid: 'x' }, 400, 'uuid: expected a UUID, got "x"'],
      [{ node_uuid: node, internal_info: {} }, 400, /^internal_info: unknown or read-only field/],
      [{ node_uuid: node, mode: '802.3ad' }, 406, 'mode: needs API version 1.26 or later', at('1.25')],
      [{ node_uuid: node, name: 'bond0' }, 409, 'a portgroup with name "bond0" already exists'],
      [{ node_uuid: node, address: '52:54:00:AA:BB:01' }, 409, 'a portgroup with MAC address 52:54:00:aa:bb:01 already exists'],
      [{ node_uuid: node, uuid: taken.uuid }, 409, `a portgroup with uuid ${taken.uuid as string} already exists`],
    ];
    for (const [payload, status, message, headers] of cases) {
      const res = await send('POST', '/v1/portgroups', payload, headers);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      expect(fault(res.body), JSON.stringify(payload)).toMatch(message);
    }
    expect(((await get('/v1/portgroups')).json() as { portgroups: Json[] }).portgroups).toHaveLength(1);
  });

  it('lists groups (uuid, address, name, links), in detail, by node and address, in pages, sorted', async () => {
    const other = (await made('/v1/nodes', { driver: 'fake-hardware', name: 'n2' })).uuid as string;
    const groups: Json[] = [];
    for (const name of ['b', 'd', 'a', 'c', 'e']) groups.push(await group({ name, address: `52:54:00:00:00:0${groups.length}` }));
    const elsewhere = await made('/v1/portgroups', { node_uuid: other, name: 'f' });
    const first = (await get('/v1/portgroups')).json() as { portgroups: Json[]; next: string };
    expect(first.portgroups).toEqual(groups.map((g) => ({ uuid: g.uuid, address: g.address, name: g.name, links: g.links })));
    expect(first.next).toBe(`http://localhost:80/v1/portgroups?limit=5&marker=${groups[4]!.uuid as string}`);
    expect((await get(first.next.replace('http://localhost:80', ''))).json()).toEqual({ portgroups: [{ uuid: elsewhere.uuid, address: null, name: 'f', links: elsewhere.links }] });
    expect(((await get('/v1/portgroups/detail?limit=2')).json() as { portgroups: Json[] }).portgroups).toEqual(groups.slice(0, 2));
    const names = async (url: string) => ((await get(url)).json() as { portgroups: Json[] }).portgroups.map((g) => g.name);
    expect(await names('/v1/portgroups?node=n2')).toEqual(['f']);
    expect(await names(`/v1/portgroups?node=${node}&sort_key=name&sort_dir=desc`)).toEqual(['e', 'd', 'c', 'b', 'a']);
    expect(await names(`/v1/nodes/${other}/portgroups`)).toEqual(['f']);
    expect(((await get('/v1/nodes/n2/portgroups/detail')).json() as { portgroups: Json[] }).portgroups).toEqual([elsewhere]);
    expect(await names('/v1/portgroups?address=52-54-00-00-00-02')).toEqual(['a']);
    expect(((await get('/v1/portgroups?fields=mode&limit=1')).json() as { portgroups: Json[] }).portgroups).toEqual([{ mode: 'active-backup', links: groups[0]!.links }]);
    for (const [query, status, message] of [
      ['sort_key=extra', 400, /^sort_key: expected one of /],
      ['marker=nope', 400, /^marker: expected a portgroup uuid/],
      ['address=zz', 400, /is not a valid MAC address/],
      ['fields=colour', 400, /^fields: unknown portgroup field "colour"/],
      ['fields=uuid&detail=True', 400, /^fields and detail cannot be used together$/],
      ['node=nowhere', 404, /^node nowhere could not be found$/],
    ] as const) {
      const res = await get(`/v1/portgroups?${query}`);
      expect(res.statusCode, query).toBe(status);
      expect(fault(res.body), query).toMatch(message);
    }
  });

  it('patches a group (fields, keys inside extra and properties, its node) and refuses what Ironic refuses', async () => {
    const g = await group({ name: 'bond0', extra: { foo: 'bar', open: 'stack' } });
    const uuid = g.uuid as string;
    const patch = (ops: unknown, target = uuid, headers?: Record<string, string>) => send('PATCH', `/v1/portgroups/${target}`, ops, headers);
    const changed = await patch([
      { op: 'replace', path: '/address', value: '52:54:00:AA:BB:02' },
      { op: 'remove', path: '/extra/foo' },
      { op: 'add', path: '/properties/miimon', value: 100 },
      { op: 'replace', path: '/mode', value: '802.3ad' },
      { op: 'replace', path: '/standalone_ports_supported', value: false },
      { op: 'replace', path: '/name', value: 'bond1' },
    ]);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ uuid, name: 'bond1', address: '52:54:00:aa:bb:02', extra: { open: 'stack' }, properties: { miimon: 100 }, mode: '802.3ad', standalone_ports_supported: false, updated_at: expect.stringMatching(TIME_RE) });
    expect((await get('/v1/portgroups/bond1')).json()).toEqual(changed.json());
    expect((await patch([{ op: 'remove', path: '/extra' }, { op: 'remove', path: '/address' }], 'bond1')).json()).toMatchObject({ extra: {}, address: null });

    // Moving to a node in enroll (or in maintenance) is allowed; an available one is not (409).
    const enrolled = (await made('/v1/nodes', { driver: 'fake-hardware' })).uuid as string;
    expect((await patch([{ op: 'replace', path: '/node_uuid', value: enrolled }])).json()).toMatchObject({ node_uuid: enrolled });
    const available = (await made('/v1/nodes', { driver: 'fake-hardware' }, {})).uuid as string;
    const busy = await patch([{ op: 'replace', path: '/node_uuid', value: available }]);
    expect(busy.statusCode).toBe(409);
    expect(fault(busy.body)).toMatch(/unless the node is in a enroll, inspecting, inspect wait, manageable state or in maintenance mode/);

    await group({ name: 'taken' });
    const refused: Array<[unknown, number, string | RegExp, Record<string, string>?]> = [
      [[{ op: 'replace', path: '/uuid', value: randomUUID() }], 400, '/uuid: cannot be changed on a port group'],
      [[{ op: 'add', path: '/internal_info/x', value: 1 }], 400, /^\/internal_info\/x: cannot be changed on a port group$/],
      [[{ op: 'remove', path: '/mode' }], 400, "/mode: 'mode' is a mandatory attribute and can not be removed"],
      [[{ op: 'replace', path: '/address', value: 'zz' }], 400, '/address: "zz" is not a valid MAC address'],
      [[{ op: 'replace', path: '/node_uuid', value: 'n1' }], 400, '/node_uuid: expected the UUID of a node, got "n1"'],
      [[{ op: 'replace', path: '/node_uuid', value: randomUUID() }], 400, /^node_uuid: node .* could not be found$/],
      [[{ op: 'replace', path: '/name', value: 'taken' }], 409, 'a portgroup with name "taken" already exists'],
      [[{ op: 'add', path: '/properties/x', value: 1 }], 406, 'properties: needs API version 1.26 or later', at('1.25')],
      [[{ op: 'replace', path: '/mode', value: 'balance-rr' }], 406, 'mode: needs API version 1.26 or later', at('1.23')],
    ];
    for (const [ops, status, message, headers] of refused) {
      const res = await patch(ops, uuid, headers);
      expect(res.statusCode, JSON.stringify(ops)).toBe(status);
      expect(fault(res.body), JSON.stringify(ops)).toMatch(message);
    }
    // Ironic checks the first operation only (its tempest test patches properties second at 1.23).
    const second = await patch([{ op: 'add', path: '/extra/k', value: 'v' }, { op: 'add', path: '/properties/k', value: 'v' }], uuid, at('1.23'));
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toMatchObject({ extra: { k: 'v' }, properties: { k: 'v' } });
    expect((await patch([{ op: 'add', path: '/extra/a', value: 1 }], randomUUID())).statusCode).toBe(404);
  });

  it('puts ports in groups of their node, lists a group\'s ports, and keeps one physical network per group', async () => {
    const g = await group({ name: 'bond0' });
    const p1 = await made('/v1/ports', { node_uuid: node, address: '52:54:00:00:01:01', portgroup_uuid: g.uuid, physical_network: 'net1' });
    expect(p1).toMatchObject({ portgroup_uuid: g.uuid, physical_network: 'net1' });
    const p2 = await made('/v1/ports', { node_uuid: node, address: '52:54:00:00:01:02' });
    expect(p2).toMatchObject({ portgroup_uuid: null });
    // Older clients do not see the field, and may not set it.
    expect((await get(`/v1/ports/${p1.uuid as string}`, at('1.23'))).json()).not.toHaveProperty('portgroup_uuid');
    expect((await send('POST', '/v1/ports', { node_uuid: node, address: '52:54:00:00:01:09', portgroup_uuid: g.uuid }, at('1.23'))).statusCode).toBe(406);

    const addresses = async (url: string, headers?: Record<string, string>) => ((await get(url, headers)).json() as { ports: Json[] }).ports.map((p) => p.address);
    expect(await addresses(`/v1/portgroups/${g.uuid as string}/ports`)).toEqual(['52:54:00:00:01:01']);
    expect(((await get('/v1/portgroups/bond0/ports/detail')).json() as { ports: Json[] }).ports).toEqual([p1]);
    expect(await addresses('/v1/ports?portgroup=bond0')).toEqual(['52:54:00:00:01:01']);
    expect((await get('/v1/ports?portgroup=bond0', at('1.23'))).statusCode).toBe(404);
    expect((await get(`/v1/portgroups/${randomUUID()}/ports`)).statusCode).toBe(404);

    const patchPort = (uuid: unknown, ops: unknown) => send('PATCH', `/v1/ports/${uuid as string}`, ops);
    const otherNet = await patchPort(p2.uuid, [{ op: 'replace', path: '/portgroup_uuid', value: g.uuid }]);
    expect(otherNet.statusCode).toBe(409);
    expect(fault(otherNet.body)).toMatch(/^port with physical network null cannot become a member of port group .* which has ports in physical network net1$/);
    const joined = await patchPort(p2.uuid, [{ op: 'replace', path: '/portgroup_uuid', value: g.uuid }, { op: 'add', path: '/physical_network', value: 'net1' }]);
    expect(joined.statusCode, joined.body).toBe(200);
    expect(joined.json()).toMatchObject({ portgroup_uuid: g.uuid });
    expect((await patchPort(p2.uuid, [{ op: 'replace', path: '/physical_network', value: 'net2' }])).statusCode).toBe(409);
    expect((await send('POST', '/v1/ports', { node_uuid: node, address: '52:54:00:00:01:03', portgroup_uuid: g.uuid, physical_network: 'net2' })).statusCode).toBe(409);

    // A group of another node, an unknown or malformed group: 400 naming portgroup_uuid.
    const other = (await made('/v1/nodes', { driver: 'fake-hardware' })).uuid as string;
    const foreign = await made('/v1/portgroups', { node_uuid: other });
    for (const [value, message] of [
      [foreign.uuid, 'portgroup_uuid: port can not be added to a portgroup belonging to a different node'],
      [randomUUID(), /^portgroup_uuid: portgroup .* could not be found$/],
      ['bond0', /^portgroup_uuid: expected the UUID of a port group or null/],
    ] as const) {
      const created = await send('POST', '/v1/ports', { node_uuid: node, address: '52:54:00:00:01:04', portgroup_uuid: value });
      expect(created.statusCode, String(value)).toBe(400);
      expect(fault(created.body)).toMatch(message);
      const patched = await patchPort(p2.uuid, [{ op: 'replace', path: '/portgroup_uuid', value }]);
      expect(patched.statusCode, String(value)).toBe(400);
    }
    // A group whose ports may not be used alone takes no port with pxe_enabled true (409).
    const strict = await group({ standalone_ports_supported: false });
    expect((await send('POST', '/v1/ports', { node_uuid: node, address: '52:54:00:00:01:05', portgroup_uuid: strict.uuid, pxe_enabled: true })).statusCode).toBe(409);
    expect((await send('POST', '/v1/ports', { node_uuid: node, address: '52:54:00:00:01:05', portgroup_uuid: strict.uuid, pxe_enabled: false })).statusCode).toBe(201);

    // Leaving: remove (or null) clears the membership.
    expect((await patchPort(p2.uuid, [{ op: 'remove', path: '/portgroup_uuid' }])).json()).toMatchObject({ portgroup_uuid: null });
  });

  it('refuses to delete a group with ports (400, Ironic\'s PortgroupNotEmpty), deletes it once empty, and a node\'s delete takes its groups', async () => {
    const g = await group({ name: 'bond0' });
    const port = await made('/v1/ports', { node_uuid: node, address: '52:54:00:00:02:01', portgroup_uuid: g.uuid });
    const refused = await send('DELETE', '/v1/portgroups/bond0');
    expect(refused.statusCode).toBe(400);
    expect(fault(refused.body)).toBe(`cannot complete the requested action because portgroup ${g.uuid as string} contains ports`);
    // Nor may a group with ports move to another node.
    const enrolled = (await made('/v1/nodes', { driver: 'fake-hardware' })).uuid as string;
    const moved = await send('PATCH', '/v1/portgroups/bond0', [{ op: 'replace', path: '/node_uuid', value: enrolled }]);
    expect(moved.statusCode).toBe(400);
    expect(fault(moved.body)).toMatch(/contains ports$/);

    expect((await send('DELETE', `/v1/ports/${port.uuid as string}`)).statusCode).toBe(204);
    expect((await send('DELETE', '/v1/portgroups/bond0')).statusCode).toBe(204);
    expect((await get(`/v1/portgroups/${g.uuid as string}`)).statusCode).toBe(404);
    expect((await send('DELETE', `/v1/portgroups/${g.uuid as string}`)).statusCode).toBe(404);

    const kept = await group({ name: 'bond1' });
    await made('/v1/ports', { node_uuid: node, address: '52:54:00:00:02:02', portgroup_uuid: kept.uuid });
    const deleted = await send('DELETE', `/v1/nodes/${node}`);
    expect(deleted.statusCode, deleted.body).toBe(204);
    await Promise.allSettled([...api.ops().running]);
    expect((await get('/v1/portgroups')).json()).toEqual({ portgroups: [] });
    expect((await get('/v1/ports')).json()).toEqual({ ports: [] });
  });
});
