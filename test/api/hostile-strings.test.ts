/**
 * Strings a database cannot store (NUL, lone UTF-16 surrogates) are refused with 400 naming the
 * field on both engines alike — PostgreSQL used to answer 500 — and nothing is stored.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const HEADERS = { 'x-openstack-ironic-api-version': 'latest', 'content-type': 'application/json' };

function fault(body: string): string {
  return (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
}

describe.each(engines)('strings a database cannot store, on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let app: FastifyInstance;

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    app = buildApi({ store, config: loadConfig({ env: {} }).config, logger: createLogger({ level: 'silent', pretty: false }) });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
    await target.drop();
  });

  const rows = async () => (await store.db.selectFrom('nodes').selectAll().execute()).length;

  it('refuses NUL and lone surrogates in bodies, keys, query values and path segments, and values longer than their columns, with 400 naming them', async () => {
    const created = await app.inject({ method: 'POST', url: '/v1/nodes', headers: HEADERS, payload: JSON.stringify({ driver: 'fake-hardware', name: 'ok-1' }) });
    expect(created.statusCode, created.body).toBe(201);
    // A port names its node by uuid, as Ironic's.
    const okUuid = (created.json() as { uuid: string }).uuid;
    const before = await rows();
    // Raw JSON text: the escapes must reach the server as written.
    const bodies: Array<[string, string, string]> = [
      ['POST', '/v1/nodes', '{"driver":"fake-hardware","name":"a\\u0000b"}'],
      ['POST', '/v1/nodes', '{"driver":"fake-hardware","extra":{"k":"\\ud800"}}'],
      ['POST', '/v1/nodes', '{"driver":"fake-hardware","extra":{"k\\u0000":"v"}}'],
      ['POST', '/v1/nodes', '{"driver":"fake-hardware","driver_info":{"list":["x","\\udc00y"]}}'],
      ['PATCH', '/v1/nodes/ok-1', '[{"op":"add","path":"/extra/k","value":"\\u0000"}]'],
      ['PATCH', '/v1/nodes/ok-1', '[{"op":"add","path":"/extra/k\\u0000","value":"v"}]'],
      ['POST', '/v1/ports', `{"node_uuid":"${okUuid}","address":"52:54:00:00:00:01","extra":{"a":"\\ud83d"}}`],
      ['POST', '/compute/v1/servers', '{"name":"x\\u0000","resource_class":"rc","image":{}}'],
    ];
    const expected = [
      'name: contains a NUL character (\\u0000), which cannot be stored',
      'extra.k: contains a lone UTF-16 surrogate (not valid Unicode), which cannot be stored',
      'extra: a key contains a NUL character (\\u0000), which cannot be stored',
      'driver_info.list[1]: contains a lone UTF-16 surrogate (not valid Unicode), which cannot be stored',
      '[0].value: contains a NUL character (\\u0000), which cannot be stored',
      '[0].path: contains a NUL character (\\u0000), which cannot be stored',
      'extra.a: contains a lone UTF-16 surrogate (not valid Unicode), which cannot be stored',
      'name: contains a NUL character (\\u0000), which cannot be stored',
    ];
    for (const [i, [method, url, payload]] of bodies.entries()) {
      const res = await app.inject({ method: method as 'POST', url, headers: HEADERS, payload });
      expect(res.statusCode, `${payload} → ${res.body}`).toBe(400);
      expect(fault(res.body)).toBe(expected[i]);
    }
    for (const [url, message] of [
      ['/v1/nodes?driver=%00', 'driver: query parameter contains a NUL character (\\u0000), which cannot be stored'],
      ['/v1/nodes?name=%ED%A0%80x', null],
      ['/v1/nodes/a%00b', 'ident: path segment contains a NUL character (\\u0000), which cannot be stored'],
      ['/v1/ports?address=%00', 'address: query parameter contains a NUL character (\\u0000), which cannot be stored'],
      ['/v1/nodes/a%00b/ports', 'ident: path segment contains a NUL character (\\u0000), which cannot be stored'],
    ] as const) {
      const res = await app.inject({ method: 'GET', url, headers: HEADERS });
      expect(res.statusCode, `${url} → ${res.body}`).toBeLessThan(500);
      if (message !== null) {
        expect(res.statusCode).toBe(400);
        expect(fault(res.body)).toBe(message);
      }
    }
    // Longer than their columns: PostgreSQL refused them with 500, SQLite stored them.
    const long: Array<[string, string, string, string]> = [
      ['POST', '/v1/nodes', JSON.stringify({ driver: 'fake-hardware', conductor_group: 'g'.repeat(256) }), 'conductor_group: '],
      ['PATCH', '/v1/nodes/ok-1', JSON.stringify([{ op: 'add', path: '/conductor_group', value: 'g'.repeat(256) }]), '/conductor_group: '],
      ['PATCH', '/v1/nodes/ok-1', JSON.stringify([{ op: 'add', path: '/resource_class', value: 'r'.repeat(81) }]), '/resource_class: expected a string of at most 80 characters'],
      ['POST', '/v1/ports', JSON.stringify({ node_uuid: okUuid, address: '52:54:00:00:00:02', physical_network: 'p'.repeat(65) }), 'physical_network: expected a string of at most 64 characters'],
    ];
    for (const [method, url, payload, message] of long) {
      const res = await app.inject({ method: method as 'POST', url, headers: HEADERS, payload });
      expect(res.statusCode, `${payload.slice(0, 80)} → ${res.body}`).toBe(400);
      expect(fault(res.body).startsWith(message)).toBe(true);
    }
    expect((await store.db.selectFrom('ports').selectAll().execute()).length).toBe(0);
    expect(await rows()).toBe(before);
    const extra = (await store.db.selectFrom('nodes').select('extra').where('name', '=', 'ok-1').executeTakeFirstOrThrow()).extra;
    expect(extra).toEqual({});
  });
});
