/**
 * docs/api.md against the API it describes: every route the API serves is in the endpoint table and
 * every route in the table is served; nothing served is listed as "not served"; every 1.49 node
 * field is served from its version and none is listed as lacking; the authentication it describes exists.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { NODE_FIELDS } from '../../src/api/views/node.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';

const DOC = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');

/**
 * The node fields of Ironic's API at 1.49, with the version each appeared in (Ironic's
 * ironic/api/controllers/v1/versions.py and its node view). ironring's NODE_FIELDS adds its own
 * extensions (conductor_replicas, conductor_affinity) on top.
 */
const IRONIC_149_NODE_FIELDS: Record<string, string> = {
  uuid: '1.1', name: '1.5', chassis_uuid: '1.1', driver: '1.1', driver_info: '1.1', driver_internal_info: '1.3', extra: '1.1',
  instance_info: '1.1', instance_uuid: '1.1', properties: '1.1', provision_state: '1.1', target_provision_state: '1.1',
  provision_updated_at: '1.1', power_state: '1.1', target_power_state: '1.1', maintenance: '1.1', maintenance_reason: '1.1',
  last_error: '1.1', reservation: '1.1', console_enabled: '1.1', created_at: '1.1', updated_at: '1.1',
  inspection_started_at: '1.6', inspection_finished_at: '1.6', clean_step: '1.7', raid_config: '1.12', target_raid_config: '1.12',
  network_interface: '1.20', resource_class: '1.21', boot_interface: '1.31', console_interface: '1.31', deploy_interface: '1.31',
  inspect_interface: '1.31', management_interface: '1.31', power_interface: '1.31', raid_interface: '1.31', vendor_interface: '1.31',
  storage_interface: '1.33', traits: '1.37', rescue_interface: '1.38', bios_interface: '1.40', fault: '1.42', deploy_step: '1.44',
  conductor_group: '1.46', automated_clean: '1.47', protected: '1.48', protected_reason: '1.48', conductor: '1.49',
};

/** `/v1/nodes/{node}/states` and `/v1/nodes/:ident/states` both become `/v1/nodes/{}/states`. */
const normalise = (path: string): string => path.replace(/\{[^}]+\}|:[A-Za-z_]+/g, '{}').replace(/\/$/, '') || '/';

/** The (method, path) rows of the Endpoints table. */
function documentedRoutes(): Set<string> {
  const section = DOC.slice(DOC.indexOf('## Endpoints'), DOC.indexOf('## Errors'));
  const rows = [...section.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|/gm)];
  return new Set(rows.map(([, method, path]) => `${method} ${normalise(path!)}`));
}

let store: Store;
let app: FastifyInstance;
const served = new Set<string>();

beforeAll(async () => {
  store = await openDatabase('sqlite::memory:');
  app = buildApi({ store, config: loadConfig({ env: {} }).config, logger: createLogger({ level: 'silent', pretty: false }) });
  await app.ready();
  const openapi = JSON.parse((await app.inject({ url: '/v1/openapi.json' })).body) as { paths: Record<string, Record<string, unknown>> };
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const method of Object.keys(methods)) if (method !== 'head') served.add(`${method.toUpperCase()} ${normalise(path)}`);
  }
});
afterAll(async () => {
  await app.close();
  await store.close();
});

describe('docs/api.md', () => {
  it('lists every bare-metal route the API serves, and only those', () => {
    const documented = documentedRoutes();
    const bareMetal = [...served].filter((r) => / \/(v1|healthz|$)/.test(r) && !r.includes('/v1/openapi.json'));
    expect(bareMetal.length).toBeGreaterThan(20);
    expect(bareMetal.filter((r) => !documented.has(r)), 'served but not in the table').toEqual([]);
    expect([...documented].filter((r) => !served.has(r) && r !== 'GET /v1/openapi.json'), 'in the table but not served').toEqual([]);
  });

  it('serves port PATCH, and lists no resource as "not served yet" now that 1.82 is served whole', () => {
    expect(served.has('PATCH /v1/ports/{}')).toBe(true);
    expect(DOC).not.toMatch(/not served yet/i);
  });

  it('serves every 1.49 node field at its version, and the page names none as lacking', () => {
    const missing = Object.keys(IRONIC_149_NODE_FIELDS).filter((f) => NODE_FIELDS.since(f) === undefined);
    expect(missing).toEqual([]);
    for (const [field, version] of Object.entries(IRONIC_149_NODE_FIELDS)) expect(NODE_FIELDS.since(field)?.join('.'), field).toBe(version);
    // Whatever the section says now, no row of it names a node field as missing.
    const start = DOC.indexOf('### What 1.49 lacks');
    const section = start < 0 ? '' : DOC.slice(start, DOC.indexOf('## Endpoints'));
    expect([...section.matchAll(/^\| `([a-z_]+)` \| (1\.\d+) \|/gm)].map(([, field]) => field)).toEqual([]);
  });

  it('describes the authentication the API has: http_basic on every route but /, /v1 and /healthz', async () => {
    expect(DOC).not.toMatch(/none yet/i);
    expect(DOC).toMatch(/auth_strategy = "http_basic"/);
    expect(DOC).toMatch(/`\/v1\/…`, the compute API, `\/v1\/ring`, `\/metrics` and the OpenAPI\s+document — except `\/`, `\/v1` and `\/healthz`, which stay public/);
    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-api-doc-'));
    const file = path.join(dir, 'htpasswd');
    writeFileSync(file, `admin:${bcrypt.hashSync('s3cret', 4)}\n`);
    const config = loadConfig({ env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: file } }).config;
    const secured = buildApi({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    try {
      for (const url of ['/v1/nodes', '/compute/v1/servers', '/v1/ring', '/metrics', '/v1/openapi.json']) {
        const res = await secured.inject({ url });
        expect(res.statusCode, url).toBe(401);
        expect(JSON.parse(JSON.parse(res.body).error_message).faultstring, url).toMatch(/^authentication required/);
      }
      const wrong = await secured.inject({ url: '/v1/nodes', headers: { authorization: `Basic ${Buffer.from('admin:nope').toString('base64')}` } });
      expect(wrong.statusCode).toBe(401);
      for (const url of ['/', '/v1', '/healthz']) expect((await secured.inject({ url })).statusCode, url).not.toBe(401);
    } finally {
      await secured.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
