import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApi, listenApi } from '../../src/api/server.js';
import { ListenError } from '../../src/common/errors.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';

const logger = createLogger({ level: 'silent', pretty: false });
let store: Store;
let app: FastifyInstance;

beforeAll(async () => {
  store = await openDatabase('sqlite::memory:');
  app = buildApi({ store, config: loadConfig({ env: {} }).config, logger });
});
afterAll(async () => {
  await app.close();
  await store.close();
});

function errorText(body: string): string {
  return (JSON.parse(JSON.parse(body).error_message) as { faultstring: string }).faultstring;
}

describe('version discovery', () => {
  it('answers GET / with the Ironic root document', async () => {
    const res = await app.inject({ method: 'GET', url: '/', headers: { host: 'bm.example:6385' } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.name).toBe('ironring');
    expect(body.default_version).toEqual({
      id: 'v1',
      links: [{ href: 'http://bm.example:6385/v1/', rel: 'self' }],
      status: 'CURRENT',
      min_version: '1.1',
      version: '1.82',
    });
    expect(body.versions).toEqual([body.default_version]);
  });

  it('answers GET /v1 with microversion headers and media types', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-openstack-ironic-api-minimum-version']).toBe('1.1');
    expect(res.headers['x-openstack-ironic-api-maximum-version']).toBe('1.82');
    expect(res.headers['x-openstack-ironic-api-version']).toBe('1.1');
    expect(res.json()).toMatchObject({ id: 'v1', media_types: { base: 'application/json', type: 'application/vnd.openstack.ironic.v1+json' } });
  });

  it('serves unversioned resource paths (bookmark links, catalog endpoints without /v1) as v1, as Ironic does', async () => {
    const message = async (url: string) => errorText((await app.inject({ method: 'GET', url })).body);
    expect(await message('/nodes/n1/no/such/thing')).toBe('the resource could not be found: GET /v1/nodes/n1/no/such/thing');
    expect(await message('/chassis/c1/x/y')).toBe('the resource could not be found: GET /v1/chassis/c1/x/y');
    // Only v1 resources: other paths keep their own routes or 404 as they are.
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect(await message('/nodesx')).toBe('the resource could not be found: GET /nodesx');
  });

  it('links GET /v1 to each resource the requested microversion has, as Ironic does', async () => {
    const resources = (body: string) =>
      Object.entries(JSON.parse(body) as Record<string, unknown>)
        .filter(([, v]) => Array.isArray(v) && (v as Array<{ rel?: string }>).some((l) => l.rel === 'bookmark'))
        .map(([k]) => k);
    const old = await app.inject({ method: 'GET', url: '/v1', headers: { host: 'bm.example:6385' } });
    expect(resources(old.body)).toEqual(['chassis', 'nodes', 'ports', 'drivers']);
    expect(old.json().nodes).toEqual([{ href: 'http://bm.example:6385/v1/nodes/', rel: 'self' }, { href: 'http://bm.example:6385/nodes/', rel: 'bookmark' }]);
    const latest = await app.inject({ method: 'GET', url: '/v1', headers: { 'x-openstack-ironic-api-version': 'latest' } });
    expect(resources(latest.body)).toEqual(['chassis', 'nodes', 'ports', 'drivers', 'lookup', 'heartbeat', 'volume', 'portgroups', 'conductors', 'allocations', 'events', 'deploy_templates', 'shards']);
  });

  it('negotiates latest, and refuses versions out of range (406) or malformed (400)', async () => {
    const latest = await app.inject({ method: 'GET', url: '/v1', headers: { 'x-openstack-ironic-api-version': 'latest' } });
    expect(latest.headers['x-openstack-ironic-api-version']).toBe('1.82');
    const high = await app.inject({ method: 'GET', url: '/v1', headers: { 'x-openstack-ironic-api-version': '1.999' } });
    expect(high.statusCode).toBe(406);
    expect(errorText(high.body)).toBe('version 1.999 was requested but the supported range is 1.1 to 1.82');
    expect(high.headers['x-openstack-ironic-api-maximum-version']).toBe('1.82');
    const bad = await app.inject({ method: 'GET', url: '/v1', headers: { 'x-openstack-ironic-api-version': 'one' } });
    expect(bad.statusCode).toBe(400);
    expect(errorText(bad.body)).toMatch(/X-OpenStack-Ironic-API-Version/);
  });

  it('uses the configured public endpoint for links', async () => {
    const config = loadConfig({ env: { IRONRING_API_PUBLIC_ENDPOINT: 'https://bm.example.org/' } }).config;
    const other = buildApi({ store, config, logger });
    const res = await other.inject({ method: 'GET', url: '/v1' });
    expect(res.json().links[0]).toEqual({ href: 'https://bm.example.org/v1/', rel: 'self' });
    await other.close();
  });
});

describe('OpenAPI document', () => {
  it('lists the routes this API serves', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json() as { openapi: string; info: { title: string }; paths: Record<string, unknown> };
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBe('ironring API');
    for (const path of ['/v1/nodes', '/v1/nodes/{ident}', '/v1/nodes/{ident}/states/provision', '/v1/ports', '/v1/conductors', '/v1/drivers']) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
  });
});

describe('health and errors', () => {
  it('reports the database as healthy with its clock', async () => {
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ok', database: 'ok', engine: 'sqlite' });
  });

  it('reports 503 when the database is gone', async () => {
    const gone = await openDatabase('sqlite::memory:');
    const other = buildApi({ store: gone, config: loadConfig({ env: {} }).config, logger });
    await gone.close();
    const res = await other.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(503);
    expect(res.json().status).toBe('unavailable');
    await other.close();
  });

  it('answers unknown paths with 404 in the Ironic error format', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nope?x=1' });
    expect(res.statusCode).toBe(404);
    expect(errorText(res.body)).toBe('the resource could not be found: GET /v1/nope');
    expect(JSON.parse(JSON.parse(res.body).error_message)).toMatchObject({ faultcode: 'Client', debuginfo: null });
  });
});

describe('listenApi', () => {
  it('names the address and the option when the port is taken', async () => {
    const first = buildApi({ store, config: loadConfig({ env: {} }).config, logger });
    const url = await listenApi(first, '127.0.0.1:0');
    const port = new URL(url).port;
    const second = buildApi({ store, config: loadConfig({ env: {} }).config, logger });
    const err = await listenApi(second, `127.0.0.1:${port}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ListenError);
    expect((err as Error).message).toBe(`cannot listen for the API on 127.0.0.1:${port}: address already in use (change it with --api-address or [api] address)`);
    await second.close();
    await first.close();
  });
});
