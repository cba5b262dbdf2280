/**
 * A node's `storage_interface` (1.33), `bios_interface` (1.40) and `automated_clean` (1.47) through
 * the API and its in-process conductor: defaults as Ironic picks them, shown, created and patched
 * from their versions (406 before), bad values refused with a 400 naming the field; the interfaces
 * in `validate` and the drivers' details; and `GET /v1/nodes/{node}/bios[/{setting}]` (1.40).
 */
import { describe, expect, it } from 'vitest';
import { registerConductor } from '../../src/cluster/membership.js';
import { createDriverRegistry } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { at, fault, useInProcessApi } from '../helpers/api-test.js';

const engines = await testEngines();

describe.each(engines)('node storage, BIOS and automated clean on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db);

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown, version = 'latest') =>
    api.send(method, url, payload, at(version));
  const node = (body: Record<string, unknown>, version = 'latest') => api.made('/v1/nodes', body, at(version));
  const show = async (ident: string, version = 'latest') => (await call('GET', `/v1/nodes/${ident}`, undefined, version)).json<Record<string, unknown>>();
  const patch = (ident: string, ops: unknown[], version = 'latest') => call('PATCH', `/v1/nodes/${ident}`, ops, version);

  it('fills in Ironic\'s defaults and takes the choices a hardware type offers', async () => {
    expect(await node({ name: 'f1', driver: 'fake-hardware' })).toMatchObject({ storage_interface: 'noop', bios_interface: 'fake', automated_clean: null });
    expect(await node({ name: 'i1', driver: 'ipmi' })).toMatchObject({ storage_interface: 'noop', bios_interface: 'no-bios', automated_clean: null });
    expect(await node({ name: 'f2', driver: 'fake-hardware', storage_interface: 'fake', bios_interface: 'no-bios', automated_clean: 'false' })).toMatchObject({
      storage_interface: 'fake', bios_interface: 'no-bios', automated_clean: false,
    });
    expect(await show('f2')).toMatchObject({ storage_interface: 'fake', bios_interface: 'no-bios', automated_clean: false });
  });

  it('shows and takes each field from its version only: 406 before, as Ironic', async () => {
    await node({ name: 'v1', driver: 'fake-hardware' });
    const cases: Array<[string, unknown, string, string]> = [
      ['storage_interface', 'noop', '1.32', '1.33'],
      ['bios_interface', 'fake', '1.39', '1.40'],
      ['automated_clean', true, '1.46', '1.47'],
    ];
    for (const [field, value, before, since] of cases) {
      expect(await show('v1', before), `${field} at ${before}`).not.toHaveProperty(field);
      expect(await show('v1', since), `${field} at ${since}`).toHaveProperty(field);
      expect((await call('GET', `/v1/nodes/v1?fields=${field}`, undefined, before)).statusCode, field).toBe(406);
      const created = await call('POST', '/v1/nodes', { driver: 'fake-hardware', [field]: value }, before);
      expect(created.statusCode, `create ${field} at ${before}`).toBe(406);
      expect(fault(created.body)).toBe(`${field}: needs API version ${since} or later`);
      expect((await call('POST', '/v1/nodes', { driver: 'fake-hardware', [field]: null }, before)).statusCode, `null ${field} at ${before}`).toBe(201);
      const patched = await patch('v1', [{ op: 'replace', path: `/${field}`, value }], before);
      expect(patched.statusCode, `patch ${field} at ${before}`).toBe(406);
      const now = await patch('v1', [{ op: 'replace', path: `/${field}`, value }], since);
      expect(now.statusCode, now.body).toBe(200);
      expect(now.json()).toHaveProperty(field, value);
    }
  });

  it('refuses bad values with a 400 naming the field, on create and PATCH', async () => {
    await node({ name: 'b1', driver: 'ipmi' });
    const created: Array<[Record<string, unknown>, string]> = [
      [{ driver: 'fake-hardware', storage_interface: 'cinder' }, 'storage_interface "cinder" is not enabled for driver fake-hardware; valid storage interfaces: noop, fake'],
      [{ driver: 'ipmi', bios_interface: 'fake' }, 'bios_interface "fake" is not enabled for driver ipmi; valid bios interfaces: no-bios'],
      [{ driver: 'fake-hardware', storage_interface: 7 }, 'storage_interface: expected an interface name or null'],
      [{ driver: 'fake-hardware', automated_clean: 'sometimes' }, 'automated_clean: expected true, false or null'],
      [{ driver: 'fake-hardware', automated_clean: 1 }, 'automated_clean: expected true, false or null'],
    ];
    for (const [body, message] of created) {
      const res = await call('POST', '/v1/nodes', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(fault(res.body)).toBe(message);
    }
    const patched: Array<[unknown[], RegExp]> = [
      [[{ op: 'replace', path: '/automated_clean', value: 'maybe' }], /^\/automated_clean: expected true, false or null$/],
      [[{ op: 'replace', path: '/bios_interface', value: 'fake' }], /^bios_interface "fake" is not enabled for driver ipmi/],
      [[{ op: 'replace', path: '/storage_interface', value: ['noop'] }], /^\/storage_interface: expected an interface name or null$/],
    ];
    for (const [ops, message] of patched) {
      const res = await patch('b1', ops);
      expect(res.statusCode, JSON.stringify(ops)).toBe(400);
      expect(fault(res.body)).toMatch(message);
    }
    expect(await show('b1')).toMatchObject({ bios_interface: 'no-bios', storage_interface: 'noop', automated_clean: null });
  });

  it('patches automated_clean to true, false and back to null (remove), and an interface back to its default', async () => {
    await node({ name: 'p1', driver: 'fake-hardware', storage_interface: 'fake' });
    for (const [op, want] of [[{ op: 'add', path: '/automated_clean', value: true }, true], [{ op: 'replace', path: '/automated_clean', value: 'off' }, false], [{ op: 'remove', path: '/automated_clean' }, null]] as const) {
      const res = await patch('p1', [op]);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toHaveProperty('automated_clean', want);
    }
    const reset = await patch('p1', [{ op: 'remove', path: '/storage_interface' }, { op: 'replace', path: '/bios_interface', value: 'no-bios' }]);
    expect(reset.json()).toMatchObject({ storage_interface: 'noop', bios_interface: 'no-bios' });
  });

  it('sorts by automated_clean with null lowest, then false, then true, ties in creation order, page by page', async () => {
    const made: Array<[string, boolean | null]> = [];
    for (const [i, value] of ([true, null, false, true, null, false] as const).entries()) made.push([((await node({ name: `s${i}`, driver: 'fake-hardware', automated_clean: value })) as { uuid: string }).uuid, value]);
    const rank = (v: boolean | null) => (v === null ? 0 : v ? 2 : 1);
    const asc = made.map(([uuid, v], i) => ({ uuid, r: rank(v), i })).sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.uuid);
    const uuids = async (query: string) => (await call('GET', `/v1/nodes?${query}`)).json<{ nodes: Array<{ uuid: string }> }>().nodes.map((n) => n.uuid);
    expect(await uuids('sort_key=automated_clean')).toEqual(asc);
    expect(await uuids('sort_key=automated_clean&sort_dir=desc')).toEqual([...asc].reverse());
    expect(await uuids(`sort_key=automated_clean&limit=2&marker=${asc[2]}`)).toEqual(asc.slice(3, 5));
    expect(await uuids(`sort_key=automated_clean&sort_dir=desc&limit=2&marker=${asc[3]}`)).toEqual([asc[2], asc[1]]);
    for (const key of ['storage_interface', 'bios_interface']) expect((await call('GET', `/v1/nodes?sort_key=${key}`)).statusCode, key).toBe(200);
    expect((await call('GET', '/v1/nodes?sort_key=automated_clean', undefined, '1.46')).statusCode).toBe(406);
  });

  it('validates the bios and storage interfaces with the rest: no-bios fails in Ironic\'s words', async () => {
    await node({ name: 'val-f', driver: 'fake-hardware' });
    await node({ name: 'val-i', driver: 'ipmi' });
    const fake = (await call('GET', '/v1/nodes/val-f/validate')).json<Record<string, { result: boolean; reason?: string }>>();
    expect(fake).toMatchObject({ bios: { result: true }, storage: { result: true } });
    const ipmi = (await call('GET', '/v1/nodes/val-i/validate')).json<Record<string, { result: boolean; reason?: string }>>();
    expect(ipmi.storage).toEqual({ result: true });
    expect(ipmi.bios!.result).toBe(false);
    expect(ipmi.bios!.reason).toMatch(/^Driver ipmi does not support bios \(disabled or not implemented\)/);
  });

  it('lists a node\'s BIOS settings from 1.40 ({"bios": []} with none), answers one or 404 as Ironic, and 404 below 1.40', async () => {
    const { uuid } = (await node({ name: 'bios-1', driver: 'fake-hardware' })) as { uuid: string };
    expect((await call('GET', '/v1/nodes/bios-1/bios', undefined, '1.40')).json()).toEqual({ bios: [] });
    const missing = await call('GET', '/v1/nodes/bios-1/bios/ProcVirtualization', undefined, '1.40');
    expect(missing.statusCode).toBe(404);
    expect(fault(missing.body)).toBe(`Node ${uuid} doesn't have a BIOS setting 'ProcVirtualization'`);
    for (const url of ['/v1/nodes/bios-1/bios', '/v1/nodes/bios-1/bios/ProcVirtualization']) expect((await call('GET', url, undefined, '1.39')).statusCode, url).toBe(404);
    expect((await call('GET', '/v1/nodes/no-such-node/bios')).statusCode).toBe(404);
    // detail and fields are Ironic's from 1.74 (test/api/node-microversions-45-81.test.ts): 400 before.
    for (const query of ['detail=true', 'fields=name']) {
      const res = await call('GET', `/v1/nodes/bios-1/bios?${query}`, undefined, '1.73');
      expect(res.statusCode, query).toBe(400);
      expect(fault(res.body)).toMatch(new RegExp(`^${query.split('=')[0]}: `));
    }

    // What a BIOS interface would cache, as Ironic shows it below 1.74.
    const { id } = await db.store.db.selectFrom('nodes').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow();
    await db.store.db.insertInto('bios_settings').values({ node_id: id, name: 'ProcVirtualization', value: 'Enabled', created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' }).execute();
    const setting = {
      created_at: '2026-01-01T00:00:00+00:00', updated_at: '2026-01-01T00:00:00+00:00', name: 'ProcVirtualization', value: 'Enabled',
      links: [
        { href: `http://localhost:80/v1/nodes/bios-1/bios/ProcVirtualization`, rel: 'self' },
        { href: `http://localhost:80/nodes/bios-1/bios/ProcVirtualization`, rel: 'bookmark' },
      ],
    };
    const listed = (await call('GET', '/v1/nodes/bios-1/bios')).json<{ bios: Array<Record<string, unknown>> }>();
    expect(listed.bios).toHaveLength(1);
    expect({ ...listed.bios[0], links: (listed.bios[0]!.links as Array<{ href: string; rel: string }>).map((l) => ({ ...l, href: l.href.replace(/^http:\/\/[^/]+/, 'http://localhost:80') })) }).toEqual(setting);
    const one = (await call('GET', `/v1/nodes/bios-1/bios/ProcVirtualization`)).json<Record<string, Record<string, unknown>>>();
    expect(Object.keys(one)).toEqual(['ProcVirtualization']);
    expect(one.ProcVirtualization).toMatchObject({ name: 'ProcVirtualization', value: 'Enabled', created_at: setting.created_at });
    expect((one.ProcVirtualization!.links as Array<{ href: string }>)[0]!.href).toMatch(new RegExp(`/v1/nodes/${uuid}/bios/ProcVirtualization$`));

    // A node's settings go with it.
    expect((await api.app().inject({ method: 'DELETE', url: '/v1/nodes/bios-1', headers: at('latest') })).statusCode).toBe(204);
    expect(await db.store.db.selectFrom('bios_settings').selectAll().execute()).toEqual([]);
  });

  it('shows the drivers\' storage and bios interfaces from 1.33 and 1.40 (and rescue from 1.38), as Ironic', async () => {
    await registerConductor(db.store, { hostname: 'c-drv', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: createDriverRegistry().registrations() }, 60);
    const detail = async (version: string) => (await call('GET', '/v1/drivers/fake-hardware', undefined, version)).json<Record<string, unknown>>();
    const keys = (d: Record<string, unknown>) => Object.keys(d).filter((k) => /^(default|enabled)_(storage|rescue|bios)_interfaces?$/.test(k)).sort();
    expect(keys(await detail('1.32'))).toEqual([]);
    expect(keys(await detail('1.33'))).toEqual(['default_storage_interface', 'enabled_storage_interfaces']);
    expect(keys(await detail('1.38'))).toEqual(['default_rescue_interface', 'default_storage_interface', 'enabled_rescue_interfaces', 'enabled_storage_interfaces']);
    const latest = await detail('latest');
    expect(latest).toMatchObject({ default_storage_interface: 'noop', enabled_storage_interfaces: ['noop', 'fake'], default_bios_interface: 'fake', enabled_bios_interfaces: ['fake', 'no-bios'] });
  });
});
