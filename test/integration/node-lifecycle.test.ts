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
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const H = { 'x-openstack-ironic-api-version': 'latest' };

function fault(body: string): string {
  return (JSON.parse(JSON.parse(body).error_message) as { faultstring: string }).faultstring;
}

describe.each(engines)('a fake-hardware node through the API and a conductor on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let app: FastifyInstance;
  let conductor: Conductor;
  let dataDir: string;

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-life-'));
    const config = loadConfig({
      env: testConductorEnv(dataDir, { IRONRING_HOST: 'cond-1', IRONRING_CONDUCTOR_NODE_LOCKED_RETRY_INTERVAL: '0' }),
    }).config;
    const logger = createLogger({ level: (process.env.TEST_LOG as 'error') ?? 'silent', pretty: false });
    conductor = new Conductor({ store, config, logger });
    await conductor.start();
    app = buildApi({ store, config, logger });
  });
  afterAll(async () => {
    await app.close();
    await conductor.stop();
    await store.close();
    await target.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const once = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: H, ...(payload !== undefined ? { payload: payload as object } : {}) });
  // A conductor holds a node's lock for a moment after it rests (its own take-over pass, a power
  // sync): like python-ironicclient, a client retries an action refused because the node is locked.
  const req = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => {
    for (let attempt = 1; ; attempt++) {
      const res = await once(method, url, payload);
      if (method === 'GET' || res.statusCode !== 409 || !/is locked by/.test(res.body) || attempt === 10) return res;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const state = async (ident: string) => (await req('GET', `/v1/nodes/${ident}/states`)).json() as { provision_state: string; target_provision_state: string | null; power_state: string | null; last_error: string | null };
  const settle = (ident: string, wanted: string) =>
    waitUntil(async () => {
      const s = await state(ident);
      return s.provision_state === wanted && s.target_provision_state === null;
    }, 10_000, `${ident} to reach ${wanted}`).catch(async (e: unknown) => { console.log(JSON.stringify(await state(ident))); throw e; });
  const act = (ident: string, action: string) => req('PUT', `/v1/nodes/${ident}/states/provision`, { target: action });

  it('goes enroll → manageable → available → active → available, powered on and off on the way', async () => {
    const created = await req('POST', '/v1/nodes', { name: 'life-1', driver: 'fake-hardware' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ provision_state: 'enroll', conductor: 'cond-1' });

    expect((await act('life-1', 'manage')).statusCode).toBe(202);
    await settle('life-1', 'manageable');
    expect((await act('life-1', 'provide')).statusCode).toBe(202);
    await settle('life-1', 'available');
    expect((await act('life-1', 'active')).statusCode).toBe(202);
    await settle('life-1', 'active');

    expect((await req('PUT', '/v1/nodes/life-1/states/power', { target: 'power on' })).statusCode).toBe(202);
    await waitUntil(async () => (await state('life-1')).power_state === 'power on', 10_000, 'power on');
    expect((await req('PUT', '/v1/nodes/life-1/states/power', { target: 'power off' })).statusCode).toBe(202);
    await waitUntil(async () => (await state('life-1')).power_state === 'power off', 10_000, 'power off');

    expect((await req('PUT', '/v1/nodes/life-1/management/boot_device', { boot_device: 'pxe', persistent: true })).statusCode).toBe(204);
    expect((await req('GET', '/v1/nodes/life-1/management/boot_device')).json()).toEqual({ boot_device: 'pxe', persistent: true });

    const refused = await req('DELETE', '/v1/nodes/life-1');
    expect(refused.statusCode).toBe(409);
    expect(fault(refused.body)).toMatch(/cannot be deleted in provision state "active"/);

    expect((await act('life-1', 'deleted')).statusCode).toBe(202);
    await settle('life-1', 'available');
    const history = await store.db.selectFrom('node_history').innerJoin('nodes', 'nodes.id', 'node_history.node_id').select('event').where('nodes.name', '=', 'life-1').execute();
    expect(history.map((h) => h.event)).toContain('deleting → cleaning');
    expect((await req('DELETE', '/v1/nodes/life-1')).statusCode).toBe(204);
    expect((await req('GET', '/v1/nodes/life-1')).statusCode).toBe(404);
  });

  it('refuses an action the state does not allow, naming the state and the allowed actions', async () => {
    await req('POST', '/v1/nodes', { name: 'life-2', driver: 'fake-hardware' });
    const res = await act('life-2', 'active');
    expect(res.statusCode).toBe(400);
    expect(fault(res.body)).toBe('the requested action "active" cannot be performed on node in state "enroll"; allowed actions: manage');
    // "deploy" is the 1.73 spelling of "active": refused the same way.
    const deploy = await act('life-2', 'deploy');
    expect(deploy.statusCode).toBe(400);
    expect(fault(deploy.body)).toBe('the requested action "deploy" cannot be performed on node in state "enroll"; allowed actions: manage');
    expect((await state('life-2')).provision_state).toBe('enroll');
    expect((await act('life-2', 'explode')).statusCode).toBe(400);
    expect((await req('PUT', '/v1/nodes/life-2/states/power', { target: 'power sideways' })).statusCode).toBe(400);
  });

  it('patches a node through its conductor and refuses read-only fields', async () => {
    await req('POST', '/v1/nodes', { name: 'life-3', driver: 'fake-hardware', extra: { rack: 'a' } });
    const res = await req('PATCH', '/v1/nodes/life-3', [
      { op: 'add', path: '/extra/row', value: 7 },
      { op: 'replace', path: '/name', value: 'life-3b' },
      { op: 'add', path: '/driver_info/ipmi_password', value: 'pw' },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ name: 'life-3b', extra: { rack: 'a', row: 7 }, driver_info: { ipmi_password: '******' } });
    const ro = await req('PATCH', '/v1/nodes/life-3b', [{ op: 'replace', path: '/provision_state', value: 'active' }]);
    expect(ro.statusCode).toBe(400);
    expect(fault(ro.body)).toBe('/provision_state: cannot be changed (read-only)');
    const dup = await req('PATCH', '/v1/nodes/life-3b', [{ op: 'replace', path: '/name', value: 'life-2' }]);
    expect(dup.statusCode).toBe(409);
    const badDriver = await req('PATCH', '/v1/nodes/life-3b', [{ op: 'replace', path: '/driver', value: 'redfish' }]);
    expect(badDriver.statusCode).toBe(400);
    expect((await req('GET', '/v1/nodes/life-3b')).json()).toMatchObject({ driver: 'fake-hardware', name: 'life-3b' });
  });

  it('answers 409 naming the holder when another conductor holds the node', async () => {
    await req('POST', '/v1/nodes', { name: 'life-4', driver: 'fake-hardware' });
    await store.db.updateTable('nodes').set({ reservation: 'someone-else' }).where('name', '=', 'life-4').execute();
    const res = await once('PUT', '/v1/nodes/life-4/states/provision', { target: 'manage' });
    expect(res.statusCode).toBe(409);
    expect(fault(res.body)).toMatch(/is locked by conductor someone-else/);
    await store.db.updateTable('nodes').set({ reservation: null }).where('name', '=', 'life-4').execute();
  });

  it('puts a node in and out of maintenance', async () => {
    expect((await req('PUT', '/v1/nodes/life-4/maintenance', { reason: 'disk swap' })).statusCode).toBe(202);
    expect((await req('GET', '/v1/nodes/life-4')).json()).toMatchObject({ maintenance: true, maintenance_reason: 'disk swap' });
    expect((await req('DELETE', '/v1/nodes/life-4/maintenance')).statusCode).toBe(202);
    expect((await req('GET', '/v1/nodes/life-4')).json()).toMatchObject({ maintenance: false, maintenance_reason: null });
  });

  it('answers 503 when no live conductor serves the node\'s group', async () => {
    await req('POST', '/v1/nodes', { name: 'life-5', driver: 'fake-hardware', conductor_group: 'nowhere' });
    const res = await act('life-5', 'manage');
    expect(res.statusCode).toBe(503);
    expect(fault(res.body)).toMatch(/^no live conductor in group "nowhere" can manage node/);
  });
});
