/**
 * A conductor's node operations in process, on a real database, with the fake hardware type: what
 * each verb writes (state, affinity, history), what it refuses, and that a locked node is left
 * alone. The multi-process scenarios cover the same code through RPC; these say which rule failed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeLocked } from '../../src/cluster/errors.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { nodeStamp } from '../../src/cluster/reservations.js';
import { TaskTracker } from '../../src/cluster/task.js';
import { Conflict } from '../../src/common/errors.js';
import { createLogger } from '../../src/common/logger.js';
import { NodeOperations } from '../../src/conductor/node-operations.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

describe.each(engines)('node operations in process on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let ops: NodeOperations;
  let me: number;
  const made: Array<{ uuid: string; stamp: string }> = [];

  beforeEach(async () => {
    made.length = 0;
    me = await registerConductor(db.store, { hostname: 'c1', group: '', drivers: ['fake-hardware'] }, 60);
    ops = new NodeOperations({
      store: db.store,
      host: 'c1',
      tracker: new TaskTracker(),
      drivers: createDriverRegistry(),
      logger: createLogger({ level: 'silent', pretty: false }),
      retry: { attempts: 1, intervalMs: 10 },
      conductorId: () => me,
      bootStateMade: (uuid, stamp) => made.push({ uuid, stamp }),
    });
  });
  afterEach(async () => {
    await Promise.allSettled([...ops.running]);
  });

  async function addNode(values: Record<string, unknown> = {}): Promise<string> {
    const uuid = crypto.randomUUID();
    await db.store.db
      .insertInto('nodes')
      .values({ uuid, driver: 'fake-hardware', provision_state: 'available', ...values, created_at: db.store.sqlNow(), updated_at: db.store.sqlNow() } as never)
      .execute();
    return uuid;
  }
  const row = (uuid: string) =>
    db.store.db.selectFrom('nodes').select(['provision_state', 'target_provision_state', 'conductor_affinity', 'reservation', 'last_error', nodeStamp]).where('uuid', '=', uuid).executeTakeFirstOrThrow();
  const settle = () => Promise.allSettled([...ops.running]);
  const history = async (uuid: string) =>
    (await db.store.db.selectFrom('node_history').innerJoin('nodes', 'nodes.id', 'node_history.node_id').select(['node_history.event', 'node_history.conductor']).where('nodes.uuid', '=', uuid).orderBy('node_history.id').execute()).map((h) => h.event);

  it('deploys an available node to active, sets affinity in the release, and tells the reconciler the files are current as of that release', async () => {
    const uuid = await addNode();
    await ops.provision(uuid, 'active');
    await settle();
    const after = await row(uuid);
    expect(after).toMatchObject({ provision_state: 'active', target_provision_state: null, conductor_affinity: me, reservation: null, last_error: null });
    expect(made).toEqual([{ uuid, stamp: after.stamp }]);
  });

  it('ends the agent session when stranded work is failed, and when an abort leaves clean wait', async () => {
    const session = { agent_token_hash: 'ab'.repeat(32), driver_internal_info: JSON.stringify({ agent_url: 'http://h:1', agent_last_heartbeat: 't' }) };
    const stranded = await addNode({ provision_state: 'cleaning', target_provision_state: 'available', maintenance: true, ...session });
    expect(await ops.resume(stranded)).toBe('failed');
    const waiting = await addNode({ provision_state: 'clean wait', target_provision_state: 'available', ...session });
    await ops.provision(waiting, 'abort');
    await settle();
    for (const uuid of [stranded, waiting]) {
      const after = await db.store.db.selectFrom('nodes').select(['provision_state', 'agent_token_hash', 'driver_internal_info']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
      expect(after).toEqual({ provision_state: 'clean failed', agent_token_hash: null, driver_internal_info: { agent_last_heartbeat: 't' } });
    }
  });

  it('automated cleaning of a direct node boots its agent and waits in clean wait; with [conductor] automated_clean off it runs nothing and says so', async () => {
    const fake = new FakeHardwareState();
    const withDrivers = (automatedClean: boolean) =>
      new NodeOperations({
        store: db.store,
        host: 'c1',
        tracker: new TaskTracker(),
        drivers: createDriverRegistry({ fakeState: fake, agentApiUrl: 'http://api.example:6385' }),
        logger: createLogger({ level: 'silent', pretty: false }),
        retry: { attempts: 1, intervalMs: 10 },
        automatedClean,
      });
    const on = withDrivers(true);
    const cleaned = await addNode({ provision_state: 'manageable', deploy_interface: 'direct' });
    await on.provision(cleaned, 'provide');
    await Promise.allSettled([...on.running]);
    expect(await row(cleaned)).toMatchObject({ provision_state: 'clean wait', target_provision_state: 'available', last_error: null });
    expect(fake.peek(cleaned)).toMatchObject({ power: 'power on', prepared: 'ramdisk', bootDevice: 'pxe' });
    const internal = (await db.store.db.selectFrom('nodes').select('driver_internal_info').where('uuid', '=', cleaned).executeTakeFirstOrThrow()).driver_internal_info;
    expect(internal).toMatchObject({ clean_steps: [{ interface: 'deploy', step: 'erase_devices_metadata' }], clean_step_index: 0 });

    // An abort tears the clean down: off, the ramdisk's files gone, last_error says who stopped it.
    await on.provision(cleaned, 'abort');
    await Promise.allSettled([...on.running]);
    expect(await row(cleaned)).toMatchObject({ provision_state: 'clean failed', last_error: 'By request, the clean operation was aborted' });
    expect(fake.peek(cleaned)).toMatchObject({ power: 'power off', prepared: null });

    const off = withDrivers(false);
    const skipped = await addNode({ provision_state: 'manageable', deploy_interface: 'direct' });
    await off.provision(skipped, 'provide');
    await Promise.allSettled([...off.running]);
    expect(await row(skipped)).toMatchObject({ provision_state: 'available', last_error: null });
    expect(fake.peek(skipped)?.powerOns ?? 0).toBe(0);
    expect(await history(skipped)).toContain('automated cleaning is disabled ([conductor] automated_clean = false); nothing was run');
  });

  it('undeploys an active node to available; affinity is not claimed for a node that no longer boots from here', async () => {
    const uuid = await addNode({ provision_state: 'active', conductor_affinity: null });
    await ops.provision(uuid, 'deleted');
    await settle();
    expect(await row(uuid)).toMatchObject({ provision_state: 'available', conductor_affinity: null, reservation: null });
    expect(made).toEqual([]);
  });

  it('refuses any verb on a node another conductor holds, and changes nothing', async () => {
    const uuid = await addNode({ reservation: 'c2' });
    const before = await row(uuid);
    await expect(ops.provision(uuid, 'active')).rejects.toThrow(NodeLocked);
    await expect(ops.power(uuid, 'power on')).rejects.toThrow(NodeLocked);
    await expect(ops.update(uuid, [{ op: 'add', path: '/extra/a', value: 1 }])).rejects.toThrow(NodeLocked);
    expect(await row(uuid)).toEqual(before);
  });

  it('refuses to delete a node outside the states Ironic allows, naming them', async () => {
    const uuid = await addNode({ provision_state: 'active' });
    const err = await ops.destroy(uuid).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(Conflict);
    expect((err as Error).message).toBe(`node ${uuid} cannot be deleted in provision state "active"; allowed in: available, manageable, enroll, adopt failed`);
    expect(await row(uuid)).toMatchObject({ provision_state: 'active', reservation: null });
  });

  it('refuses an action the state machine does not allow from the node\'s state, leaving it unlocked', async () => {
    const uuid = await addNode({ provision_state: 'enroll' });
    await expect(ops.provision(uuid, 'active')).rejects.toThrow(/enroll/);
    expect(await row(uuid)).toMatchObject({ provision_state: 'enroll', reservation: null });
  });

  it('records the provision moves in the node history, by this conductor', async () => {
    const uuid = await addNode();
    await ops.provision(uuid, 'active');
    await settle();
    const events = await history(uuid);
    expect(events).toEqual(['active: available → deploying', 'deploying → active']);
    const rows = await db.store.db.selectFrom('node_history').select('conductor').execute();
    expect(new Set(rows.map((r) => r.conductor))).toEqual(new Set(['c1']));
  });

  it('adopts a manageable node as its BMC reports it, recording power and boot device, without deploying', async () => {
    const uuid = await addNode({ provision_state: 'manageable' });
    await ops.provision(uuid, 'adopt');
    await settle();
    expect(await row(uuid)).toMatchObject({ provision_state: 'active', target_provision_state: null, last_error: null });
    const events = await history(uuid);
    expect(events).toEqual(['adopt: manageable → adopting', 'adopted: the BMC says power off, boot device pxe (once)', 'adopting → active']);
  });
});
