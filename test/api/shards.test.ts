/**
 * `GET /v1/shards` (Ironic's API 1.82): each shard with its number of nodes, most first, the nodes
 * without a shard under Ironic's `"None"`; no single shard, no other verb; 404 (GET) and 405
 * (others) below 1.82; linked from `GET /v1` from 1.82.
 */
import { describe, expect, it } from 'vitest';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { at, useInProcessApi } from '../helpers/api-test.js';

const engines = await testEngines();

describe.each(engines)('shards on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db);

  const req = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, version = 'latest', payload?: unknown) =>
    api.send(method, url, payload, at(version));

  it('counts the nodes of each shard, most first', async () => {
    expect((await req('GET', '/v1/shards')).json()).toEqual({ shards: [] });
    for (const [name, shard] of [['a', 'r1'], ['b', 'r1'], ['c', 'r1'], ['d', 'r2'], ['e', null], ['f', null]] as const) {
      expect((await req('POST', '/v1/nodes', 'latest', { name, driver: 'fake-hardware', shard })).statusCode).toBe(201);
    }
    const res = await req('GET', '/v1/shards');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ shards: [{ name: 'r1', count: 3 }, { name: 'None', count: 2 }, { name: 'r2', count: 1 }] });
    // Moving a node moves its count.
    await req('GET', '/v1/nodes/d');
    expect((await api.app().inject({ method: 'PATCH', url: '/v1/nodes/e', headers: at('latest'), payload: [{ op: 'add', path: '/shard', value: 'r2' }] })).statusCode).toBe(200);
    expect((await req('GET', '/v1/shards')).json()).toEqual({ shards: [{ name: 'r1', count: 3 }, { name: 'r2', count: 2 }, { name: 'None', count: 1 }] });
  });

  it('is read-only, has no single shard, and does not exist below 1.82', async () => {
    expect((await req('GET', '/v1/shards/r1')).statusCode).toBe(404);
    expect((await req('POST', '/v1/shards', 'latest', { name: 'x' })).statusCode).toBe(405);
    expect((await req('GET', '/v1/shards', '1.81')).statusCode).toBe(404);
    expect((await req('DELETE', '/v1/shards', '1.81')).statusCode).toBe(405);
    expect((await req('GET', '/v1', '1.82')).json()).toHaveProperty('shards');
    expect((await req('GET', '/v1', '1.81')).json()).not.toHaveProperty('shards');
  });
});
