/**
 * `/v1/deploy_templates` against Ironic's semantics (ironic/api/controllers/v1/deploy_template.py
 * and its tempest tests): every route, the version gate (404 at 1.54), refusals that name the field
 * (400), 404 for an unknown template, 409 for a name or uuid in use, and JSON Patch inside `steps`.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const V55 = { 'x-openstack-ironic-api-version': '1.55' };
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;
const BIOS = { interface: 'bios', step: 'apply_configuration', args: {}, priority: 10 };
const RAID = { interface: 'raid', step: 'apply_configuration', args: { raid_config: { logical_disks: [] } }, priority: 20 };

type Json = Record<string, unknown>;

function fault(body: string): string {
  return (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
}

describe.each(engines)('deploy templates API on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;

  beforeEach(async () => {
    const config = loadConfig({ env: { IRONRING_API_MAX_LIMIT: '5', IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth', IRONRING_API_MAX_JSON_FIELD_SIZE: '2048' } }).config;
    ({ app, ops } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false })));
  });
  afterEach(async () => {
    await Promise.allSettled([...ops.running]);
    await app.close();
  });

  const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = V55) =>
    app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const get = (url: string, headers?: Record<string, string>) => send('GET', url, undefined, headers);
  async function created(body: Json): Promise<Json> {
    const res = await send('POST', '/v1/deploy_templates', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Json;
  }
  const links = (path: string) => [
    { href: `http://localhost:80/v1/${path}`, rel: 'self' },
    { href: `http://localhost:80/${path}`, rel: 'bookmark' },
  ];

  it('is not there below 1.55 (404 on every route), and /v1 links it from 1.55', async () => {
    const made = await created({ name: 'CUSTOM_OLD', steps: [BIOS] });
    const old = { 'x-openstack-ironic-api-version': '1.54' };
    for (const [method, url, payload] of [
      ['GET', '/v1/deploy_templates', undefined],
      ['GET', '/v1/deploy_templates/detail', undefined],
      ['GET', `/v1/deploy_templates/${made.uuid as string}`, undefined],
      ['POST', '/v1/deploy_templates', { name: 'CUSTOM_X', steps: [BIOS] }],
      ['PATCH', '/v1/deploy_templates/CUSTOM_OLD', [{ op: 'replace', path: '/name', value: 'CUSTOM_Y' }]],
      ['DELETE', '/v1/deploy_templates/CUSTOM_OLD', undefined],
    ] as const) {
      const res = await send(method, url, payload, old);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(fault(res.body)).toMatch(/needs API version 1\.55 or later/);
    }
    expect((await get('/v1/deploy_templates/CUSTOM_OLD')).json()).toMatchObject({ name: 'CUSTOM_OLD' });
    expect((await get('/v1', old)).json()).not.toHaveProperty('deploy_templates');
    expect((await get('/v1')).json()).toMatchObject({ deploy_templates: [{ href: 'http://localhost:80/v1/deploy_templates/', rel: 'self' }, { href: 'http://localhost:80/deploy_templates/', rel: 'bookmark' }] });
  });

  it('creates a template (201, Location) and shows it by uuid and by name, with fields', async () => {
    const res = await send('POST', '/v1/deploy_templates', { name: 'CUSTOM_HYPERTHREADING_ON', steps: [{ ...BIOS, priority: '150' }], extra: { a: 1 } });
    expect(res.statusCode, res.body).toBe(201);
    const template = res.json() as Json;
    const uuid = template.uuid as string;
    expect(uuid).toMatch(UUID_RE);
    expect(res.headers.location).toBe(`http://localhost:80/v1/deploy_templates/${uuid}`);
    // A priority of digits is stored as the integer, as Ironic does.
    expect(template).toEqual({
      uuid, name: 'CUSTOM_HYPERTHREADING_ON', steps: [{ ...BIOS, priority: 150 }], extra: { a: 1 },
      created_at: expect.stringMatching(TIME_RE), updated_at: expect.stringMatching(TIME_RE), links: links(`deploy_templates/${uuid}`),
    });
    expect((await get(`/v1/deploy_templates/${uuid}`)).json()).toEqual(template);
    expect((await get(`/v1/deploy_templates/${uuid.toUpperCase()}`, LATEST)).json()).toEqual(template);
    expect((await get('/v1/deploy_templates/CUSTOM_HYPERTHREADING_ON')).json()).toEqual(template);
    expect((await get(`/v1/deploy_templates/${uuid}?fields=name,steps`)).json()).toEqual({ name: 'CUSTOM_HYPERTHREADING_ON', steps: template.steps, links: template.links });
    const bad = await get(`/v1/deploy_templates/${uuid}?fields=description`);
    expect(bad.statusCode).toBe(400);
    expect(fault(bad.body)).toMatch(/^fields: unknown deploy template field "description"/);
    // A given uuid is kept (lower case); a standard trait is a name too; secrets in args are masked.
    const given = randomUUID();
    expect(await created({ uuid: given.toUpperCase(), name: 'HW_CPU_X86_VMX', steps: [{ interface: 'management', step: 'set', args: { bmc_password: 'p' }, priority: 0 }] }))
      .toMatchObject({ uuid: given, name: 'HW_CPU_X86_VMX', extra: {}, steps: [{ args: { bmc_password: '******' } }] });
  });

  it('refuses bad templates with 400 naming the field, a name or uuid in use with 409, and stores nothing', async () => {
    const taken = await created({ name: 'CUSTOM_TAKEN', steps: [BIOS] });
    const many = Array.from({ length: 51 }, (_, i) => ({ ...BIOS, step: `s${i}` }));
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{ steps: [BIOS] }, 400, /^name: required/],
      [{ name: null, steps: [BIOS] }, 400, /^name: invalid trait null/],
      [{ name: 'invalid-name', steps: [BIOS] }, 400, /^name: invalid trait "invalid-name"/],
      [{ name: 'CUSTOM_lower', steps: [BIOS] }, 400, /^name: invalid trait/],
      [{ name: `CUSTOM_${'X'.repeat(250)}`, steps: [BIOS] }, 400, /^name: invalid trait/],
      [{ name: 'CUSTOM_A' }, 400, /^steps: required/],
      [{ name: 'CUSTOM_A', steps: [] }, 400, /^steps: expected a non-empty list/],
      [{ name: 'CUSTOM_A', steps: { key: 'value' } }, 400, /^steps: expected a non-empty list/],
      [{ name: 'CUSTOM_A', steps: many }, 400, /^steps: 51 steps; at most 50/],
      [{ name: 'CUSTOM_A', steps: ['x'] }, 400, /^steps\[0\]: expected an object/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, interface: 'vendor' }] }, 400, /^steps\[0\]\.interface: expected one of power, management, deploy, bios, raid, got "vendor"$/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, step: '' }] }, 400, /^steps\[0\]\.step: expected a step name/],
      [{ name: 'CUSTOM_A', steps: [{ interface: 'bios', step: 'x', priority: 1 }] }, 400, /^steps\[0\]\.args: required$/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, args: [] }] }, 400, /^steps\[0\]\.args: expected an object/],
      [{ name: 'CUSTOM_A', steps: [{ interface: 'bios', step: 'x', args: {} }] }, 400, /^steps\[0\]\.priority: required$/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, priority: -1 }] }, 400, /^steps\[0\]\.priority: expected an integer from 0/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, priority: 1.5 }] }, 400, /^steps\[0\]\.priority/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, priority: 'high' }] }, 400, /^steps\[0\]\.priority/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, extra: 1 }] }, 400, /^steps\[0\]: unexpected key "extra"/],
      [{ name: 'CUSTOM_A', steps: [BIOS, { ...BIOS, priority: 5 }] }, 400, /^steps: duplicate deploy steps.*Duplicates: interface: bios, step: apply_configuration$/],
      [{ name: 'CUSTOM_A', steps: [{ ...BIOS, args: { blob: 'x'.repeat(3000) } }] }, 400, /^steps: \d+ bytes of JSON, more than the 2048 accepted/],
      [{ name: 'CUSTOM_A', steps: [BIOS], uuid: 'malformed:uuid' }, 400, /^uuid: expected a UUID/],
      [{ name: 'CUSTOM_A', steps: [BIOS], extra: 'x' }, 400, /^extra: expected a JSON object/],
      [{ name: 'CUSTOM_A', steps: [BIOS], description: 'x' }, 400, /^description: unknown or read-only field/],
      [{ name: 'CUSTOM_A', steps: [BIOS], created_at: 'x' }, 400, /^created_at: unknown or read-only field/],
      [[1], 400, /^request body: expected a JSON object/],
      [{ name: 'CUSTOM_TAKEN', steps: [RAID] }, 409, 'a deploy template with name "CUSTOM_TAKEN" already exists'],
      [{ name: 'CUSTOM_OTHER', steps: [RAID], uuid: taken.uuid }, 409, `a deploy template with uuid ${taken.uuid as string} already exists`],
    ];
    for (const [payload, status, message] of cases) {
      const res = await send('POST', '/v1/deploy_templates', payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 200)).toBe(status);
      expect(fault(res.body), JSON.stringify(payload).slice(0, 200)).toMatch(message);
    }
    const deep = await app.inject({ method: 'POST', url: '/v1/deploy_templates', headers: { ...V55, 'content-type': 'application/json' }, payload: '{"name":"CUSTOM_A","steps":[{"interface":"bios","step":"x","priority":1,"args":{"__proto__":{"x":1}}}]}' });
    expect(deep.statusCode).toBe(400);
    expect(fault(deep.body)).toMatch(/__proto__/);
    expect(({} as Json).x).toBeUndefined();
    expect(((await get('/v1/deploy_templates')).json() as { deploy_templates: Json[] }).deploy_templates).toEqual([{ uuid: taken.uuid, name: 'CUSTOM_TAKEN', links: taken.links }]);
  });

  it('lists templates (uuid, name, links), in detail, in pages with a next link, sorted', async () => {
    const made: Json[] = [];
    for (const name of ['CUSTOM_B', 'CUSTOM_D', 'CUSTOM_A', 'CUSTOM_F', 'CUSTOM_C', 'CUSTOM_E']) made.push(await created({ name, steps: [BIOS] }));
    const first = (await get('/v1/deploy_templates')).json() as { deploy_templates: Json[]; next: string };
    expect(first.deploy_templates).toEqual(made.slice(0, 5).map((t) => ({ uuid: t.uuid, name: t.name, links: t.links })));
    expect(first.next).toBe(`http://localhost:80/v1/deploy_templates?limit=5&marker=${made[4]!.uuid as string}`);
    const second = (await get(first.next.replace('http://localhost:80', ''))).json() as Json;
    expect(second).toEqual({ deploy_templates: [{ uuid: made[5]!.uuid, name: 'CUSTOM_E', links: made[5]!.links }] });
    expect(((await get('/v1/deploy_templates/detail?limit=2')).json() as { deploy_templates: Json[] }).deploy_templates).toEqual(made.slice(0, 2));
    expect(((await get('/v1/deploy_templates?detail=True&limit=1')).json() as { deploy_templates: Json[] }).deploy_templates).toEqual(made.slice(0, 1));
    expect(((await get('/v1/deploy_templates?fields=steps&limit=1')).json() as { deploy_templates: Json[] }).deploy_templates).toEqual([{ steps: [BIOS], links: made[0]!.links }]);
    const byName = (await get('/v1/deploy_templates?sort_key=name&sort_dir=desc&limit=3')).json() as { deploy_templates: Json[]; next: string };
    expect(byName.deploy_templates.map((t) => t.name)).toEqual(['CUSTOM_F', 'CUSTOM_E', 'CUSTOM_D']);
    const rest = (await get(byName.next.replace('http://localhost:80', ''))).json() as { deploy_templates: Json[] };
    expect(rest.deploy_templates.map((t) => t.name)).toEqual(['CUSTOM_C', 'CUSTOM_B', 'CUSTOM_A']);
    for (const [query, message] of [
      ['sort_key=steps', /^sort_key: expected one of id, uuid, name, created_at, updated_at, got "steps"$/],
      ['sort_key=extra', /^sort_key: expected one of/],
      ['sort_dir=up', /^sort_dir: expected one of asc, desc/],
      ['limit=-1', /^limit: /],
      ['marker=nope', /^marker: expected a deploy template uuid, got "nope"$/],
      [`marker=${randomUUID()}`, /^marker: no deploy template with uuid /],
      ['fields=uuid&detail=True', /^fields and detail cannot be used together$/],
    ] as const) {
      const res = await get(`/v1/deploy_templates?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(fault(res.body), query).toMatch(message);
    }
  });

  it('patches name, extra and steps (whole list, one step, a key of a step) as tempest does', async () => {
    const template = await created({ name: 'CUSTOM_P', steps: [BIOS], extra: { a: 1 } });
    const uuid = template.uuid as string;
    const patch = (ops: unknown, target: string = uuid) => send('PATCH', `/v1/deploy_templates/${target}`, ops);
    const cache = { interface: 'bios', step: 'cache_bios_settings', args: {}, priority: 20 };
    const reset = { interface: 'bios', step: 'factory_reset', args: {}, priority: 30 };
    const added = await patch([{ path: '/steps/1', op: 'add', value: cache }, { path: '/steps/2', op: 'add', value: reset }]);
    expect(added.statusCode, added.body).toBe(200);
    expect(added.json()).toMatchObject({ steps: [BIOS, cache, reset], updated_at: expect.stringMatching(TIME_RE) });
    const mixed = await patch([
      { path: '/name', op: 'replace', value: 'CUSTOM_Q' },
      { path: '/steps/0', op: 'replace', value: { ...BIOS, priority: 20 } },
      { path: '/steps/0', op: 'remove' },
      { path: '/steps/-', op: 'add', value: RAID },
      { path: '/steps/0/priority', op: 'replace', value: 0 },
      { path: '/steps/1/args/mode', op: 'add', value: 'fast' },
      { path: '/extra/b', op: 'add', value: 2 },
    ]);
    expect(mixed.statusCode, mixed.body).toBe(200);
    expect(mixed.json()).toMatchObject({ name: 'CUSTOM_Q', steps: [{ ...cache, priority: 0 }, { ...reset, args: { mode: 'fast' } }, RAID], extra: { a: 1, b: 2 } });
    expect((await get('/v1/deploy_templates/CUSTOM_Q')).json()).toEqual(mixed.json());
    expect((await patch([{ path: '/steps', op: 'replace', value: [RAID] }], 'CUSTOM_Q')).json()).toMatchObject({ steps: [RAID] });

    await created({ name: 'CUSTOM_OTHER', steps: [BIOS] });
    const refused: Array<[unknown, number, string | RegExp]> = [
      [[{ path: '/steps/0', op: 'remove' }], 400, /^steps: expected a non-empty list/],
      [[{ path: '/steps', op: 'remove' }], 400, /^steps: required/],
      [[{ path: '/name', op: 'remove' }], 400, /^\/name: invalid trait null/],
      [[{ path: '/name', op: 'replace', value: '' }], 400, /^\/name: invalid trait ""/],
      [[{ path: '/name', op: 'replace', value: 'CUSTOM_OTHER' }], 409, 'a deploy template with name "CUSTOM_OTHER" already exists'],
      [[{ path: '/steps/-', op: 'add', value: RAID }], 400, /^steps: duplicate deploy steps/],
      [[{ path: '/steps/0/interface', op: 'replace', value: 'vendor' }], 400, /^steps\[0\]\.interface: expected one of/],
      [[{ path: '/steps/0/colour', op: 'add', value: 'red' }], 400, /^steps\[0\]: unexpected key "colour"/],
      [[{ path: '/steps/5', op: 'add', value: BIOS }], 400, /^\/steps\/5: index 5 is past the end/],
      [[{ path: '/steps/3', op: 'replace', value: BIOS }], 400, /^\/steps\/3: no item 3 to replace/],
      [[{ path: '/steps/x', op: 'replace', value: BIOS }], 400, /is not a list index/],
      [[{ path: '/steps/0/args/nope', op: 'remove' }], 400, /no such key to remove/],
      [[{ path: '/uuid', op: 'replace', value: randomUUID() }], 400, /^\/uuid: cannot be changed on a deploy template/],
      [[{ path: '/description', op: 'add', value: 'x' }], 400, /^\/description: cannot be changed on a deploy template/],
      [[{ path: '/extra', op: 'replace', value: 'x' }], 400, /^\/extra: expected a JSON object/],
      [[{ path: '/steps/0/args/__proto__', op: 'add', value: { x: 1 } }], 400, /__proto__/],
    ];
    for (const [body, status, message] of refused) {
      const res = await patch(body, 'CUSTOM_Q');
      expect(res.statusCode, JSON.stringify(body)).toBe(status);
      expect(fault(res.body), JSON.stringify(body)).toMatch(message);
    }
    expect((await get('/v1/deploy_templates/CUSTOM_Q')).json()).toMatchObject({ name: 'CUSTOM_Q', steps: [RAID] });
  });

  it('deletes by uuid or name (204); 404 for unknown templates, 400 for an ident that is neither', async () => {
    const a = await created({ name: 'CUSTOM_DEL_A', steps: [BIOS] });
    await created({ name: 'CUSTOM_DEL_B', steps: [BIOS] });
    expect((await send('DELETE', `/v1/deploy_templates/${a.uuid as string}`)).statusCode).toBe(204);
    const del = await send('DELETE', '/v1/deploy_templates/CUSTOM_DEL_B');
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    const unknown = randomUUID();
    for (const [method, url] of [
      ['GET', `/v1/deploy_templates/${unknown}`], ['GET', '/v1/deploy_templates/CUSTOM_DEL_B'], ['DELETE', `/v1/deploy_templates/${a.uuid as string}`],
    ] as const) {
      const res = await send(method, url);
      expect(res.statusCode, url).toBe(404);
      expect(fault(res.body)).toMatch(/^deploy template .+ could not be found$/);
    }
    const missing = await send('PATCH', `/v1/deploy_templates/${unknown}`, [{ op: 'replace', path: '/name', value: 'CUSTOM_Z' }]);
    expect(missing.statusCode).toBe(404);
    const notIdent = await get('/v1/deploy_templates/not%20a%20name');
    expect(notIdent.statusCode).toBe(400);
    expect(fault(notIdent.body)).toMatch(/^deploy_template: expected a name or UUID/);
  });
});
