/**
 * `/v1/volume` (connectors and targets, API 1.32) against Ironic's semantics (ironic/api/controllers/
 * v1/volume*.py and its conductor's update/destroy rules): every route, its refusals (400 naming the
 * field, 404 below 1.32 and for unknown resources, 409 for duplicates and a node that stays locked,
 * 403 for changes through a node), the rule that a node's connectors and targets change only while
 * it is powered off and unlocked, and that deleting a node deletes them.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LATEST, TIME_RE, UUID_RE, fault, useInProcessApi } from '../helpers/api-test.js';
import type { Json } from '../helpers/api-test.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const V132 = { 'x-openstack-ironic-api-version': '1.32' };

describe.each(engines)('volume API on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  // A held lock is retried twice, a second apart, as the conductor's [conductor] options say.
  const api = useInProcessApi(db, { IRONRING_API_MAX_LIMIT: '5', IRONRING_CONDUCTOR_NODE_LOCKED_RETRY_ATTEMPTS: '2', IRONRING_CONDUCTOR_NODE_LOCKED_RETRY_INTERVAL: '1' }, V132);
  const { send, get } = api;
  async function created(kind: 'connectors' | 'targets', body: Json): Promise<Json> {
    const res = await send('POST', `/v1/volume/${kind}`, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Json;
  }
  /** A node, powered off unless said (power and lock are set in the database: no conductor timing). */
  async function node(power: string | null = 'power off', name?: string): Promise<string> {
    const res = await send('POST', '/v1/nodes', { driver: 'fake-hardware', ...(name ? { name } : {}) }, LATEST);
    expect(res.statusCode, res.body).toBe(201);
    const uuid = (res.json() as Json).uuid as string;
    await setNode(uuid, { power_state: power });
    return uuid;
  }
  const setNode = (uuid: string, values: { power_state?: string | null; reservation?: string | null }) =>
    db.store.db.updateTable('nodes').set(values).where('uuid', '=', uuid).execute();
  const links = (path: string) => [
    { href: `http://localhost:80/v1/${path}`, rel: 'self' },
    { href: `http://localhost:80/${path}`, rel: 'bookmark' },
  ];
  const connector = (nodeUuid: string, id = `iqn.2024-01.org.example:${randomUUID()}`, extra: Json = {}) => created('connectors', { node_uuid: nodeUuid, type: 'iqn', connector_id: id, extra });

  it('links its resources at /v1/volume and /v1/nodes/{node}/volume, and from GET /v1, from 1.32 only', async () => {
    expect((await get('/v1/volume')).json()).toEqual({ links: links('volume/'), connectors: links('volume/connectors'), targets: links('volume/targets') });
    expect((await get('/v1/nodes/n1/volume')).json()).toEqual({ links: links('nodes/n1/volume/'), connectors: links('nodes/n1/volume/connectors'), targets: links('nodes/n1/volume/targets') });
    expect(((await get('/v1')).json() as Json).volume).toEqual([{ href: 'http://localhost:80/v1/volume/', rel: 'self' }, { href: 'http://localhost:80/volume/', rel: 'bookmark' }]);
    const old = { 'x-openstack-ironic-api-version': '1.31' };
    expect(((await get('/v1', old)).json() as Json).volume).toBeUndefined();
    const uuid = randomUUID();
    for (const [method, url] of [
      ['GET', '/v1/volume'], ['GET', '/v1/nodes/n1/volume'], ['GET', '/v1/volume/connectors'], ['GET', '/v1/volume/targets'],
      ['GET', `/v1/volume/connectors/${uuid}`], ['POST', '/v1/volume/connectors'], ['PATCH', `/v1/volume/targets/${uuid}`],
      ['DELETE', `/v1/volume/targets/${uuid}`], ['GET', '/v1/nodes/n1/volume/connectors'],
    ] as const) {
      const res = await send(method, url, method === 'POST' ? {} : method === 'PATCH' ? [] : undefined, old);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(fault(res.body)).toMatch(/needs API version 1\.32 or later/);
    }
  });

  it('creates a connector (201, Location), shows it, and lists it short, in detail, by fields, by node and in pages', async () => {
    const n1 = await node();
    const n2 = await node('power off', 'n2');
    const res = await send('POST', '/v1/volume/connectors', { node_uuid: n1.toUpperCase(), type: 'iqn', connector_id: 'iqn.1', extra: { a: 1 } });
    expect(res.statusCode, res.body).toBe(201);
    const c = res.json() as Json;
    const uuid = c.uuid as string;
    expect(uuid).toMatch(UUID_RE);
    expect(res.headers.location).toBe(`http://localhost:80/v1/volume/connectors/${uuid}`);
    expect(c).toEqual({ uuid, type: 'iqn', connector_id: 'iqn.1', node_uuid: n1, extra: { a: 1 }, created_at: expect.stringMatching(TIME_RE), updated_at: expect.stringMatching(TIME_RE), links: links(`volume/connectors/${uuid}`) });
    expect((await get(`/v1/volume/connectors/${uuid.toUpperCase()}`)).json()).toEqual(c);
    expect((await get(`/v1/volume/connectors/${uuid}?fields=type`)).json()).toEqual({ type: 'iqn', links: links(`volume/connectors/${uuid}`) });

    const others = [];
    for (let i = 0; i < 5; i++) others.push(await created('connectors', { node_uuid: n2, type: 'wwpn', connector_id: `wwpn-${i}` }));
    const short = (await get('/v1/volume/connectors')).json() as { connectors: Json[]; next: string };
    expect(short.connectors[0]).toEqual({ uuid, node_uuid: n1, type: 'iqn', connector_id: 'iqn.1', links: links(`volume/connectors/${uuid}`) });
    expect(short.connectors).toHaveLength(5);
    expect(short.next).toBe(`http://localhost:80/v1/volume/connectors?limit=5&marker=${short.connectors[4]!.uuid as string}`);
    const rest = (await get(short.next.replace('http://localhost:80', ''))).json() as { connectors: Json[] };
    expect(rest.connectors.map((x) => x.uuid)).toEqual([others[4]!.uuid]);
    expect(((await get('/v1/volume/connectors?detail=True&limit=1')).json() as { connectors: Json[] }).connectors).toEqual([c]);
    expect(((await get('/v1/volume/connectors?fields=connector_id&limit=1')).json() as { connectors: Json[] }).connectors).toEqual([{ connector_id: 'iqn.1', links: links(`volume/connectors/${uuid}`) }]);
    expect(((await get('/v1/volume/connectors?node=n2&sort_key=connector_id&sort_dir=desc')).json() as { connectors: Json[] }).connectors.map((x) => x.connector_id)).toEqual(['wwpn-4', 'wwpn-3', 'wwpn-2', 'wwpn-1', 'wwpn-0']);
    expect(((await get(`/v1/nodes/${n1}/volume/connectors`)).json() as { connectors: Json[] }).connectors.map((x) => x.uuid)).toEqual([uuid]);

    for (const [url, status, message] of [
      ['/v1/volume/connectors?fields=x', 400, /^fields: unknown volume connector field "x"/],
      ['/v1/volume/connectors?fields=type&detail=true', 400, /fields and detail cannot be used together/],
      ['/v1/volume/connectors?sort_key=extra', 400, /^sort_key: expected one of/],
      ['/v1/volume/connectors?marker=nope', 400, /^marker: expected a volume connector uuid/],
      [`/v1/volume/connectors?marker=${randomUUID()}`, 400, /^marker: no volume connector with uuid/],
      ['/v1/volume/connectors?node=missing', 404, /missing/],
      ['/v1/nodes/missing/volume/connectors', 404, /missing/],
      ['/v1/volume/connectors/detail', 400, /^connector_uuid: expected a UUID, got "detail"/],
    ] as const) {
      const r = await get(url);
      expect(r.statusCode, url).toBe(status);
      expect(fault(r.body), url).toMatch(message);
    }
  });

  it('refuses bad connector input with 400 naming the field, duplicates with 409, and stores nothing', async () => {
    const n1 = await node();
    const first = await connector(n1, 'iqn.taken');
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{ type: 'iqn', connector_id: 'x' }, 400, "node_uuid: required, the uuid of the volume connector's node"],
      [{ node_uuid: n1, connector_id: 'x' }, 400, /^type: required, one of iqn, ip, mac, wwnn, wwpn, port, portgroup$/],
      [{ node_uuid: n1, type: 'iqn' }, 400, /^connector_id: required/],
      [{ node_uuid: n1, type: 'scsi', connector_id: 'x' }, 400, 'type: expected one of iqn, ip, mac, wwnn, wwpn, port, portgroup, got "scsi"'],
      [{ node_uuid: n1, type: 'iqn', connector_id: 'x'.repeat(256) }, 400, /^connector_id: expected a string of at most 255 characters/],
      [{ node_uuid: n1, type: 'iqn', connector_id: 7 }, 400, /^connector_id: expected a string/],
      [{ node_uuid: 'n1', type: 'iqn', connector_id: 'x' }, 400, /^node_uuid: expected the uuid of the volume connector's node, got "n1"/],
      [{ node_uuid: randomUUID(), type: 'iqn', connector_id: 'x' }, 400, /^Invalid input for field\/attribute node_uuid/],
      [{ node_uuid: n1, type: 'iqn', connector_id: 'x', extra: [] }, 400, 'extra: expected a JSON object'],
      [{ node_uuid: n1, type: 'iqn', connector_id: 'x', uuid: 'u' }, 400, 'uuid: expected a UUID, got "u"'],
      [{ node_uuid: n1, type: 'iqn', connector_id: 'x', links: [] }, 400, /^links: unknown or read-only field for a new volume connector/],
      [{ node_uuid: n1, type: 'iqn', connector_id: 'iqn.taken' }, 409, 'A volume connector with type iqn and connector ID iqn.taken already exists.'],
      [{ node_uuid: n1, type: 'iqn', connector_id: 'y', uuid: first.uuid }, 409, `A volume connector with UUID ${first.uuid as string} already exists.`],
    ];
    for (const [payload, status, message] of cases) {
      const res = await send('POST', '/v1/volume/connectors', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      expect(fault(res.body), JSON.stringify(payload)).toMatch(message);
    }
    // The same id with another type is another connector.
    await created('connectors', { node_uuid: n1, type: 'ip', connector_id: 'iqn.taken' });
    expect(((await get('/v1/volume/connectors')).json() as { connectors: Json[] }).connectors).toHaveLength(2);
  });

  it('patches a connector of a powered-off node (fields, extra keys, another node), and refuses bad patches', async () => {
    const n1 = await node();
    const n2 = await node();
    const c = await connector(n1, 'iqn.1', { k1: 'v1', k2: 'v2' });
    const url = `/v1/volume/connectors/${c.uuid as string}`;
    const patched = await send('PATCH', url, [{ op: 'replace', path: '/connector_id', value: 'iqn.2' }, { op: 'add', path: '/extra/k3', value: 'v3' }, { op: 'remove', path: '/extra/k1' }]);
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ connector_id: 'iqn.2', extra: { k2: 'v2', k3: 'v3' }, node_uuid: n1 });
    expect((await send('PATCH', url, [{ op: 'remove', path: '/extra' }, { op: 'replace', path: '/node_uuid', value: n2 }])).json()).toMatchObject({ extra: {}, node_uuid: n2 });
    await connector(n1, 'iqn.other');
    for (const [patch, status, message] of [
      [[{ op: 'replace', path: '/type', value: 'scsi' }], 400, /^\/type: expected one of iqn/],
      [[{ op: 'remove', path: '/connector_id' }], 400, /^\/connector_id: expected a string/],
      [[{ op: 'replace', path: '/uuid', value: randomUUID() }], 400, '/uuid: cannot be changed on a volume connector'],
      [[{ op: 'replace', path: '/node_uuid', value: 'n2' }], 400, /^\/node_uuid: expected the uuid/],
      [[{ op: 'replace', path: '/node_uuid', value: randomUUID() }], 400, /^Invalid input for field\/attribute node_uuid/],
      [[{ op: 'replace', path: '/connector_id', value: 'iqn.other' }], 409, 'A volume connector with type iqn and connector ID iqn.other already exists.'],
      [{}, 400, /JSON Patch/],
    ] as const) {
      const res = await send('PATCH', url, patch);
      expect(res.statusCode, JSON.stringify(patch)).toBe(status);
      expect(fault(res.body), JSON.stringify(patch)).toMatch(message);
    }
  });

  it('changes and deletes connectors and targets only while their node is powered off, as Ironic', async () => {
    const n1 = await node('power on');
    const c = await connector(n1, 'iqn.on');
    const t = await created('targets', { node_uuid: n1, volume_type: 'iscsi', volume_id: 'v1', boot_index: 0 });
    const attempts = [
      ['PATCH', `/v1/volume/connectors/${c.uuid as string}`, 'volume connector update'],
      ['DELETE', `/v1/volume/connectors/${c.uuid as string}`, 'volume connector deletion'],
      ['PATCH', `/v1/volume/targets/${t.uuid as string}`, 'volume target update'],
      ['DELETE', `/v1/volume/targets/${t.uuid as string}`, 'volume target deletion'],
    ] as const;
    for (const state of ['power on', null] as const) {
      await setNode(n1, { power_state: state });
      for (const [method, url, action] of attempts) {
        const res = await send(method, url, method === 'PATCH' ? [{ op: 'add', path: '/extra/x', value: 1 }] : undefined);
        expect(res.statusCode, `${method} ${url}`).toBe(400);
        expect(fault(res.body)).toBe(`The requested action "${action}" can not be performed on node "${n1}" while it is in state "${state ?? 'None'}".`);
      }
    }
    // Moving a connector onto a powered-on node is refused too (Ironic checks the node it goes to).
    const off = await node();
    const moving = await connector(off, 'iqn.moving');
    const move = await send('PATCH', `/v1/volume/connectors/${moving.uuid as string}`, [{ op: 'replace', path: '/node_uuid', value: n1 }]);
    expect(move.statusCode).toBe(400);
    expect(fault(move.body)).toMatch(/"volume connector update" can not be performed on node/);
    await setNode(n1, { power_state: 'power off' });
    for (const [method, url] of attempts) {
      const res = await send(method, url, method === 'PATCH' ? [{ op: 'add', path: '/extra/x', value: 1 }] : undefined);
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(method === 'PATCH' ? 200 : 204);
    }
    const gone = await get(`/v1/volume/connectors/${c.uuid as string}`);
    expect(gone.statusCode).toBe(404);
    expect(fault(gone.body)).toBe(`Volume connector ${c.uuid as string} could not be found.`);
    expect(fault((await send('DELETE', `/v1/volume/targets/${t.uuid as string}`)).body)).toBe(`Volume target ${t.uuid as string} could not be found.`);
  });

  it('waits for a locked node as for its lock: done once it is released, 409 NodeLocked when it stays locked', async () => {
    const n1 = await node();
    const c = await connector(n1);
    await setNode(n1, { reservation: 'other-conductor' });
    const started = Date.now();
    const held = await send('PATCH', `/v1/volume/connectors/${c.uuid as string}`, [{ op: 'add', path: '/extra/x', value: 1 }]);
    expect(held.statusCode).toBe(409);
    expect(fault(held.body)).toMatch(`node ${n1} is locked by conductor other-conductor`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    setTimeout(() => void setNode(n1, { reservation: null }), 300);
    const released = await send('DELETE', `/v1/volume/connectors/${c.uuid as string}`);
    expect(released.statusCode, released.body).toBe(204);
  });

  it('creates, lists, patches and refuses targets: one boot index per node, properties masked, sizes named', async () => {
    const n1 = await node();
    const n2 = await node();
    const t = await created('targets', { node_uuid: n1, volume_type: 'iscsi', volume_id: 'vol-1', boot_index: 0, properties: { target_iqn: 'iqn.x', auth_password: 'secret' }, extra: { a: 'b' } });
    const uuid = t.uuid as string;
    expect(t).toEqual({
      uuid, node_uuid: n1, volume_type: 'iscsi', volume_id: 'vol-1', boot_index: 0, properties: { target_iqn: 'iqn.x', auth_password: '******' }, extra: { a: 'b' },
      created_at: expect.stringMatching(TIME_RE), updated_at: expect.stringMatching(TIME_RE), links: links(`volume/targets/${uuid}`),
    });
    // The same index on another node is another target.
    await created('targets', { node_uuid: n2, volume_type: 'iscsi', volume_id: 'vol-2', boot_index: 0 });
    expect(((await get(`/v1/volume/targets?node=${n1}`)).json() as { targets: Json[] }).targets).toEqual([{ uuid, node_uuid: n1, volume_type: 'iscsi', boot_index: 0, volume_id: 'vol-1', links: links(`volume/targets/${uuid}`) }]);
    expect(((await get(`/v1/nodes/${n2}/volume/targets?fields=volume_id`)).json() as { targets: Json[] }).targets).toEqual([expect.objectContaining({ volume_id: 'vol-2' })]);
    for (const [payload, status, message] of [
      [{ node_uuid: n1, volume_type: 'iscsi', volume_id: 'v', boot_index: 0 }, 409, "A volume target with boot index '0' for the same node already exists."],
      [{ node_uuid: n1, volume_type: 'iscsi', volume_id: 'v' }, 400, /^boot_index: required/],
      [{ node_uuid: n1, volume_type: 'iscsi', volume_id: 'v', boot_index: 1.5 }, 400, 'boot_index: expected an integer, got 1.5'],
      [{ node_uuid: n1, volume_type: 'iscsi', volume_id: 'x'.repeat(37), boot_index: 1 }, 400, /^volume_id: expected a string of at most 36 characters/],
      [{ node_uuid: n1, volume_type: 'x'.repeat(65), volume_id: 'v', boot_index: 1 }, 400, /^volume_type: expected a string of at most 64 characters/],
      [{ node_uuid: n1, volume_type: 'iscsi', volume_id: 'v', boot_index: 1, properties: 'p' }, 400, 'properties: expected a JSON object'],
    ] as const) {
      const res = await send('POST', '/v1/volume/targets', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      expect(fault(res.body), JSON.stringify(payload)).toMatch(message);
    }
    await created('targets', { node_uuid: n1, volume_type: 'iscsi', volume_id: 'vol-3', boot_index: 1 });
    const dup = await send('PATCH', `/v1/volume/targets/${uuid}`, [{ op: 'replace', path: '/boot_index', value: 1 }]);
    expect(dup.statusCode).toBe(409);
    expect(fault(dup.body)).toBe("A volume target with boot index '1' for the same node already exists.");
    expect((await send('PATCH', `/v1/volume/targets/${uuid}`, [{ op: 'replace', path: '/boot_index', value: 2 }, { op: 'replace', path: '/volume_id', value: 'vol-9' }])).json()).toMatchObject({ boot_index: 2, volume_id: 'vol-9' });
  });

  it('refuses show and changes through a node (403), and deletes a node\'s connectors and targets with it', async () => {
    const n1 = await node();
    const c = await connector(n1);
    const t = await created('targets', { node_uuid: n1, volume_type: 'iscsi', volume_id: 'v', boot_index: 0 });
    for (const [method, url] of [
      ['GET', `/v1/nodes/${n1}/volume/connectors/${c.uuid as string}`],
      ['POST', `/v1/nodes/${n1}/volume/targets`],
      ['PATCH', `/v1/nodes/${n1}/volume/targets/${t.uuid as string}`],
      ['DELETE', `/v1/nodes/${n1}/volume/connectors/${c.uuid as string}`],
    ] as const) {
      const res = await send(method, url, method === 'POST' ? {} : method === 'PATCH' ? [] : undefined);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(fault(res.body)).toBe('Operation not permitted.');
    }
    const deleted = await send('DELETE', `/v1/nodes/${n1}`, undefined, LATEST);
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect((await get(`/v1/volume/connectors/${c.uuid as string}`)).statusCode).toBe(404);
    expect((await get(`/v1/volume/targets/${t.uuid as string}`)).statusCode).toBe(404);
    expect(((await get('/v1/volume/targets')).json() as { targets: Json[] }).targets).toEqual([]);
  });
});
