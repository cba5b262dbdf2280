/**
 * The power-state sync (Ironic's `_sync_power_states` semantics) on a real conductor and database:
 * fake machines changed behind the conductor's back, interfaces that never reach the state or cannot
 * be read, nodes that must be left alone, nodes owned by another conductor, and the real ipmitool
 * against a BMC simulator.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { Conductor } from '../../src/conductor/conductor.js';
import { PowerSync } from '../../src/conductor/power-sync.js';
import type { PowerSyncOptions } from '../../src/conductor/power-sync.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import { PowerActionFailed } from '../../src/drivers/errors.js';
import { FakeBoot } from '../../src/drivers/fake/fake-boot.js';
import { FakeDeploy } from '../../src/drivers/fake/fake-deploy.js';
import { FAKE_HARDWARE } from '../../src/drivers/fake/fake-hardware.js';
import { FakeInspect } from '../../src/drivers/fake/fake-inspect.js';
import { FakeManagement } from '../../src/drivers/fake/fake-management.js';
import { FakePower } from '../../src/drivers/fake/fake-power.js';
import { FakeRescue } from '../../src/drivers/fake/fake-rescue.js';
import { FakeHardwareState } from '../../src/drivers/fake/fake-state.js';
import { NoInspect } from '../../src/drivers/noop/no-inspect.js';
import { NoRescue } from '../../src/drivers/noop/no-rescue.js';
import { NoConsole } from '../../src/drivers/noop/no-console.js';
import { NoRaid } from '../../src/drivers/noop/no-raid.js';
import { FakeConsole } from '../../src/drivers/fake/fake-console.js';
import { FakeRaid } from '../../src/drivers/fake/fake-raid.js';
import { FakeBios } from '../../src/drivers/fake/fake-bios.js';
import { FakeStorage } from '../../src/drivers/fake/fake-storage.js';
import { NoBios } from '../../src/drivers/noop/no-bios.js';
import { NoopStorage } from '../../src/drivers/noop/noop-storage.js';
import type { PowerState } from '../../src/drivers/power.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import type { DriverTask } from '../../src/drivers/task.js';
import { bmcSimulatorAvailable, startBmcSimulator } from '../drivers/bmc-simulator.js';
import type { BmcSimulator } from '../drivers/bmc-simulator.js';
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const bmcAvailable = await bmcSimulatorAvailable();
const H = { 'x-openstack-ironic-api-version': 'latest' };
const logger = createLogger({ level: 'silent', pretty: false });

/** A BMC that reads back "power on" whatever it is told, and times out every change. */
class StuckPower extends FakePower {
  override async getPowerState(): Promise<PowerState> {
    return 'power on';
  }
  override async setPowerState(task: DriverTask, state: PowerState): Promise<void> {
    throw new PowerActionFailed(task.node.uuid, state, 'not reached within 60 s: the BMC still reports power on');
  }
}

/** A BMC that does not answer. */
class DeadPower extends FakePower {
  override async getPowerState(task: DriverTask): Promise<PowerState> {
    throw new PowerActionFailed(task.node.uuid, 'get power state', 'no answer within 20000 ms');
  }
}

/** A BMC that does not answer until `answering` is set, then answers as the fake hardware does. */
class RecoveringPower extends FakePower {
  answering = false;
  override async getPowerState(task: DriverTask): Promise<PowerState> {
    if (!this.answering) throw new PowerActionFailed(task.node.uuid, 'get power state', 'no answer within 20000 ms');
    return super.getPowerState(task);
  }
}

/** A BMC that never answers: a read ends only when the task is aborted. */
class HangingPower extends FakePower {
  started = 0;
  override async getPowerState(task: DriverTask): Promise<PowerState> {
    this.started += 1;
    await new Promise((resolve) => task.signal?.addEventListener('abort', resolve, { once: true }));
    throw new PowerActionFailed(task.node.uuid, 'get power state', 'aborted');
  }
}

/** fake-hardware whose power interface is `power`; only the fake implementations enabled. */
function registryWith(power: FakePower, state: FakeHardwareState): DriverRegistry {
  return new DriverRegistry({
    hardwareTypes: [FAKE_HARDWARE],
    implementations: {
      bios: { 'no-bios': new NoBios(), fake: new FakeBios() },
      boot: { fake: new FakeBoot(state) },
      console: { 'no-console': new NoConsole(), fake: new FakeConsole(state) },
      deploy: { fake: new FakeDeploy(state) },
      inspect: { 'no-inspect': new NoInspect(), fake: new FakeInspect(state) },
      management: { fake: new FakeManagement(state) },
      power: { fake: power },
      raid: { 'no-raid': new NoRaid(), fake: new FakeRaid() },
      rescue: { 'no-rescue': new NoRescue(), fake: new FakeRescue(state) },
      storage: { noop: new NoopStorage(), fake: new FakeStorage() },
    },
    enabledInterfaces: { boot: ['fake'], deploy: ['fake'], inspect: ['no-inspect', 'fake'], rescue: ['no-rescue', 'fake'] },
  });
}

describe.each(engines)('power-state sync on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let conductor: Conductor;
  let app: FastifyInstance;
  let dataDir: string;
  const fake = new FakeHardwareState();

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-psync-'));
    // Interval 0: no timer, each test runs a sync itself, so nothing races the assertions.
    const config = loadConfig({ env: testConductorEnv(dataDir, { IRONRING_HOST: 'sync-1', IRONRING_CONDUCTOR_SYNC_POWER_STATE_INTERVAL: '0' }) }).config;
    expect(config.conductor).toMatchObject({ force_power_state_during_sync: true, power_state_sync_max_retries: 3, sync_power_state_workers: 8 });
    conductor = new Conductor({ store, config, logger, drivers: createDriverRegistry({ fakeState: fake }) });
    await conductor.start();
    // The reconciler would resume the working states staged below; these tests are about the sync.
    await conductor.reconciler.stop();
    app = buildApi({ store, config, logger });
  });
  // Each test's nodes leave the sync when it ends, so every sync sees only the current test's nodes.
  afterEach(async () => {
    await store.db.updateTable('nodes').set({ maintenance: true }).execute();
  });
  afterAll(async () => {
    await app?.close();
    await conductor?.stop();
    await store?.close();
    await target?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const req = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: H, ...(payload !== undefined ? { payload: payload as object } : {}) });
  type Node = { uuid: string; reservation: string | null; provision_state: string; target_provision_state: string | null; power_state: string | null; maintenance: boolean; maintenance_reason: string | null; last_error: string | null };
  const node = async (ident: string) => (await req('GET', `/v1/nodes/${ident}`)).json() as Node;
  /** A fake node brought to `available` (power off recorded by manage). */
  const availableNode = async (name: string, extra: Record<string, unknown> = {}): Promise<Node> => {
    expect((await req('POST', '/v1/nodes', { name, driver: 'fake-hardware', ...extra })).statusCode).toBe(201);
    for (const [action, state] of [['manage', 'manageable'], ['provide', 'available']] as const) {
      expect((await req('PUT', `/v1/nodes/${name}/states/provision`, { target: action })).statusCode).toBe(202);
      await waitUntil(async () => {
        const n = await node(name);
        // Unlocked too: the sync skips a node its last operation still holds.
        return n.provision_state === state && n.target_provision_state === null && n.reservation === null;
      }, 10_000, `${name} ${state}`);
    }
    return node(name);
  };
  const setColumns = (uuid: string, values: Record<string, unknown>) => store.db.updateTable('nodes').set(values).where('uuid', '=', uuid).execute();
  const otherSync = (overrides: Partial<PowerSyncOptions>) =>
    new PowerSync({
      store,
      hostname: conductor.hostname,
      group: '',
      view: conductor.view,
      drivers: conductor.drivers,
      tracker: conductor.tracker,
      logger,
      metrics: conductor.metrics,
      intervalSeconds: 0,
      force: true,
      maxRetries: 3,
      workers: 2,
      ...overrides,
    });

  it('sets a machine changed behind the conductor\'s back back to the recorded state (force), and counts it in /metrics', async () => {
    const n = await availableNode('forced');
    expect(n.power_state).toBe('power off');
    fake.machine(n).power = 'power on';
    const report = await conductor.powerSync.runOnce();
    expect(report).toMatchObject({ forced: 1, recorded: 0, maintenance: 0, failures: 0 });
    expect(fake.peek(n.uuid)!.power).toBe('power off');
    expect(await node('forced')).toMatchObject({ power_state: 'power off', maintenance: false, last_error: null });
    // A second sync finds them agreeing and changes nothing.
    expect(await conductor.powerSync.runOnce()).toMatchObject({ forced: 0, recorded: 0, failures: 0 });
    const metrics = await conductor.metrics.registry.metrics();
    expect(metrics).toMatch(/ironring_conductor_power_sync_corrections_total\{action="forced",conductor="sync-1",conductor_group=""\} 1/);
    expect(metrics).toMatch(/ironring_conductor_power_sync_runs_total\{conductor="sync-1",conductor_group=""\} 2/);
    expect(metrics).toMatch(/ironring_conductor_power_sync_seconds_count\{conductor="sync-1",conductor_group=""\} 2/);
    expect(metrics).toMatch(/ironring_conductor_power_sync_nodes\{conductor="sync-1",conductor_group=""\} 1/);
  });

  it('records the machine\'s state instead when force_power_state_during_sync is false', async () => {
    const n = await availableNode('recorded');
    fake.machine(n).power = 'power on';
    const report = await otherSync({ force: false }).runOnce();
    expect(report.recorded).toBeGreaterThanOrEqual(1);
    expect(fake.peek(n.uuid)!.power).toBe('power on');
    expect((await node('recorded')).power_state).toBe('power on');
  });

  it('records the machine\'s state for a node with none recorded', async () => {
    const n = await availableNode('unknown');
    await setColumns(n.uuid, { power_state: null });
    fake.machine(n).power = 'power on';
    await conductor.powerSync.runOnce();
    expect((await node('unknown')).power_state).toBe('power on');
    expect(fake.peek(n.uuid)!.power).toBe('power on');
  });

  it('leaves alone nodes in maintenance, locked, changing power, in enroll or in a working state', async () => {
    const skipped: Array<[string, Record<string, unknown>]> = [
      ['skip-maint', { maintenance: true }],
      ['skip-locked', { reservation: 'another-conductor' }],
      ['skip-pending', { target_power_state: 'power off' }],
      ['skip-enroll', { provision_state: 'enroll' }],
      ['skip-working', { provision_state: 'deploying', target_provision_state: 'active' }],
      ['skip-waiting', { provision_state: 'clean wait', target_provision_state: 'available' }],
    ];
    for (const [name, columns] of skipped) {
      const n = await availableNode(name);
      await setColumns(n.uuid, columns);
      fake.machine(n).power = 'power on';
    }
    await conductor.powerSync.runOnce();
    for (const [name] of skipped) {
      const n = await node(name);
      expect(n.power_state, name).toBe('power off');
      expect(fake.peek(n.uuid)!.power, name).toBe('power on');
    }
    for (const [name] of skipped) await setColumns((await node(name)).uuid, { reservation: null, target_power_state: null });
  });

  it('syncs only the nodes this conductor owns on the ring', async () => {
    const n = await availableNode('not-mine');
    fake.machine(n).power = 'power on';
    const elsewhere = otherSync({ view: { ring: () => ({ owner: () => 'another-conductor' }) } as unknown as PowerSyncOptions['view'] });
    expect(await elsewhere.runOnce()).toMatchObject({ checked: 0, forced: 0, recorded: 0 });
    expect(fake.peek(n.uuid)!.power).toBe('power on');
    expect((await node('not-mine')).power_state).toBe('power off');
  });

  it('puts a node whose BMC never reaches the recorded state in maintenance after power_state_sync_max_retries, recording the BMC\'s state', async () => {
    const n = await availableNode('stuck');
    const state = new FakeHardwareState();
    const sync = otherSync({ drivers: registryWith(new StuckPower(state), state), maxRetries: 2 });
    // Two forced attempts fail; the third sync gives up.
    expect(await sync.runOnce()).toMatchObject({ failures: 1, maintenance: 0 });
    expect(await sync.runOnce()).toMatchObject({ failures: 1, maintenance: 0 });
    expect(sync.failuresOf(n.uuid)).toBe(2);
    expect(await node('stuck')).toMatchObject({ power_state: 'power off', maintenance: false });
    expect(await sync.runOnce()).toMatchObject({ maintenance: 1 });
    const after = await node('stuck');
    expect(after).toMatchObject({ power_state: 'power on', maintenance: true });
    expect(after.last_error).toBe(
      `During sync_power_state, max retries exceeded for node ${n.uuid}, node state power on does not match expected state 'power off'. ` +
        "Updating DB state to 'power on' Switching node to maintenance mode.",
    );
    expect(after.maintenance_reason).toBe(after.last_error);
  });

  it('puts a node whose BMC cannot be read in maintenance after the retries, with power state unknown, and a good read resets the count', async () => {
    const n = await availableNode('dead');
    const state = new FakeHardwareState();
    const dead = otherSync({ drivers: registryWith(new DeadPower(state), state), maxRetries: 1 });
    expect(await dead.runOnce()).toMatchObject({ failures: 1, maintenance: 0 });
    expect(dead.failuresOf(n.uuid)).toBe(1);
    expect((await node('dead')).maintenance).toBe(false);
    expect(await dead.runOnce()).toMatchObject({ failures: 1 });
    const after = await node('dead');
    expect(after).toMatchObject({ power_state: null, maintenance: true });
    expect(after.last_error).toContain('max retries exceeded');
    expect(after.last_error).toContain('Error: get power state failed for node');
    expect(after.last_error).toContain('no answer within 20000 ms');

    // A BMC that answers again, matching the record, starts the count afresh.
    const n2 = await availableNode('flaky');
    const recovering = new RecoveringPower(fake);
    const flaky = otherSync({ drivers: registryWith(recovering, fake), maxRetries: 5 });
    await flaky.runOnce();
    await flaky.runOnce();
    expect(flaky.failuresOf(n2.uuid)).toBe(2);
    recovering.answering = true;
    expect(await flaky.runOnce()).toMatchObject({ checked: 1, failures: 0 });
    expect(flaky.failuresOf(n2.uuid)).toBe(0);
  });

  it('stops without waiting for a BMC that never answers', async () => {
    await availableNode('hanging');
    const state = new FakeHardwareState();
    const power = new HangingPower(state);
    const sync = otherSync({ drivers: registryWith(power, state) });
    const running = sync.runOnce();
    await waitUntil(() => power.started > 0, 5_000, 'the BMC read to start');
    await sync.stop();
    await running;
    expect((await node('hanging')).power_state).toBe('power off');
  }, 10_000);

  it('runs every sync_power_state_interval seconds on a conductor that has it set', async () => {
    const n = await availableNode('periodic');
    const periodic = otherSync({ intervalSeconds: 1 });
    periodic.start();
    try {
      fake.machine(n).power = 'power on';
      await waitUntil(() => fake.peek(n.uuid)!.power === 'power off', 10_000, 'the periodic sync to set the machine back');
    } finally {
      await periodic.stop();
    }
  });
});

describe.skipIf(!bmcAvailable)('power-state sync against a BMC simulator through ipmitool', () => {
  let bmc: BmcSimulator;
  let target: TestDatabase;
  let store: Store;
  let conductor: Conductor;
  let app: FastifyInstance;
  let dataDir: string;

  beforeAll(async () => {
    bmc = await startBmcSimulator();
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-psync-bmc-'));
    const config = loadConfig({ env: testConductorEnv(dataDir, { IRONRING_HOST: 'sync-bmc', IRONRING_CONDUCTOR_SYNC_POWER_STATE_INTERVAL: '0' }) }).config;
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
  const powerState = async () => ((await req('GET', '/v1/nodes/sim')).json() as { power_state: string | null; provision_state: string }).power_state;
  const ipmitool = (command: string) =>
    execFileSync('ipmitool', ['-I', 'lanplus', '-H', '127.0.0.1', '-p', String(bmc.port), '-U', bmc.user, '-E', '-R', '3', '-N', '1', 'chassis', 'power', command], {
      env: { ...process.env, IPMI_PASSWORD: bmc.password },
      encoding: 'utf8',
    }).trim();

  it('sets the BMC back when forced, records its state when not', async () => {
    expect((await req('POST', '/v1/nodes', { name: 'sim', driver: 'ipmi', driver_info: { ipmi_address: '127.0.0.1', ipmi_port: bmc.port, ipmi_username: bmc.user, ipmi_password: bmc.password } })).statusCode).toBe(201);
    expect((await req('PUT', '/v1/nodes/sim/states/provision', { target: 'manage' })).statusCode).toBe(202);
    await waitUntil(async () => ((await req('GET', '/v1/nodes/sim')).json() as { provision_state: string }).provision_state === 'manageable', 30_000, 'manageable');
    expect(await powerState()).toBe('power off');

    ipmitool('on');
    expect(await conductor.powerSync.runOnce()).toMatchObject({ forced: 1 });
    expect(ipmitool('status')).toBe('Chassis Power is off');
    expect(await powerState()).toBe('power off');

    ipmitool('on');
    const recording = new PowerSync({
      store,
      hostname: conductor.hostname,
      group: '',
      view: conductor.view,
      drivers: conductor.drivers,
      tracker: conductor.tracker,
      logger,
      metrics: conductor.metrics,
      intervalSeconds: 0,
      force: false,
      maxRetries: 3,
      workers: 8,
    });
    expect(await recording.runOnce()).toMatchObject({ recorded: 1 });
    expect(ipmitool('status')).toBe('Chassis Power is on');
    expect(await powerState()).toBe('power on');
  }, 60_000);
});
