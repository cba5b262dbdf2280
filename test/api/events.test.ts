/**
 * `POST /v1/events` (1.54): Ironic's network events accepted (204) after its schema's checks, each
 * refusal a 400 naming the event and field; 404 below 1.54; the `events` link of `GET /v1`.
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
const PORT = 'a3b1c2d4-0000-4000-8000-00000000abcd';
const DEVICE = 'b3b1c2d4-0000-4000-8000-00000000abcd';
const good = { event: 'network.bind_port', port_id: PORT, mac_address: '52:54:00:aa:bb:cc', status: 'ACTIVE', device_id: DEVICE, 'binding:host_id': DEVICE, 'binding:vnic_type': 'baremetal' };

describe.each(engines)('events on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;

  beforeEach(async () => {
    const config = loadConfig({ env: {} }).config;
    app = buildApi({ store: db.store, config, logger: createLogger({ level: 'silent', pretty: false }) });
  });
  afterEach(async () => app.close());

  const post = (payload: unknown, version = 'latest') => app.inject({ method: 'POST', url: '/v1/events', headers: V(version), payload: payload as object });

  it('accepts each network event of Ironic\'s schema with 204', async () => {
    for (const event of ['network.bind_port', 'network.unbind_port', 'network.delete_port']) {
      const res = await post({ events: [{ ...good, event }, { event, port_id: PORT, mac_address: '52-54-00-AA-BB-CD', status: 'DOWN', device_id: null }] }, '1.54');
      expect(res.statusCode, res.body).toBe(204);
      expect(res.body).toBe('');
    }
  });

  it('refuses what Ironic\'s schema refuses with a 400 naming the event and field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^events: expected a non-empty list/],
      [{ events: [] }, /^events: expected a non-empty list/],
      [{ events: [good], extra: 1 }, /^extra: unknown field/],
      [{ events: [{ ...good, event: 'compute.power_on' }] }, /^events\[0\]\.event: expected one of network\.bind_port/],
      [{ events: [good, { ...good, colour: 'red' }] }, /^events\[1\]\.colour: unknown field of a network event/],
      [{ events: [{ event: 'network.bind_port', port_id: PORT, mac_address: '52:54:00:aa:bb:cc' }] }, /^events\[0\]\.status: required/],
      [{ events: [{ ...good, port_id: 'eth0' }] }, /^events\[0\]\.port_id: expected a UUID/],
      [{ events: [{ ...good, mac_address: 'nope' }] }, /^events\[0\]\.mac_address: expected a MAC address/],
      [{ events: [{ ...good, status: 1 }] }, /^events\[0\]\.status: expected a string/],
      [{ events: [{ ...good, 'binding:host_id': 'host-1' }] }, /^events\[0\]\.binding:host_id: expected a UUID/],
      [{ events: ['network.bind_port'] }, /^events\[0\]: expected an object/],
      [{ events: Array.from({ length: 1001 }, () => good) }, /^events: at most 1000 events per request/],
      [[good], /^request body: expected a JSON object/],
    ];
    for (const [body, message] of cases) {
      const res = await post(body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 100)).toBe(400);
      expect(fault(res.body)).toMatch(message);
    }
  });

  it('answers 404 below 1.54 and links events from GET /v1 from 1.54 on', async () => {
    expect((await post({ events: [good] }, '1.53')).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/v1', headers: V('1.53') })).json()).not.toHaveProperty('events');
    expect((await app.inject({ method: 'GET', url: '/v1', headers: V('1.54') })).json()).toHaveProperty('events');
  });
});
