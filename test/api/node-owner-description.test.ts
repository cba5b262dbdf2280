/**
 * A node's `owner` (1.50) and `description` (1.51), as Ironic's: free text set on create and by
 * PATCH, shown from their versions on (406 before, in a body or in `fields`), filtered on with
 * `?owner=` (exact) and `?description_contains=` (literal: LIKE's wildcards match themselves).
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };
const at = (v: string) => ({ 'x-openstack-ironic-api-version': v });

describe.each(engines)('node owner and description on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;

  beforeEach(async () => {
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    ({ app, ops } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false })));
  });
  afterEach(async () => {
    await Promise.allSettled([...ops.running]);
    await app.close();
  });

  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown, headers: Record<string, string> = LATEST) =>
    app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const names = async (query: string) => ((await send('GET', `/v1/nodes?${query}`)).json() as { nodes: Array<{ name: string }> }).nodes.map((n) => n.name).sort();

  it('keeps both on create and PATCH, and filters on them', async () => {
    for (const [name, owner, description] of [['a', 'team-a', '50% of rack_1'], ['b', 'team-b', 'spare of rack 2'], ['c', null, null]] as const) {
      const res = await send('POST', '/v1/nodes', { name, driver: 'fake-hardware', owner, description });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json()).toMatchObject({ owner, description });
    }
    expect(await names('owner=team-a')).toEqual(['a']);
    expect(await names('description_contains=rack')).toEqual(['a', 'b']);
    // Literally: % and _ are not wildcards.
    expect(await names('description_contains=50%25')).toEqual(['a']);
    expect(await names('description_contains=rack_')).toEqual(['a']);
    expect(await names('description_contains=%25%25')).toEqual([]);
    const patched = await send('PATCH', '/v1/nodes/c', [
      { op: 'add', path: '/owner', value: 'team-c' },
      { op: 'add', path: '/description', value: 'new' },
    ]);
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ owner: 'team-c', description: 'new' });
    const removed = await send('PATCH', '/v1/nodes/c', [{ op: 'remove', path: '/owner' }]);
    expect(removed.json()).toMatchObject({ owner: null });
    expect(await names('sort_key=owner&fields=name')).toEqual(['a', 'b', 'c']);
  });

  it('refuses them before their versions (406) and when too long (400, naming the field)', async () => {
    expect((await send('POST', '/v1/nodes', { driver: 'fake-hardware', owner: 'x' }, at('1.49'))).statusCode).toBe(406);
    expect((await send('POST', '/v1/nodes', { driver: 'fake-hardware', description: 'x' }, at('1.50'))).statusCode).toBe(406);
    expect((await send('GET', '/v1/nodes?owner=x', undefined, at('1.49'))).statusCode).toBe(406);
    expect((await send('GET', '/v1/nodes?description_contains=x', undefined, at('1.50'))).statusCode).toBe(406);
    expect((await send('GET', '/v1/nodes?fields=description', undefined, at('1.50'))).statusCode).toBe(406);
    const long = await send('POST', '/v1/nodes', { driver: 'fake-hardware', description: 'x'.repeat(4097) });
    expect(long.statusCode).toBe(400);
    expect(long.body).toContain('description');
    const owner = await send('POST', '/v1/nodes', { driver: 'fake-hardware', owner: 'x'.repeat(256) });
    expect(owner.statusCode).toBe(400);
    expect(owner.body).toContain('owner');
    const node = (await send('POST', '/v1/nodes', { driver: 'fake-hardware', owner: 'kept' })).json() as { uuid: string };
    expect(await send('GET', `/v1/nodes/${node.uuid}`, undefined, at('1.49')).then((r) => r.json() as Record<string, unknown>)).not.toHaveProperty('owner');
  });
});
