/**
 * Fuzzing the API (issue #14, "done when"): random JSON documents, JSON patches and query strings
 * — biased towards what broke before: prototype keys, NUL and lone surrogates, deep nesting,
 * repeated parameters, wrong content types — thrown at the real API and a real conductor on a real
 * database for a bounded time. Every answer must be below 500, the process must keep its
 * `Object.prototype` clean, and a refused (4xx) request must leave the node and port rows exactly
 * as they were.
 *
 * The seed is printed; `FUZZ_SEED=<seed>` replays a run, `FUZZ_MS=<ms>` runs longer (per engine,
 * SQLite; PostgreSQL gets a third of it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { Conductor } from '../../src/conductor/conductor.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { testConductorEnv } from '../helpers/conductors.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 9000);
console.log(`API fuzz seed: ${SEED} (replay with FUZZ_SEED=${SEED})`);

// ---- Arbitraries: JSON as text, so that keys such as "__proto__" reach the server as written. ----

const NASTY_STRINGS = ['__proto__', 'constructor', 'prototype', '\u0000', 'a\u0000b', '\ud800', '\udc00x', '\ud83d\ude00', '', ' ', 'fake-hardware', 'ipmi', '%00', '../../etc/passwd', 'x'.repeat(300)];
const NODE_FIELDS = ['driver', 'name', 'uuid', 'driver_info', 'properties', 'extra', 'instance_info', 'resource_class', 'conductor_group', 'instance_uuid', 'boot_interface', 'deploy_interface', 'provision_state', 'maintenance'];
const PATCH_PATHS = ['/name', '/driver', '/extra', '/driver_info', '/properties', '/instance_info', '/resource_class', '/conductor_group', '/instance_uuid', '/uuid', '/power_interface', '/maintenance', '/address', '/pxe_enabled', '/physical_network', '/local_link_connection'];
const QUERY_NAMES = ['fields', 'detail', 'driver', 'limit', 'marker', 'sort_key', 'sort_dir', 'maintenance', 'associated', 'provision_state', 'node', 'node_uuid', 'address', 'conductor_group', 'resource_class', 'instance_uuid'];
const QUERY_VALUES = ['uuid', 'name,uuid', 'true', 'false', '1', '0', 'maybe', 'fake-hardware', 'enroll', 'asc', 'desc', 'created_at', '-1', '5', '1000000', 'f0404516-6684-425a-8de8-2168181a1e85', 'fuzz-0', '%00', '%ED%A0%80', '%', '%zz', '52:54:00:00:00:01'];

const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom(...NASTY_STRINGS));
const key = fc.oneof({ weight: 3, arbitrary: fc.string({ maxLength: 8 }) }, { weight: 2, arbitrary: fc.constantFrom(...NASTY_STRINGS, 'password', 'ipmi_password', 'switch_id', 'port_id', 'colour') });
const scalar = fc.oneof(
  fc.constant('null'),
  fc.boolean().map(String),
  fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(1e308, -0, 3600, 3601)).map((n) => JSON.stringify(n)),
  text.map((s) => JSON.stringify(s)),
);
const { json } = fc.letrec<{ json: string; array: string; object: string }>((tie) => ({
  json: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('array'), tie('object')),
  array: fc.array(tie('json'), { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`),
  object: fc.array(fc.tuple(key, tie('json')), { maxLength: 4 }).map((es) => `{${es.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
}));
/** `{"a":{"a":…}}` or `[[…]]` nested `n` deep: past every depth limit. */
const deep = fc.tuple(fc.integer({ min: 1, max: 5000 }), fc.boolean()).map(([n, arrays]) => (arrays ? `${'['.repeat(n)}1${']'.repeat(n)}` : `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`));
const anyJson = fc.oneof({ weight: 6, arbitrary: json }, { weight: 1, arbitrary: deep });
const objectOf = (names: string[]) =>
  fc.array(fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: key }), fc.oneof(anyJson, fc.constant('"fake-hardware"'))), { maxLength: 5 })
    .map((es) => `{${es.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
const nodeBody = fc.oneof(
  objectOf(NODE_FIELDS),
  fc.tuple(fc.constantFrom('driver_info', 'extra', 'properties', 'instance_info'), anyJson).map(([f, v]) => `{"driver":"fake-hardware",${JSON.stringify(f)}:${v}}`),
);
const pathToken = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(...NASTY_STRINGS, 'ipmi_password', '~0', '~1'));
const patchPath = fc.oneof(fc.constantFrom(...PATCH_PATHS), fc.tuple(fc.constantFrom(...PATCH_PATHS), fc.array(pathToken, { minLength: 1, maxLength: 4 })).map(([p, ts]) => `${p}/${ts.join('/')}`), text);
const patchOp = fc.tuple(fc.constantFrom('add', 'replace', 'remove', 'move', 'test'), patchPath, fc.option(anyJson, { nil: undefined })).map(
  ([op, p, v]) => `{"op":${JSON.stringify(op)},"path":${JSON.stringify(p)}${v !== undefined ? `,"value":${v}` : ''}}`,
);
/** Patches that mostly make sense, so that accepted changes (and their limits) get exercised too. */
const plausibleOp = fc.tuple(fc.constantFrom('add', 'replace', 'remove'), fc.constantFrom('/extra', '/driver_info', '/properties', '/instance_info', '/local_link_connection'), fc.array(fc.oneof(fc.constantFrom('a', 'b', 'password', 'switch_id', 'port_id', 'network_type'), pathToken), { minLength: 1, maxLength: 3 }), anyJson).map(
  ([op, field, ts, v]) => `{"op":"${op}","path":${JSON.stringify(`${field}/${ts.join('/')}`)}${op === 'remove' ? '' : `,"value":${v}`}}`,
);
const patchBody = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.oneof(patchOp, plausibleOp, plausibleOp), { minLength: 0, maxLength: 3 }).map((ops) => `[${ops.join(',')}]`) },
  { weight: 1, arbitrary: anyJson },
);
const mac = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 6, maxLength: 6 }).map((b) => b.map((x) => x.toString(16).padStart(2, '0')).join(':'));
/** The fuzzed nodes' and port's uuids: ports name their node, and are addressed, by uuid only (as Ironic's). */
const NODE_UUIDS = ['f0220000-0000-4000-8000-000000000000', 'f0220000-0000-4000-8000-000000000001', 'f0220000-0000-4000-8000-000000000002'];
const PORT_UUID = 'f0220000-0000-4000-8000-0000000000a1';
const portBody = fc.oneof(
  objectOf(['node_uuid', 'address', 'extra', 'local_link_connection', 'pxe_enabled', 'physical_network', 'uuid']).map((b) => b.replace(/"node_uuid":[^,}]*/, `"node_uuid":"${NODE_UUIDS[0]}"`)),
  fc.tuple(mac, fc.option(anyJson, { nil: undefined }), fc.option(objectOf(['switch_id', 'port_id', 'switch_info', 'network_type']), { nil: undefined })).map(
    ([address, extra, llc]) => `{"node_uuid":"${NODE_UUIDS[1]}","address":"${address}"${extra !== undefined ? `,"extra":${extra}` : ''}${llc !== undefined ? `,"local_link_connection":${llc}` : ''}}`,
  ),
);
const query = fc
  .array(fc.tuple(fc.oneof(fc.constantFrom(...QUERY_NAMES), fc.string({ maxLength: 4 })), fc.oneof(fc.constantFrom(...QUERY_VALUES), fc.string({ maxLength: 6 }).map(encodeURIComponent))), { maxLength: 4 })
  .map((ps) => (ps.length ? `?${ps.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&')}` : ''));
const version = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('latest', '1.49') }, { weight: 3, arbitrary: fc.constantFrom(undefined, '1.1', '1.11', '1.31') }, { weight: 1, arbitrary: fc.constantFrom('1.50', 'x') });
const contentType = fc.oneof({ weight: 8, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', undefined) });
const ident = fc.oneof({ weight: 4, arbitrary: fc.constantFrom('fuzz-0', 'fuzz-1', 'fuzz-2') }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }).map(encodeURIComponent) }, { weight: 1, arbitrary: fc.constantFrom('%00', '%ED%A0%80', 'a%2Fb') });

interface Request {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  url: string;
  body?: string;
  version: string | undefined;
  contentType: string | undefined;
}

const requests: fc.Arbitrary<Request> = fc.oneof(
  fc.record({ method: fc.constant('GET' as const), url: fc.tuple(fc.constantFrom('/v1/nodes', '/v1/nodes/detail', '/v1/ports', '/v1/ports/detail', '/v1/drivers', '/v1/conductors', '/v1/ring', '/v1/nodes/fuzz-0', '/v1/nodes/fuzz-1/ports', `/v1/ports/${PORT_UUID}`, '/v1/ports/52:54:00:00:00:01', '/v1', '/healthz'), query).map(([u, q]) => u + q), version, contentType }),
  fc.record({ method: fc.constant('POST' as const), url: fc.constant('/v1/nodes'), body: nodeBody, version, contentType }),
  fc.record({ method: fc.constant('PATCH' as const), url: ident.map((i) => `/v1/nodes/${i}`), body: patchBody, version, contentType }),
  fc.record({ method: fc.constant('POST' as const), url: fc.constant('/v1/ports'), body: portBody, version, contentType }),
  fc.record({ method: fc.constant('PATCH' as const), url: fc.constant(`/v1/ports/${PORT_UUID}`), body: patchBody, version, contentType }),
  fc.record({
    method: fc.constant('PUT' as const),
    url: ident.map((i) => `/v1/nodes/${i}/states/provision`),
    body: fc.tuple(fc.constantFrom('"manage"', '"provide"', '"active"', '"deploy"', '"rebuild"', '"clean"', '"abort"', '"bogus"', '1', 'null'), fc.option(anyJson, { nil: undefined })).map(([t, c]) => `{"target":${t}${c !== undefined ? `,"configdrive":${c}` : ''}}`),
    version,
    contentType,
  }),
  fc.record({
    method: fc.constant('PUT' as const),
    url: ident.map((i) => `/v1/nodes/${i}/states/power`),
    body: fc.tuple(fc.constantFrom('"power on"', '"power off"', '"rebooting"', '"bogus"', 'null'), fc.option(scalar, { nil: undefined })).map(([t, s]) => `{"target":${t}${s !== undefined ? `,"timeout":${s}` : ''}}`),
    version,
    contentType,
  }),
  fc.record({ method: fc.constantFrom('POST' as const, 'PATCH' as const), url: fc.constantFrom('/v1/nodes', '/v1/nodes/fuzz-0', '/v1/ports'), body: fc.string({ maxLength: 40 }), version, contentType }),
);

/** The columns that differ between two snapshots, `nodes[2].extra: … → …`, for a readable failure. */
function difference(before: string, after: string): string[] {
  const a = JSON.parse(before) as Record<string, Array<Record<string, unknown>>>;
  const b = JSON.parse(after) as Record<string, Array<Record<string, unknown>>>;
  const out: string[] = [];
  for (const table of ['nodes', 'ports']) {
    const rows = Math.max(a[table]!.length, b[table]!.length);
    for (let i = 0; i < rows; i++) {
      const x = a[table]![i] ?? {};
      const y = b[table]![i] ?? {};
      for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
        if (JSON.stringify(x[k]) !== JSON.stringify(y[k])) out.push(`${table}[${i}].${k}: ${JSON.stringify(x[k])?.slice(0, 80)} → ${JSON.stringify(y[k])?.slice(0, 80)}`);
      }
    }
  }
  return out;
}

/** Values under secret-looking keys that are not masked, found without recursion. */
function unmaskedSecrets(values: unknown[]): string[] {
  const found: string[] = [];
  const stack = [...values];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    for (const [k, child] of Array.isArray(v) ? v.entries() : Object.entries(v)) {
      if (typeof k === 'string' && /password|secret|configdrive/i.test(k) && child !== '******' && child !== '' && child !== null) found.push(`${k}: ${JSON.stringify(child)}`);
      else stack.push(child);
    }
  }
  return found;
}

describe.each(engines)('API fuzz on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let app: FastifyInstance;
  let conductor: Conductor;
  let dataDir: string;

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-fuzz-'));
    const config = loadConfig({ env: testConductorEnv(dataDir, { IRONRING_HOST: 'fuzz-cond', IRONRING_CONDUCTOR_NODE_LOCKED_RETRY_INTERVAL: '0' }) }).config;
    const logger = createLogger({ level: 'silent', pretty: false });
    conductor = new Conductor({ store, config, logger });
    await conductor.start();
    app = buildApi({ store, config, logger });
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { name: `fuzz-${i}`, uuid: NODE_UUIDS[i], driver: 'fake-hardware', driver_info: { ipmi_password: 'p', list: [{ password: 'q' }] } } });
      expect(res.statusCode, res.body).toBe(201);
    }
    const port = await app.inject({ method: 'POST', url: '/v1/ports', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { node_uuid: NODE_UUIDS[0], uuid: PORT_UUID, address: '52:54:00:00:00:01' } });
    expect(port.statusCode, port.body).toBe(201);
  });
  afterAll(async () => {
    await app.close();
    await conductor.stop();
    await store.close();
    await target.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Waits until the conductor has no background work (deploys, power changes) in flight. */
  async function idle(): Promise<void> {
    while (conductor.operations.running.size > 0) await Promise.allSettled([...conductor.operations.running]);
  }

  /**
   * Everything a request could change, as text — except the bookkeeping the conductor's own
   * periodic take-over pass writes on its schedule (it stamps `updated_at` and `conductor_affinity`
   * of active nodes under a short `reservation`), which no request controls.
   */
  async function snapshot(): Promise<string> {
    const nodes = await store.db.selectFrom('nodes').selectAll().orderBy('id').execute();
    const ports = await store.db.selectFrom('ports').selectAll().orderBy('id').execute();
    const rows = nodes.map(({ updated_at: _u, reservation: _r, conductor_affinity: _a, ...rest }) => rest);
    return JSON.stringify({ nodes: rows, ports });
  }

  it('never answers 5xx, never pollutes Object.prototype, and stores nothing from a refused request', { timeout: BUDGET_MS * 2 + 30_000 }, async () => {
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).join(',');
    let runs = 0;
    const statuses = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(requests, async (req) => {
        runs++;
        await idle();
        const before = await snapshot();
        const res = await app.inject({
          method: req.method,
          url: req.url,
          headers: { ...(req.version !== undefined ? { 'x-openstack-ironic-api-version': req.version } : {}), ...(req.contentType !== undefined ? { 'content-type': req.contentType } : {}) },
          ...(req.body !== undefined ? { payload: req.body } : {}),
        });
        const segments = req.url.split('?')[0]!.split('/');
        if (segments.length > 3) segments[3] = ':id';
        const kind = `${req.method} ${segments.join('/')} ${res.statusCode}`;
        statuses.set(kind, (statuses.get(kind) ?? 0) + 1);
        const what = `${req.method} ${req.url} ${req.body ?? ''} → ${res.statusCode} ${res.body.slice(0, 300)}`;
        expect(res.statusCode, what).toBeLessThan(500);
        if (res.statusCode >= 400) {
          expect(() => JSON.parse((JSON.parse(res.body) as { error_message: string }).error_message) as unknown, what).not.toThrow();
          await idle();
          const after = await snapshot();
          if (after !== before) expect(difference(before, after), what).toEqual([]);
        }
        expect(Object.getOwnPropertyNames(Object.prototype).join(','), what).toBe(prototypeKeys);
        // Whatever was stored can still be listed in full.
        const detail = await app.inject({ method: 'GET', url: '/v1/nodes/detail', headers: { 'x-openstack-ironic-api-version': 'latest' } });
        expect(detail.statusCode, `${what}; then GET /v1/nodes/detail → ${detail.body.slice(0, 300)}`).toBe(200);
        // …and shows no secret of driver_info or instance_info (empty or null stays visible: unset).
        const nodes = (JSON.parse(detail.body) as { nodes: Array<Record<string, unknown>> }).nodes;
        expect(unmaskedSecrets(nodes.flatMap((n) => [n.driver_info, n.instance_info])), what).toEqual([]);
      }),
      { seed: SEED, numRuns: 1_000_000, interruptAfterTimeLimit: engine === 'sqlite' ? BUDGET_MS : Math.ceil(BUDGET_MS / 3), markInterruptAsFailure: false },
    );
    console.log(`API fuzz on ${engine}: ${runs} requests (seed ${SEED}): ${[...statuses].sort().map(([k, n]) => `${k}×${n}`).join(', ')}`);
    expect(runs).toBeGreaterThan(20);
  });
});
