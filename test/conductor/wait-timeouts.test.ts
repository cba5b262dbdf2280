/**
 * Nodes that wait for their agent for ever: the owner fails them after the state's timeout,
 * counted from the later of entering the state and the agent's last heartbeat, with Ironic's
 * message, powered off and their ramdisk gone; other owners' nodes, fresh waits, locked nodes and
 * disabled timeouts are left alone.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerConductor } from '../../src/cluster/membership.js';
import { TaskTracker } from '../../src/cluster/task.js';
import { createLogger } from '../../src/common/logger.js';
import { NodeOperations } from '../../src/conductor/node-operations.js';
import { lastSign, WaitTimeouts } from '../../src/conductor/wait-timeouts.js';
import type { WaitTimeoutSettings } from '../../src/conductor/wait-timeouts.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const logger = createLogger({ level: 'silent', pretty: false });
const HOUR = 3600_000;

describe.each(engines)('wait timeouts on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let ops: NodeOperations;
  let fake: FakeHardwareState;
  const owners = new Map<string, string>();

  beforeEach(async () => {
    owners.clear();
    await registerConductor(db.store, { hostname: 'c1', group: '', drivers: ['fake-hardware'] }, 60);
    fake = new FakeHardwareState();
    ops = new NodeOperations({ store: db.store, host: 'c1', tracker: new TaskTracker(), drivers: createDriverRegistry({ fakeState: fake }), logger, retry: { attempts: 1, intervalMs: 10 } });
  });
  afterEach(async () => {
    await Promise.allSettled([...ops.running]);
  });

  function checker(timeouts: Partial<WaitTimeoutSettings> = {}): WaitTimeouts {
    return new WaitTimeouts({
      store: db.store,
      hostname: 'c1',
      group: '',
      view: { ring: () => ({ owner: (uuid: string) => owners.get(uuid) ?? 'c1' }) } as never,
      logger,
      intervalSeconds: 0,
      timeouts: { 'wait call-back': 1800, 'clean wait': 1800, 'inspect wait': 1800, 'rescue wait': 1800, ...timeouts },
      fail: (uuid, state, seconds) => ops.failWaitTimeout(uuid, state, seconds),
    });
  }

  async function waitingNode(state: string, target: string, since: Date, internal: Record<string, unknown> = {}, instance: Record<string, unknown> = {}): Promise<string> {
    const uuid = crypto.randomUUID();
    await db.store.db
      .insertInto('nodes')
      .values({ uuid, driver: 'fake-hardware', provision_state: state, target_provision_state: target, power_state: 'power on', provision_updated_at: since.toISOString(), driver_internal_info: JSON.stringify(internal), instance_info: JSON.stringify(instance), agent_token_hash: 'a'.repeat(64), created_at: db.store.sqlNow(), updated_at: db.store.sqlNow() } as never)
      .execute();
    return uuid;
  }
  const row = (uuid: string) => db.store.db.selectFrom('nodes').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();

  it("fails each waiting state after its timeout with Ironic's message, the node off and its session ended", async () => {
    const old = new Date(Date.now() - 2 * HOUR);
    const inspect = await waitingNode('inspect wait', 'manageable', old);
    const deploy = await waitingNode('wait call-back', 'active', old);
    const clean = await waitingNode('clean wait', 'available', old, { clean_steps: [{ interface: 'deploy', step: 'erase_devices_metadata' }], clean_step_index: 0, clean_step: { interface: 'deploy', step: 'erase_devices_metadata' } });
    const rescue = await waitingNode('rescue wait', 'rescue', old, {}, { hashed_rescue_password: '$5$x$y' });
    const failed = await checker().runOnce();
    expect(new Set(failed)).toEqual(new Set([inspect, deploy, clean, rescue]));
    expect(await row(inspect)).toMatchObject({ provision_state: 'inspect failed', target_provision_state: 'manageable', power_state: 'power off', agent_token_hash: null, last_error: 'Timeout reached while inspecting the node (waited more than 1800 s)' });
    expect((await row(deploy)).last_error).toBe(`Timeout reached while waiting for callback for node ${deploy} (waited more than 1800 s)`);
    expect((await row(deploy)).provision_state).toBe('deploy failed');
    const cleaned = await row(clean);
    expect(cleaned).toMatchObject({ provision_state: 'clean failed' });
    expect(cleaned.last_error).toContain('Failed on step deploy.erase_devices_metadata.');
    expect(cleaned.driver_internal_info).not.toHaveProperty('clean_step_index');
    const rescued = await row(rescue);
    expect(rescued).toMatchObject({ provision_state: 'rescue failed' });
    expect(rescued.instance_info).not.toHaveProperty('hashed_rescue_password');
    expect(fake.peek(inspect)).toMatchObject({ power: 'power off', prepared: null });
  });

  it("leaves fresh waits, recent heartbeats, other owners' nodes, locked nodes and disabled timeouts alone", async () => {
    const old = new Date(Date.now() - 2 * HOUR);
    const fresh = await waitingNode('inspect wait', 'manageable', new Date());
    const beating = await waitingNode('wait call-back', 'active', old, { agent_last_heartbeat: new Date().toISOString() });
    const foreign = await waitingNode('clean wait', 'available', old);
    owners.set(foreign, 'c2');
    const locked = await waitingNode('inspect wait', 'manageable', old);
    await db.store.db.updateTable('nodes').set({ reservation: 'someone' }).where('uuid', '=', locked).execute();
    const forever = await waitingNode('rescue wait', 'rescue', old);
    expect(await checker({ 'rescue wait': 0 }).runOnce()).toEqual([]);
    for (const uuid of [fresh, beating, foreign, locked, forever]) expect((await row(uuid)).provision_state).toMatch(/wait/);
    // The heartbeat counts, not just the state's start.
    expect(lastSign({ provision_updated_at: old, updated_at: old, driver_internal_info: { agent_last_heartbeat: new Date(old.getTime() + HOUR).toISOString() } })).toBe(old.getTime() + HOUR);
  });
});
