/**
 * Node traits through the API (Ironic's 1.37 resource) on both databases: list, replace, add one,
 * remove one and all; the `traits` field of node views from 1.37 on; Ironic's validation (custom
 * and standard names, 255 characters, 50 a node) with 400s naming the entry; Ironic's refusals below 1.37 (406, 405, 404) and 404
 * for a trait the node lacks; a node PATCH cannot change them.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const V = (v: string) => ({ 'x-openstack-ironic-api-version': v });
const LATEST = V('latest');
const fault = (body: string): string => (JSON.parse(JSON.parse(body).error_message) as { faultstring: string }).faultstring;

describe.each(engines)('node traits API on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;

  beforeEach(() => {
    app = buildApi({ store: db.store, config: loadConfig({ env: {} }).config, logger: createLogger({ level: 'silent', pretty: false }) });
  });
  afterEach(async () => app.close());

  const call = (method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: object, headers = LATEST) => app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  const traitsOf = async (uuid: string) => (await call('GET', `/v1/nodes/${uuid}/traits`)).json<{ traits: string[] }>().traits;
  async function node(name: string): Promise<string> {
    const res = await app.inject({ method: 'POST', url: '/v1/nodes', headers: LATEST, payload: { name, driver: 'fake-hardware' } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ uuid: string }>().uuid;
  }

  it('replaces, adds and removes traits, and node views show them from 1.37 on', async () => {
    const uuid = await node('t1');
    expect(await traitsOf(uuid)).toEqual([]);
    expect((await call('PUT', `/v1/nodes/${uuid}/traits`, { traits: ['CUSTOM_GPU', 'HW_CPU_X86_VMX', 'CUSTOM_GPU'] })).statusCode).toBe(204);
    expect(await traitsOf(uuid)).toEqual(['CUSTOM_GPU', 'HW_CPU_X86_VMX']);
    expect((await call('PUT', `/v1/nodes/t1/traits/CUSTOM_RACK_1`)).statusCode).toBe(204);
    // Adding one it has is no error and changes nothing.
    expect((await call('PUT', `/v1/nodes/${uuid}/traits/CUSTOM_GPU`)).statusCode).toBe(204);
    expect(await traitsOf(uuid)).toEqual(['CUSTOM_GPU', 'CUSTOM_RACK_1', 'HW_CPU_X86_VMX']);
    expect((await call('DELETE', `/v1/nodes/${uuid}/traits/CUSTOM_GPU`)).statusCode).toBe(204);
    const missing = await call('DELETE', `/v1/nodes/${uuid}/traits/CUSTOM_GPU`);
    expect(missing.statusCode).toBe(404);
    expect(fault(missing.body)).toBe(`Node ${uuid} doesn't have a trait CUSTOM_GPU`);

    expect((await call('GET', `/v1/nodes/${uuid}`)).json()).toMatchObject({ traits: ['CUSTOM_RACK_1', 'HW_CPU_X86_VMX'] });
    expect((await call('GET', `/v1/nodes/${uuid}`, undefined, V('1.36'))).json()).not.toHaveProperty('traits');
    expect((await call('GET', `/v1/nodes/${uuid}?fields=uuid,traits`)).json()).toMatchObject({ uuid, traits: ['CUSTOM_RACK_1', 'HW_CPU_X86_VMX'] });
    const other = await node('t2');
    const detail = (await call('GET', '/v1/nodes/detail')).json<{ nodes: Array<{ uuid: string; traits: string[] }> }>().nodes;
    expect(Object.fromEntries(detail.map((n) => [n.uuid, n.traits]))).toMatchObject({ [uuid]: ['CUSTOM_RACK_1', 'HW_CPU_X86_VMX'], [other]: [] });
    // A plain list shows only Ironic's list fields.
    expect((await call('GET', '/v1/nodes')).json<{ nodes: object[] }>().nodes[0]).not.toHaveProperty('traits');

    expect((await call('DELETE', `/v1/nodes/${uuid}/traits`)).statusCode).toBe(204);
    expect(await traitsOf(uuid)).toEqual([]);
  });

  it('refuses invalid traits and more than 50, naming the entry, and changes nothing', async () => {
    const uuid = await node('t3');
    await call('PUT', `/v1/nodes/${uuid}/traits`, { traits: ['CUSTOM_KEEP'] });
    const bad: Array<[string, object | undefined, RegExp]> = [
      [`/v1/nodes/${uuid}/traits`, { traits: ['CUSTOM_OK', 'custom_lower'] }, /traits\[1\]: invalid trait "custom_lower"/],
      [`/v1/nodes/${uuid}/traits`, { traits: ['NOT_A_NAMESPACE_X'] }, /must start with the prefix CUSTOM_/],
      [`/v1/nodes/${uuid}/traits`, { traits: [`CUSTOM_${'A'.repeat(250)}`] }, /no longer than 255 characters/],
      [`/v1/nodes/${uuid}/traits`, { traits: 'CUSTOM_X' }, /traits: expected a list of traits/],
      [`/v1/nodes/${uuid}/traits`, { traits: [], owner: 'x' }, /owner: unknown field/],
      [`/v1/nodes/${uuid}/traits`, { traits: Array.from({ length: 51 }, (_, i) => `CUSTOM_T${i}`) }, /the node would have 51 traits; at most 50/],
      [`/v1/nodes/${uuid}/traits/CUSTOM-DASH`, undefined, /trait: invalid trait "CUSTOM-DASH"/],
    ];
    for (const [url, payload, message] of bad) {
      const res = await call('PUT', url, payload);
      expect(res.statusCode, url).toBe(400);
      expect(fault(res.body)).toMatch(message);
    }
    await call('PUT', `/v1/nodes/${uuid}/traits`, { traits: Array.from({ length: 50 }, (_, i) => `CUSTOM_T${i}`) });
    const over = await call('PUT', `/v1/nodes/${uuid}/traits/CUSTOM_ONE_MORE`);
    expect(over.statusCode).toBe(400);
    expect(await traitsOf(uuid)).toHaveLength(50);
  });

  it('is refused below 1.37 as Ironic refuses it (GET 406, PUT 405, DELETE 404), not found for a missing node, and a node PATCH cannot change traits', async () => {
    const uuid = await node('t4');
    const old = await call('GET', `/v1/nodes/${uuid}/traits`, undefined, V('1.36'));
    expect(old.statusCode).toBe(406);
    expect(old.body).toContain('need API version 1.37');
    expect((await call('PUT', `/v1/nodes/${uuid}/traits`, { traits: ['CUSTOM_A'] }, V('1.36'))).statusCode).toBe(405);
    expect((await call('PUT', `/v1/nodes/${uuid}/traits/CUSTOM_A`, undefined, V('1.36'))).statusCode).toBe(405);
    expect((await call('DELETE', `/v1/nodes/${uuid}/traits/CUSTOM_A`, undefined, V('1.36'))).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/nodes/${uuid}/traits`, undefined, V('1.36'))).statusCode).toBe(404);
    // Ironic's length: 255 characters is a trait, 256 a 400 (not the router's 404 for a long path).
    const long = `CUSTOM_${'T'.repeat(248)}`;
    expect((await call('PUT', `/v1/nodes/${uuid}/traits/${long}`)).statusCode).toBe(204);
    expect((await call('PUT', `/v1/nodes/${uuid}/traits/${long}T`)).statusCode).toBe(400);
    await call('DELETE', `/v1/nodes/${uuid}/traits/${long}`);
    // The field too: asked for before its version, 406; a field that does not exist, 400.
    expect((await call('GET', '/v1/nodes?fields=uuid,traits', undefined, V('1.36'))).statusCode).toBe(406);
    expect((await call('GET', `/v1/nodes/${uuid}?fields=traits`, undefined, V('1.36'))).statusCode).toBe(406);
    expect((await call('GET', '/v1/nodes?fields=uuid,traitz')).statusCode).toBe(400);
    expect((await call('GET', `/v1/nodes/${uuid}?fields=traits`)).json()).toEqual({ traits: [], links: expect.anything() as unknown });
    expect((await call('GET', '/v1/nodes/no-such-node/traits')).statusCode).toBe(404);
    // As on Ironic, a node PATCH cannot change them: the traits resource does.
    await call('PUT', `/v1/nodes/${uuid}/traits`, { traits: ['CUSTOM_KEPT'] });
    const patch = await app.inject({ method: 'PATCH', url: `/v1/nodes/${uuid}`, headers: LATEST, payload: [{ op: 'replace', path: '/traits', value: ['CUSTOM_OTHER'] }] });
    expect(patch.statusCode).toBe(400);
    expect(fault(patch.body)).toMatch(/\/traits: cannot be changed \(read-only\)/);
    expect(await traitsOf(uuid)).toEqual(['CUSTOM_KEPT']);
  });
});
