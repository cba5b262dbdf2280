/**
 * The API of `ironring up` calling its own conductor in-process: a node action reaches the
 * conductor's operations without HTTP, and the conductor's refusals come back as the same API errors.
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

describe.each(engines)('API and conductor in one process on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let calls: string[] = [];

  beforeEach(async () => {
    const logger = createLogger({ level: 'silent', pretty: false });
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    // Its published RPC address answers nothing: only the in-process path can work.
    ({ app, ops, calls } = await startInProcessApi(db.store, config, logger));
  });
  afterEach(async () => {
    // Power actions finish in the background: let them end before the database goes.
    await Promise.allSettled([...ops.running]);
    await app.close();
  });

  const send = (method: 'POST' | 'PATCH' | 'PUT', url: string, payload: unknown) => app.inject({ method, url, headers: LATEST, payload: payload as object });
  const faultstring = (body: string) => (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;

  it('updates a node through the conductor, and a duplicate name is the conductor\'s 409 naming it', async () => {
    for (const name of ['n1', 'n2']) expect((await send('POST', '/v1/nodes', { name, driver: 'fake-hardware' })).statusCode).toBe(201);
    const renamed = await send('PATCH', '/v1/nodes/n2', [{ op: 'add', path: '/extra/rack', value: 'r1' }]);
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'n2', extra: { rack: 'r1' } });
    const clash = await send('PATCH', '/v1/nodes/n2', [{ op: 'replace', path: '/name', value: 'n1' }]);
    expect(clash.statusCode, clash.body).toBe(409);
    expect(faultstring(clash.body)).toBe('a node named "n1" already exists');
    const instance = '00000000-0000-4000-8000-0000000000aa';
    expect((await send('PATCH', '/v1/nodes/n1', [{ op: 'add', path: '/instance_uuid', value: instance }])).statusCode).toBe(200);
    const taken = await send('PATCH', '/v1/nodes/n2', [{ op: 'add', path: '/instance_uuid', value: instance }]);
    expect(taken.statusCode, taken.body).toBe(409);
    expect(faultstring(taken.body)).toBe(`instance ${instance} is already associated with another node`);
    expect(calls).toEqual(['POST update', 'POST update', 'POST update', 'POST update']);
  });

  it('runs a power action on the conductor of this process', async () => {
    expect((await send('POST', '/v1/nodes', { name: 'n3', driver: 'fake-hardware' })).statusCode).toBe(201);
    const res = await send('PUT', '/v1/nodes/n3/states/power', { target: 'power on' });
    expect(res.statusCode, res.body).toBe(202);
    expect(calls).toEqual(['POST power']);
  });
});
