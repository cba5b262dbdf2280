/**
 * The ipmi hardware type end to end: the REST API → the owning conductor → the real `ipmitool` →
 * a BMC simulator (pyghmi) on 127.0.0.1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { Conductor } from '../../src/conductor/conductor.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { bmcSimulatorAvailable, startBmcSimulator } from '../drivers/bmc-simulator.js';
import type { BmcSimulator } from '../drivers/bmc-simulator.js';
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const available = await bmcSimulatorAvailable();
const H = { 'x-openstack-ironic-api-version': 'latest' };

describe.skipIf(!available)('an ipmi node through the API, a conductor, ipmitool and a real BMC simulator', () => {
  let bmc: BmcSimulator;
  let target: TestDatabase;
  let store: Store;
  let conductor: Conductor;
  let app: FastifyInstance;
  let dataDir: string;

  beforeAll(async () => {
    bmc = await startBmcSimulator();
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-ipmi-'));
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    const config = loadConfig({ env: testConductorEnv(dataDir, { IRONRING_HOST: 'bmc-cond' }) }).config;
    const logger = createLogger({ level: 'silent', pretty: false });
    conductor = new Conductor({ store, config, logger });
    await conductor.start();
    app = buildApi({ store, config, logger });
  });
  afterAll(async () => {
    await app?.close();
    await conductor?.stop();
    await store?.close();
    await target?.drop();
    await bmc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const req = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: H, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const powerState = async () => ((await req('GET', '/v1/nodes/bmc-1/states')).json() as { power_state: string | null; target_power_state: string | null; last_error: string | null });

  it('verifies, powers on and off, and sets the boot device through the BMC', async () => {
    const created = await req('POST', '/v1/nodes', {
      name: 'bmc-1',
      driver: 'ipmi',
      driver_info: { ipmi_address: '127.0.0.1', ipmi_port: bmc.port, ipmi_username: bmc.user, ipmi_password: bmc.password },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ power_interface: 'ipmitool', management_interface: 'ipmitool', driver_info: { ipmi_password: '******' } });

    expect((await req('PUT', '/v1/nodes/bmc-1/states/provision', { target: 'manage' })).statusCode).toBe(202);
    await waitUntil(async () => ((await req('GET', '/v1/nodes/bmc-1')).json() as { provision_state: string }).provision_state === 'manageable', 30_000, 'manageable');
    // Verifying read the power state through the BMC (the simulator starts off).
    expect(await powerState()).toMatchObject({ power_state: 'power off', last_error: null });

    expect((await req('PUT', '/v1/nodes/bmc-1/states/power', { target: 'power on' })).statusCode).toBe(202);
    await waitUntil(async () => (await powerState()).target_power_state === null, 30_000, 'power on to finish');
    expect(await powerState()).toMatchObject({ power_state: 'power on', last_error: null });

    expect((await req('PUT', '/v1/nodes/bmc-1/states/power', { target: 'power off' })).statusCode).toBe(202);
    await waitUntil(async () => (await powerState()).target_power_state === null, 30_000, 'power off to finish');
    expect(await powerState()).toMatchObject({ power_state: 'power off', last_error: null });

    const set = await req('PUT', '/v1/nodes/bmc-1/management/boot_device', { boot_device: 'pxe', persistent: false });
    expect(set.statusCode, set.body).toBe(204);
    expect((await req('GET', '/v1/nodes/bmc-1/management/boot_device')).json()).toMatchObject({ boot_device: 'pxe' });
    // The BMC itself saw the changes.
    expect(bmc.events).toEqual(expect.arrayContaining(['POWER on', 'POWER off']));
    expect(bmc.events.some((e) => e.startsWith('BOOTDEV network'))).toBe(true);
  });

  it('reports a BMC that refuses the credentials as the node\'s last error', async () => {
    await req('POST', '/v1/nodes', {
      name: 'bmc-2',
      driver: 'ipmi',
      driver_info: { ipmi_address: '127.0.0.1', ipmi_port: bmc.port, ipmi_username: bmc.user, ipmi_password: 'wrong' },
    });
    expect((await req('PUT', '/v1/nodes/bmc-2/states/power', { target: 'power on' })).statusCode).toBe(202);
    await waitUntil(async () => ((await req('GET', '/v1/nodes/bmc-2/states')).json() as { target_power_state: string | null }).target_power_state === null, 60_000, 'the power action to fail');
    const states = (await req('GET', '/v1/nodes/bmc-2/states')).json() as { last_error: string | null; power_state: string | null };
    expect(states.last_error).toMatch(/^power on failed for node [0-9a-f-]{36}: Error: Unable to establish IPMI v2 \/ RMCP\+ session$/);
    expect(states.power_state).toBeNull();
  });
});
