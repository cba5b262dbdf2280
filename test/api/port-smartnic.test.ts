/**
 * Port `is_smartnic` (1.53) and `local_link_connection.network_type` (1.64), with Ironic's rules:
 * a Smart NIC port needs `port_id` and `hostname` in its local_link_connection (400 naming
 * is_smartnic), the field is hidden and refused (406) below 1.53, network_type refused (406) below
 * 1.64; `internal_info` is shown read-only.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const V = (v: string) => ({ 'x-openstack-ironic-api-version': v });
const fault = (body: string) => (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
const SMART = { port_id: 'rep0-0', hostname: 'dpu-1' };

describe.each(engines)('port is_smartnic and network_type on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let nodeUuid: string;

  beforeEach(async () => {
    const config = loadConfig({ env: {} }).config;
    app = buildApi({ store: db.store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    const res = await app.inject({ method: 'POST', url: '/v1/nodes', headers: V('latest'), payload: { driver: 'fake-hardware' } });
    nodeUuid = res.json<{ uuid: string }>().uuid;
  });
  afterEach(async () => app.close());

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown, version = 'latest') =>
    app.inject({ method, url, headers: V(version), ...(payload !== undefined ? { payload: payload as object } : {}) });
  const create = (body: Record<string, unknown>, version = 'latest') => call('POST', '/v1/ports', { node_uuid: nodeUuid, ...body }, version);

  it('creates a Smart NIC port with port_id and hostname, shows it from 1.53 on, and defaults others to false', async () => {
    const res = await create({ address: '52:54:00:00:10:01', is_smartnic: true, local_link_connection: SMART }, '1.53');
    expect(res.statusCode, res.body).toBe(201);
    const port = res.json<Record<string, unknown>>();
    expect(port).toMatchObject({ is_smartnic: true, local_link_connection: SMART, internal_info: {} });
    expect((await call('GET', `/v1/ports/${port.uuid as string}`, undefined, '1.52')).json()).not.toHaveProperty('is_smartnic');
    const plain = await create({ address: '52:54:00:00:10:02' });
    expect(plain.json()).toMatchObject({ is_smartnic: false });
  });

  it('refuses a Smart NIC port without port_id and hostname, on create and by patch', async () => {
    for (const link of [{}, { port_id: 'p' }, { hostname: 'h' }, { switch_id: 'aa:bb:cc:dd:ee:ff', port_id: 'p' }]) {
      const res = await create({ address: '52:54:00:00:11:01', is_smartnic: true, local_link_connection: link });
      expect(res.statusCode, JSON.stringify(link)).toBe(400);
      expect(fault(res.body)).toMatch(/^is_smartnic: a Smart NIC port must have port_id and hostname in local_link_connection/);
    }
    const port = (await create({ address: '52:54:00:00:11:02' })).json<{ uuid: string }>();
    const patch = await call('PATCH', `/v1/ports/${port.uuid}`, [{ op: 'replace', path: '/is_smartnic', value: true }]);
    expect(patch.statusCode).toBe(400);
    const both = await call('PATCH', `/v1/ports/${port.uuid}`, [{ op: 'replace', path: '/is_smartnic', value: 'true' }, { op: 'add', path: '/local_link_connection', value: SMART }]);
    expect(both.statusCode, both.body).toBe(200);
    expect(both.json()).toMatchObject({ is_smartnic: true });
    const drop = await call('PATCH', `/v1/ports/${port.uuid}`, [{ op: 'remove', path: '/local_link_connection/hostname' }]);
    expect(drop.statusCode).toBe(400);
  });

  it('refuses is_smartnic below 1.53 and a non-boolean with the field named', async () => {
    const old = await create({ address: '52:54:00:00:12:01', is_smartnic: false }, '1.52');
    expect(old.statusCode).toBe(406);
    const bad = await create({ address: '52:54:00:00:12:02', is_smartnic: 'maybe' });
    expect(bad.statusCode).toBe(400);
    expect(fault(bad.body)).toMatch(/^is_smartnic: expected true or false/);
  });

  it('takes local_link_connection.network_type from 1.64 on only (406 below), on create and by patch', async () => {
    const link = { network_type: 'unmanaged' };
    const below = await create({ address: '52:54:00:00:13:01', local_link_connection: link }, '1.63');
    expect(below.statusCode).toBe(406);
    expect(fault(below.body)).toMatch(/^local_link_connection\.network_type: needs API version 1\.64/);
    const ok = await create({ address: '52:54:00:00:13:01', local_link_connection: link }, '1.64');
    expect(ok.statusCode, ok.body).toBe(201);
    const uuid = ok.json<{ uuid: string }>().uuid;
    expect((await call('PATCH', `/v1/ports/${uuid}`, [{ op: 'replace', path: '/local_link_connection/network_type', value: 'managed' }], '1.63')).statusCode).toBe(406);
    expect((await call('PATCH', `/v1/ports/${uuid}`, [{ op: 'replace', path: '/local_link_connection/network_type', value: 'managed' }], '1.64')).statusCode).toBe(200);
    // A patch below 1.64 that does not touch local_link_connection is not refused for what it holds.
    expect((await call('PATCH', `/v1/ports/${uuid}`, [{ op: 'add', path: '/extra/a', value: 1 }], '1.63')).statusCode).toBe(200);
  });

  it('does not let a client write internal_info', async () => {
    const res = await create({ address: '52:54:00:00:14:01', internal_info: { tenant_vif_port_id: 'x' } });
    expect(res.statusCode).toBe(400);
    const port = (await create({ address: '52:54:00:00:14:02' })).json<{ uuid: string }>();
    expect((await call('PATCH', `/v1/ports/${port.uuid}`, [{ op: 'add', path: '/internal_info/tenant_vif_port_id', value: 'x' }])).statusCode).toBe(400);
  });
});
