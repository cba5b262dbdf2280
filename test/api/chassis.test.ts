/**
 * `/v1/chassis` and a node's `chassis_uuid`, against Ironic's semantics (ironic/api/controllers/v1/
 * chassis.py and node.py): every route, its refusals (400 naming the field, 404 for an unknown
 * chassis, 409 for a uuid in use, 400 for deleting a chassis with nodes), and the node side —
 * create and PATCH with a chassis, the `?chassis_uuid=` filter and `/v1/chassis/{uuid}/nodes`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LATEST, TIME_RE, UUID_RE, fault, useInProcessApi } from '../helpers/api-test.js';
import type { Json } from '../helpers/api-test.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

describe.each(engines)('chassis API on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db, { IRONRING_API_MAX_LIMIT: '5' });
  const { send, get } = api;
  async function created(body: Json): Promise<Json> {
    const res = await send('POST', '/v1/chassis', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Json;
  }
  async function node(body: Json): Promise<Json> {
    const res = await send('POST', '/v1/nodes', { driver: 'fake-hardware', ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Json;
  }
  const links = (path: string) => [
    { href: `http://localhost:80/v1/${path}`, rel: 'self' },
    { href: `http://localhost:80/${path}`, rel: 'bookmark' },
  ];

  it('creates a chassis (201, Location) and shows it with its links and the link to its nodes', async () => {
    const res = await send('POST', '/v1/chassis', { description: 'rack 1', extra: { row: 'a' } });
    expect(res.statusCode, res.body).toBe(201);
    const chassis = res.json() as Json;
    const uuid = chassis.uuid as string;
    expect(uuid).toMatch(UUID_RE);
    expect(res.headers.location).toBe(`http://localhost:80/v1/chassis/${uuid}`);
    expect(chassis).toEqual({
      uuid, description: 'rack 1', extra: { row: 'a' }, created_at: expect.stringMatching(TIME_RE), updated_at: expect.stringMatching(TIME_RE),
      links: links(`chassis/${uuid}`), nodes: links(`chassis/${uuid}/nodes`),
    });
    const shown = await get(`/v1/chassis/${uuid}`);
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toEqual(chassis);
    // Upper case finds it too; no header (1.1) as well: the resource is as old as the API.
    expect((await get(`/v1/chassis/${uuid.toUpperCase()}`, {})).json()).toEqual(chassis);
    // fields keeps links, as Ironic's views do.
    expect((await get(`/v1/chassis/${uuid}?fields=description`)).json()).toEqual({ description: 'rack 1', links: links(`chassis/${uuid}`) });
    expect((await get(`/v1/chassis/${uuid}?fields=uuid,nodes`)).json()).toEqual({ uuid, nodes: links(`chassis/${uuid}/nodes`), links: links(`chassis/${uuid}`) });
    const unknownField = await get(`/v1/chassis/${uuid}?fields=name`);
    expect(unknownField.statusCode).toBe(400);
    expect(fault(unknownField.body)).toMatch(/^fields: unknown chassis field "name"; valid fields: uuid, description, extra, created_at, updated_at, links, nodes$/);
  });

  it('takes a given uuid (stored in lower case), a unicode description, and nulls for description and extra', async () => {
    const uuid = randomUUID();
    const given = await created({ uuid: uuid.toUpperCase(), description: 'В Україні ♡ OpenStack!' });
    expect(given).toMatchObject({ uuid, description: 'В Україні ♡ OpenStack!', extra: {} });
    expect(await created({ uuid: null, description: null, extra: null })).toMatchObject({ uuid: expect.stringMatching(UUID_RE), description: null, extra: {} });
    expect(await created({})).toMatchObject({ description: null, extra: {} });
    expect(await created({ description: 'x'.repeat(255) })).toMatchObject({ description: 'x'.repeat(255) });
  });

  it('refuses bad chassis input with 400 naming the field, a uuid in use with 409, and stores nothing', async () => {
    const taken = (await created({ description: 'first' })).uuid as string;
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{ description: 'x'.repeat(256) }, 400, 'description: expected a string of at most 255 characters, or null'],
      [{ description: 7 }, 400, 'description: expected a string of at most 255 characters, or null'],
      [{ extra: 'x' }, 400, 'extra: expected a JSON object'],
      [{ extra: [1] }, 400, 'extra: expected a JSON object'],
      [{ uuid: 'nope' }, 400, 'uuid: expected a UUID, got "nope"'],
      [{ name: 'c1' }, 400, /^name: unknown or read-only field for a new chassis/],
      [{ nodes: [] }, 400, /^nodes: unknown or read-only field/],
      [{ created_at: '2020-01-01T00:00:00+00:00' }, 400, /^created_at: unknown or read-only field/],
      [[1], 400, 'request body: expected a JSON object'],
      [{ uuid: taken.toUpperCase() }, 409, `a chassis with uuid ${taken} already exists`],
    ];
    for (const [payload, status, message] of cases) {
      const res = await send('POST', '/v1/chassis', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      expect(fault(res.body), JSON.stringify(payload)).toMatch(message);
    }
    // Hostile documents are refused before any route reads them, as for every resource.
    for (const [raw, message] of [
      ['{"description":"a\\u0000b"}', /NUL/],
      ['{"extra":{"__proto__":{"x":1}}}', /__proto__/],
    ] as const) {
      const res = await api.app().inject({ method: 'POST', url: '/v1/chassis', headers: { ...LATEST, 'content-type': 'application/json' }, payload: raw });
      expect(res.statusCode, raw).toBe(400);
      expect(fault(res.body), raw).toMatch(message);
    }
    expect(((await get('/v1/chassis')).json() as { chassis: Json[] }).chassis).toHaveLength(1);
  });

  it('lists chassis (uuid, description, links), in detail, in pages with a next link, sorted', async () => {
    const made: Json[] = [];
    for (const description of ['b', 'd', null, 'a', 'c', 'e']) made.push(await created({ description, extra: { n: made.length } }));
    // max_limit is 5 here: a full page carries the link to the next one.
    const first = (await get('/v1/chassis')).json() as { chassis: Json[]; next: string };
    expect(first.chassis).toEqual(made.slice(0, 5).map((c) => ({ uuid: c.uuid, description: c.description, links: c.links })));
    expect(first.next).toBe(`http://localhost:80/v1/chassis?limit=5&marker=${made[4]!.uuid as string}`);
    const second = (await get(first.next.replace('http://localhost:80', ''))).json() as { chassis: Json[]; next?: string };
    expect(second).toEqual({ chassis: [{ uuid: made[5]!.uuid, description: 'e', links: made[5]!.links }] });

    const detail = (await get('/v1/chassis/detail?limit=2')).json() as { chassis: Json[]; next: string };
    expect(detail.chassis).toEqual(made.slice(0, 2));
    expect(detail.next).toBe(`http://localhost:80/v1/chassis/detail?limit=2&marker=${made[1]!.uuid as string}`);
    expect(((await get('/v1/chassis?detail=True&limit=1')).json() as { chassis: Json[] }).chassis).toEqual(made.slice(0, 1));
    expect(((await get('/v1/chassis?fields=extra&limit=2')).json() as { chassis: Json[] }).chassis).toEqual(made.slice(0, 2).map((c) => ({ extra: c.extra, links: c.links })));

    // No description sorts lowest; ties and pages follow creation order.
    const byDescription = (await get('/v1/chassis?sort_key=description&sort_dir=desc&limit=3')).json() as { chassis: Json[]; next: string };
    expect(byDescription.chassis.map((c) => c.description)).toEqual(['e', 'd', 'c']);
    const rest = (await get(byDescription.next.replace('http://localhost:80', ''))).json() as { chassis: Json[] };
    expect(rest.chassis.map((c) => c.description)).toEqual(['b', 'a', null]);
    const byUuid = ((await get('/v1/chassis?sort_key=uuid')).json() as { chassis: Json[] }).chassis.map((c) => c.uuid as string);
    expect(byUuid).toEqual([...made.map((c) => c.uuid as string)].sort().slice(0, 5));
    // Walking the pages by a timestamp gives every chassis once (PostgreSQL keeps microseconds).
    for (const dir of ['asc', 'desc']) {
      const walked: unknown[] = [];
      let url: string | undefined = `/v1/chassis?sort_key=created_at&sort_dir=${dir}&limit=2`;
      while (url) {
        const page = (await get(url)).json() as { chassis: Json[]; next?: string };
        walked.push(...page.chassis.map((c) => c.uuid));
        url = page.next?.replace('http://localhost:80', '');
      }
      expect(walked, dir).toEqual(dir === 'asc' ? made.map((c) => c.uuid) : made.map((c) => c.uuid).reverse());
    }

    for (const [query, message] of [
      ['sort_key=extra', /^sort_key: expected one of id, uuid, description, created_at, updated_at, got "extra"$/],
      ['sort_dir=up', /^sort_dir: expected one of asc, desc/],
      ['limit=-1', /^limit: expected a non-negative integer/],
      ['marker=nope', /^marker: expected a chassis uuid, got "nope"$/],
      [`marker=${randomUUID()}`, /^marker: no chassis with uuid /],
      ['fields=uuid&detail=True', /^fields and detail cannot be used together$/],
    ] as const) {
      const res = await get(`/v1/chassis?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(fault(res.body), query).toMatch(message);
    }
  });

  it('patches description and extra (add, replace, remove, keys inside), and refuses other paths', async () => {
    const chassis = await created({ description: 'rack 1', extra: { row: 'a', pdu: 1 } });
    const uuid = chassis.uuid as string;
    const patch = (ops: unknown, target = uuid) => send('PATCH', `/v1/chassis/${target}`, ops);

    const changed = await patch([
      { op: 'replace', path: '/description', value: 'rack 1, row a' },
      { op: 'add', path: '/extra/pdu', value: 2 },
      { op: 'add', path: '/extra/power/feed', value: 'B' },
      { op: 'remove', path: '/extra/row' },
    ]);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ uuid, description: 'rack 1, row a', extra: { pdu: 2, power: { feed: 'B' } }, links: links(`chassis/${uuid}`) });
    expect((changed.json() as Json).updated_at).toMatch(TIME_RE);
    expect((await get(`/v1/chassis/${uuid}`)).json()).toEqual(changed.json());
    expect((await patch([{ op: 'remove', path: '/description' }, { op: 'replace', path: '/extra', value: null }])).json()).toMatchObject({ description: null, extra: {} });

    const refused: Array<[unknown, number, string | RegExp]> = [
      [[{ op: 'replace', path: '/uuid', value: randomUUID() }], 400, '/uuid: cannot be changed on a chassis'],
      [[{ op: 'add', path: '/nodes', value: [] }], 400, '/nodes: cannot be changed on a chassis'],
      [[{ op: 'replace', path: '/created_at', value: 'x' }], 400, '/created_at: cannot be changed on a chassis'],
      [[{ op: 'add', path: '/colour', value: 'red' }], 400, '/colour: cannot be changed on a chassis'],
      [[{ op: 'replace', path: '/description', value: 'x'.repeat(256) }], 400, '/description: expected a string of at most 255 characters, or null'],
      [[{ op: 'replace', path: '/extra', value: 'x' }], 400, '/extra: expected a JSON object'],
      [[{ op: 'remove', path: '/extra/missing' }], 400, /missing/],
      [[{ op: 'move', path: '/description', from: '/extra' }], 400, /^patch\[0\]\.op: "move" is not supported/],
      [{ op: 'replace', path: '/description', value: 'x' }, 400, /JSON Patch/],
    ];
    for (const [ops, status, message] of refused) {
      const res = await patch(ops);
      expect(res.statusCode, JSON.stringify(ops)).toBe(status);
      expect(fault(res.body), JSON.stringify(ops)).toMatch(message);
    }
    expect((await get(`/v1/chassis/${uuid}`)).json()).toMatchObject({ description: null, extra: {} });

    const unknown = randomUUID();
    const missing = await patch([{ op: 'replace', path: '/description', value: 'x' }], unknown);
    expect(missing.statusCode).toBe(404);
    expect(fault(missing.body)).toBe(`chassis ${unknown} could not be found`);
    const notUuid = await patch([{ op: 'replace', path: '/description', value: 'x' }], 'rack1');
    expect(notUuid.statusCode).toBe(400);
    expect(fault(notUuid.body)).toBe('chassis_uuid: expected a UUID, got "rack1"');
  });

  it('answers 404 for an unknown chassis and 400 for a path that is no UUID, on every chassis route', async () => {
    const unknown = randomUUID();
    for (const url of [`/v1/chassis/${unknown}`, `/v1/chassis/${unknown}/nodes`, `/v1/chassis/${unknown}/nodes/detail`]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(fault(res.body), url).toBe(`chassis ${unknown} could not be found`);
    }
    const gone = await send('DELETE', `/v1/chassis/${unknown}`);
    expect(gone.statusCode).toBe(404);
    for (const url of ['/v1/chassis/rack1', '/v1/chassis/rack1/nodes']) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(fault(res.body), url).toBe('chassis_uuid: expected a UUID, got "rack1"');
    }
    expect((await send('DELETE', '/v1/chassis/rack1')).statusCode).toBe(400);
  });

  it('deletes an empty chassis (204), and refuses one with nodes (400) until they leave it', async () => {
    const empty = (await created({ description: 'empty' })).uuid as string;
    const res = await send('DELETE', `/v1/chassis/${empty}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await get(`/v1/chassis/${empty}`)).statusCode).toBe(404);

    const full = (await created({ description: 'full' })).uuid as string;
    const member = await node({ name: 'member', chassis_uuid: full });
    const refused = await send('DELETE', `/v1/chassis/${full}`);
    expect(refused.statusCode, refused.body).toBe(400);
    expect(fault(refused.body)).toBe(`cannot complete the requested action because chassis ${full} contains nodes`);
    expect((await get(`/v1/chassis/${full}`)).statusCode).toBe(200);
    // The database says so too, whoever asks: the reference is a foreign key on both engines.
    await expect(db.store.db.deleteFrom('chassis').where('uuid', '=', full).execute()).rejects.toThrow();

    expect((await send('PATCH', `/v1/nodes/${member.uuid as string}`, [{ op: 'remove', path: '/chassis_uuid' }])).statusCode).toBe(200);
    expect((await send('DELETE', `/v1/chassis/${full}`)).statusCode).toBe(204);
  });

  it('creates nodes in a chassis (or none), and refuses a chassis_uuid that names none with 400', async () => {
    const chassis = (await created({ description: 'rack' })).uuid as string;
    const inside = await node({ name: 'in', chassis_uuid: chassis.toUpperCase() });
    expect(inside.chassis_uuid).toBe(chassis);
    expect((await node({ name: 'out', chassis_uuid: null })).chassis_uuid).toBeNull();
    expect((await node({ name: 'plain' })).chassis_uuid).toBeNull();
    expect((await get('/v1/nodes/in')).json()).toMatchObject({ chassis_uuid: chassis });

    const unknown = randomUUID();
    const cases: Array<[unknown, string]> = [
      [unknown, `chassis_uuid: chassis ${unknown} could not be found`],
      ['rack1', 'chassis_uuid: expected the UUID of a chassis or null, got "rack1"'],
      [7, 'chassis_uuid: expected the UUID of a chassis or null, got 7'],
    ];
    for (const [value, message] of cases) {
      const res = await send('POST', '/v1/nodes', { driver: 'fake-hardware', name: 'never', chassis_uuid: value });
      expect(res.statusCode, String(value)).toBe(400);
      expect(fault(res.body)).toBe(message);
    }
    expect((await get('/v1/nodes/never')).statusCode).toBe(404);
  });

  it('moves a node between chassis with PATCH, refusing an unknown chassis, and clearing one only from 1.25', async () => {
    const [a, b] = [(await created({ description: 'a' })).uuid as string, (await created({ description: 'b' })).uuid as string];
    const n = (await node({ name: 'mover' })).uuid as string;
    const patch = (ops: unknown, headers: Record<string, string> = LATEST) => api.app().inject({ method: 'PATCH', url: `/v1/nodes/${n}`, headers, payload: ops as object });

    // At 1.1 a chassis can be set and replaced, as in Ironic.
    const added = await patch([{ op: 'add', path: '/chassis_uuid', value: a }], {});
    expect(added.statusCode, added.body).toBe(200);
    expect(added.json()).toMatchObject({ chassis_uuid: a });
    expect((await patch([{ op: 'replace', path: '/chassis_uuid', value: b.toUpperCase() }])).json()).toMatchObject({ chassis_uuid: b });

    const unknown = randomUUID();
    const refused = await patch([{ op: 'replace', path: '/chassis_uuid', value: unknown }]);
    expect(refused.statusCode, refused.body).toBe(400);
    expect(fault(refused.body)).toBe(`chassis_uuid: chassis ${unknown} could not be found`);
    const malformed = await patch([{ op: 'replace', path: '/chassis_uuid', value: 'rack-b' }]);
    expect(malformed.statusCode).toBe(400);
    expect(fault(malformed.body)).toBe('/chassis_uuid: expected the UUID of a chassis or null, got "rack-b"');

    for (const ops of [[{ op: 'remove', path: '/chassis_uuid' }], [{ op: 'replace', path: '/chassis_uuid', value: null }]]) {
      const old = await patch(ops, { 'x-openstack-ironic-api-version': '1.24' });
      expect(old.statusCode, old.body).toBe(406);
      expect(fault(old.body)).toBe('/chassis_uuid: clearing it needs API version 1.25 or later');
    }
    expect((await get(`/v1/nodes/${n}`)).json()).toMatchObject({ chassis_uuid: b });
    const cleared = await patch([{ op: 'remove', path: '/chassis_uuid' }], { 'x-openstack-ironic-api-version': '1.25' });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(cleared.json()).toMatchObject({ chassis_uuid: null });
    // Nothing to clear: any version may "remove" it.
    expect((await patch([{ op: 'remove', path: '/chassis_uuid' }], {})).statusCode).toBe(200);
  });

  it('shows chassis_uuid in node views and lists, filters by ?chassis_uuid= and lists /v1/chassis/{uuid}/nodes', async () => {
    const rack = (await created({ description: 'rack' })).uuid as string;
    const other = (await created({ description: 'other' })).uuid as string;
    const members: Json[] = [];
    for (let i = 0; i < 6; i++) members.push(await node({ name: `m${i}`, chassis_uuid: rack }));
    await node({ name: 'elsewhere', chassis_uuid: other });
    await node({ name: 'loose' });

    // A plain list shows Ironic's six fields; detail and fields=chassis_uuid show the chassis.
    const plain = ((await get('/v1/nodes?limit=1')).json() as { nodes: Json[] }).nodes[0]!;
    expect(plain).not.toHaveProperty('chassis_uuid');
    const detail = ((await get('/v1/nodes/detail')).json() as { nodes: Json[] }).nodes;
    expect(detail.map((n) => n.chassis_uuid)).toEqual([rack, rack, rack, rack, rack]);
    const picked = ((await get('/v1/nodes?fields=name,chassis_uuid&sort_key=name&sort_dir=desc&limit=3')).json() as { nodes: Json[] }).nodes;
    expect(picked.map(({ name, chassis_uuid }) => [name, chassis_uuid])).toEqual([['m5', rack], ['m4', rack], ['m3', rack]]);
    expect(((await get('/v1/nodes/loose?fields=chassis_uuid')).json() as Json).chassis_uuid).toBeNull();

    const filtered = (await get(`/v1/nodes?chassis_uuid=${other}`)).json() as { nodes: Json[] };
    expect(filtered.nodes.map((n) => n.name)).toEqual(['elsewhere']);
    const page = (await get(`/v1/nodes/detail?chassis_uuid=${rack}&limit=4`)).json() as { nodes: Json[]; next: string };
    expect(page.nodes.map((n) => n.name)).toEqual(['m0', 'm1', 'm2', 'm3']);
    expect(page.next).toBe(`http://localhost:80/v1/nodes/detail?chassis_uuid=${rack}&limit=4&marker=${members[3]!.uuid as string}`);

    const ofRack = (await get(`/v1/chassis/${rack}/nodes?limit=4`)).json() as { nodes: Json[]; next: string };
    expect(ofRack.nodes).toEqual(members.slice(0, 4).map((n) => ({
      uuid: n.uuid, name: n.name, instance_uuid: null, power_state: null, provision_state: 'enroll', maintenance: false, links: links(`nodes/${n.uuid as string}`),
    })));
    expect(ofRack.next).toBe(`http://localhost:80/v1/chassis/${rack}/nodes?limit=4&marker=${members[3]!.uuid as string}`);
    const rest = (await get(ofRack.next.replace('http://localhost:80', ''))).json() as { nodes: Json[]; next?: string };
    expect(rest.nodes.map((n) => n.name)).toEqual(['m4', 'm5']);
    expect(rest.next).toBeUndefined();
    const ofRackDetail = (await get(`/v1/chassis/${rack}/nodes/detail?sort_key=name&sort_dir=desc&limit=2`)).json() as { nodes: Json[] };
    expect(ofRackDetail.nodes.map((n) => [n.name, n.chassis_uuid, n.driver])).toEqual([['m5', rack, 'fake-hardware'], ['m4', rack, 'fake-hardware']]);
    expect(((await get(`/v1/chassis/${other}/nodes?fields=name,chassis_uuid`)).json() as { nodes: Json[] }).nodes.map(({ name, chassis_uuid }) => ({ name, chassis_uuid }))).toEqual([{ name: 'elsewhere', chassis_uuid: other }]);

    const unknown = randomUUID();
    const missing = await get(`/v1/nodes?chassis_uuid=${unknown}`);
    expect(missing.statusCode).toBe(404);
    expect(fault(missing.body)).toBe(`chassis ${unknown} could not be found`);
    const malformed = await get('/v1/nodes/detail?chassis_uuid=rack');
    expect(malformed.statusCode).toBe(400);
    expect(fault(malformed.body)).toBe('chassis_uuid: expected a UUID, got "rack"');
    // chassis_uuid is shown but is no sort key (Ironic keeps no such column either).
    expect((await get('/v1/nodes?sort_key=chassis_uuid')).statusCode).toBe(400);
  });
});
