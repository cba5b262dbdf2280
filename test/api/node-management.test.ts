/**
 * A node's NMI and indicators through the API and its in-process conductor: the fake management
 * interface "injects" (counted on the fake machine, nothing else), the ipmitool one runs `chassis
 * power diag` (a recorded command, no BMC), indicators as Ironic's fake declares them, read-only
 * ones refused; 404 below 1.29 and 1.63, 400 naming the field for bad input.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import type { IpmitoolOptions } from '../../src/drivers/index.js';
import { bmcSimulatorAvailable, startBmcSimulator } from '../drivers/bmc-simulator.js';
import { makeNode, makeTask } from '../drivers/helpers.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const bmcAvailable = await bmcSimulatorAvailable();
const V = (v: string) => ({ 'x-openstack-ironic-api-version': v });
const fault = (body: string) => (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;

describe.each(engines)('node NMI and indicators on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let close: () => Promise<void>;
  let fake: FakeHardwareState;
  let ipmiRuns: string[][];

  beforeEach(async () => {
    fake = new FakeHardwareState();
    ipmiRuns = [];
    const exec: IpmitoolOptions['exec'] = async (_file, args) => {
      ipmiRuns.push([...args]);
      return { stdout: '', stderr: '' };
    };
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    const drivers = createDriverRegistry({ fakeState: fake, ipmitool: { exec, attempts: 1 } });
    ({ app, close } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false }), drivers));
  });
  afterEach(async () => close());

  const call = (method: 'GET' | 'PUT', url: string, payload?: unknown, version = 'latest') =>
    app.inject({ method, url, headers: V(version), ...(payload !== undefined ? { payload: payload as object } : {}) });
  async function node(name: string, body: Record<string, unknown> = { driver: 'fake-hardware' }): Promise<string> {
    const res = await app.inject({ method: 'POST', url: '/v1/nodes', headers: V('latest'), payload: { name, ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ uuid: string }>().uuid;
  }

  it('injects an NMI through the fake interface, recorded on the fake machine only', async () => {
    const n = await node('nmi1');
    const res = await call('PUT', `/v1/nodes/${n}/management/inject_nmi`, {}, '1.29');
    expect(res.statusCode, res.body).toBe(204);
    expect((await call('PUT', '/v1/nodes/nmi1/management/inject_nmi')).statusCode).toBe(204);
    expect(fake.peek(n)?.nmis).toBe(2);
    expect(ipmiRuns).toEqual([]);
  });

  it('injects an NMI on an ipmi node with ipmitool chassis power diag', async () => {
    const n = await node('nmi2', { driver: 'ipmi', driver_info: { ipmi_address: '192.0.2.9', ipmi_username: 'admin', ipmi_password: 'secret' } });
    const res = await call('PUT', `/v1/nodes/${n}/management/inject_nmi`);
    expect(res.statusCode, res.body).toBe(204);
    expect(ipmiRuns).toHaveLength(1);
    expect(ipmiRuns[0]!.slice(-3)).toEqual(['chassis', 'power', 'diag']);
    expect(ipmiRuns[0]).toContain('192.0.2.9');
    expect(ipmiRuns[0]).not.toContain('secret');
  });

  it('refuses an NMI on an ipmi node without a BMC address (400 naming the field), and below 1.29 (404)', async () => {
    const n = await node('nmi3', { driver: 'ipmi' });
    const res = await call('PUT', `/v1/nodes/${n}/management/inject_nmi`);
    expect(res.statusCode).toBe(400);
    expect(fault(res.body)).toMatch(/driver_info\.ipmi_address/);
    expect((await call('PUT', `/v1/nodes/${n}/management/inject_nmi`, undefined, '1.28')).statusCode).toBe(404);
    expect((await call('PUT', `/v1/nodes/${n}/management/inject_nmi`, { force: true })).statusCode).toBe(400);
    expect(ipmiRuns).toEqual([]);
  });

  it('lists the fake indicators as Ironic names them, reads and sets the writable one', async () => {
    const n = await node('ind1');
    const list = await call('GET', `/v1/nodes/${n}/management/indicators`, undefined, '1.63');
    expect(list.statusCode, list.body).toBe(200);
    const indicators = list.json<{ indicators: Array<Record<string, unknown>> }>().indicators;
    expect(indicators.map((i) => [i.name, i.component, i.readonly, i.states])).toEqual([
      ['led-0@chassis', 'chassis', true, ['OFF', 'ON']],
      ['led@system', 'system', false, ['BLINKING', 'OFF', 'ON']],
    ]);
    expect((indicators[1]!.links as Array<{ href: string }>)[0]!.href).toMatch(new RegExp(`/v1/nodes/${n}/management/indicators/led@system$`));
    expect((await call('GET', `/v1/nodes/${n}/management/indicators/led@system`)).json()).toEqual({ state: 'ON' });
    const set = await call('PUT', `/v1/nodes/${n}/management/indicators/led@system`, { state: 'BLINKING' });
    expect(set.statusCode, set.body).toBe(204);
    expect((await call('GET', `/v1/nodes/${n}/management/indicators/led@system`)).json()).toEqual({ state: 'BLINKING' });
    expect(fake.peek(n)?.indicators).toEqual({ 'led@system': 'BLINKING' });
  });

  it('refuses read-only, unknown and malformed indicators and bad states with 400, and answers 404 below 1.63', async () => {
    const n = await node('ind2');
    const cases: Array<[string, unknown, RegExp]> = [
      ['led-0@chassis', { state: 'OFF' }, /led-0@chassis is read-only/],
      ['led@system', { state: 'PURPLE' }, /^state: expected one of OFF, ON, BLINKING, UNKNOWN/],
      ['led@system', { state: 'UNKNOWN' }, /^state must be one of BLINKING, OFF, ON/],
      ['led@drive', { state: 'ON' }, /invalid component "drive"/],
      ['disco@system', { state: 'ON' }, /invalid indicator "disco"/],
      ['ledsystem', { state: 'ON' }, /malformed indicator name "ledsystem"/],
      ['__proto__@system', { state: 'ON' }, /invalid indicator "__proto__"/],
    ];
    for (const [indicator, body, message] of cases) {
      const res = await call('PUT', `/v1/nodes/${n}/management/indicators/${indicator}`, body);
      expect(res.statusCode, indicator).toBe(400);
      expect(fault(res.body), indicator).toMatch(message);
    }
    expect((await call('GET', `/v1/nodes/${n}/management/indicators`, undefined, '1.62')).statusCode).toBe(404);
    expect((await call('GET', `/v1/nodes/${n}/management/indicators/led@system`, undefined, '1.62')).statusCode).toBe(404);
  });

  it('refuses indicators on an ipmi node, naming its management interface', async () => {
    const n = await node('ind3', { driver: 'ipmi', driver_info: { ipmi_address: '192.0.2.9' } });
    const res = await call('GET', `/v1/nodes/${n}/management/indicators`);
    expect(res.statusCode).toBe(400);
    expect(fault(res.body)).toMatch(/does not support indicators .*management_interface "ipmitool"/);
    expect(ipmiRuns).toEqual([]);
  });
});

describe.skipIf(!bmcAvailable)('inject NMI against a real BMC (ipmitool + pyghmi)', () => {
  it('sends chassis control 4 (pulse diagnostic interrupt), which the BMC receives', async () => {
    const bmc = await startBmcSimulator();
    try {
      const registry = createDriverRegistry({ ipmitool: { retryDelayMs: 200, commandTimeoutMs: 10_000 } });
      const task = makeTask(registry, makeNode({ driver: 'ipmi', driver_info: { ipmi_address: '127.0.0.1', ipmi_port: bmc.port, ipmi_username: bmc.user, ipmi_password: bmc.password } }));
      await task.driver.management.injectNmi!(task);
      expect(bmc.events).toContain('NMI');
      expect(bmc.events.filter((e) => e.startsWith('POWER'))).toEqual([]);
    } finally {
      await bmc.stop();
    }
  });
});
