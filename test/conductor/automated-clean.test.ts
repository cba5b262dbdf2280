/**
 * A node's `automated_clean` (Ironic's API 1.47) where the conductor decides whether automated
 * cleaning runs (`cleaning.ts`, Ironic's `skip_automated_cleaning`): true cleans even with
 * `[conductor] automated_clean` off, false skips it even with the option on, null follows the
 * option. A direct-deploy node shows whether it ran: its automated step (`erase_devices_metadata`)
 * boots the agent and leaves the node in `clean wait`; a skipped clean goes straight to
 * `available` with the machine untouched and the history naming why.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerConductor } from '../../src/cluster/membership.js';
import { TaskTracker } from '../../src/cluster/task.js';
import { createLogger } from '../../src/common/logger.js';
import { automatedCleaningOn } from '../../src/conductor/cleaning.js';
import { NodeOperations } from '../../src/conductor/node-operations.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

describe('automatedCleaningOn (Ironic\'s skip_automated_cleaning, negated)', () => {
  it('lets the node\'s true or false override the configuration, and null defer to it', () => {
    for (const configured of [true, false]) {
      expect(automatedCleaningOn(true, configured)).toBe(true);
      expect(automatedCleaningOn(false, configured)).toBe(false);
      expect(automatedCleaningOn(null, configured)).toBe(configured);
    }
  });
});

describe.each(engines)('a node\'s automated_clean in the conductor on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const conductors: NodeOperations[] = [];
  beforeEach(async () => {
    await registerConductor(db.store, { hostname: 'c1', group: '', drivers: ['fake-hardware'] }, 60);
  });
  afterEach(async () => {
    await Promise.allSettled(conductors.flatMap((c) => [...c.running]));
    conductors.length = 0;
  });

  /** The node operations of conductor c1 with this `[conductor] automated_clean`. */
  function conductor(automatedClean: boolean, fake: FakeHardwareState): NodeOperations {
    const ops = new NodeOperations({
      store: db.store,
      host: 'c1',
      tracker: new TaskTracker(),
      drivers: createDriverRegistry({ fakeState: fake, agentApiUrl: 'http://api.example:6385' }),
      logger: createLogger({ level: 'silent', pretty: false }),
      retry: { attempts: 1, intervalMs: 10 },
      automatedClean,
    });
    conductors.push(ops);
    return ops;
  }

  async function addNode(values: Record<string, unknown>): Promise<string> {
    const uuid = crypto.randomUUID();
    await db.store.db
      .insertInto('nodes')
      .values({ uuid, driver: 'fake-hardware', ...values, created_at: db.store.sqlNow(), updated_at: db.store.sqlNow() } as never)
      .execute();
    return uuid;
  }
  const node = (uuid: string) => db.store.db.selectFrom('nodes').select(['provision_state', 'last_error', 'automated_clean', 'driver_internal_info']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
  const history = async (uuid: string) =>
    (await db.store.db.selectFrom('node_history').innerJoin('nodes', 'nodes.id', 'node_history.node_id').select('node_history.event').where('nodes.uuid', '=', uuid).orderBy('node_history.id').execute()).map((h) => h.event);

  /** Provides a manageable direct-deploy node with this `automated_clean`; answers where it ended up. */
  async function provide(configured: boolean, automatedClean: boolean | null) {
    const fake = new FakeHardwareState();
    const ops = conductor(configured, fake);
    const uuid = await addNode({ provision_state: 'manageable', deploy_interface: 'direct', automated_clean: automatedClean });
    await ops.provision(uuid, 'provide');
    await Promise.allSettled([...ops.running]);
    return { uuid, fake, after: await node(uuid), events: await history(uuid) };
  }

  it('cleans a node whose automated_clean is true though [conductor] automated_clean is off', async () => {
    const { uuid, fake, after } = await provide(false, true);
    expect(after).toMatchObject({ provision_state: 'clean wait', last_error: null, automated_clean: true });
    expect(after.driver_internal_info).toMatchObject({ clean_steps: [{ interface: 'deploy', step: 'erase_devices_metadata' }], clean_step_index: 0 });
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', prepared: 'ramdisk' });
  });

  it('skips cleaning a node whose automated_clean is false though [conductor] automated_clean is on, saying why', async () => {
    const { uuid, fake, after, events } = await provide(true, false);
    expect(after).toMatchObject({ provision_state: 'available', last_error: null, automated_clean: false });
    expect(after.driver_internal_info).toMatchObject({ clean_steps: [] });
    expect(fake.peek(uuid)?.powerOns ?? 0).toBe(0);
    expect(events).toContain("automated cleaning is disabled (the node's automated_clean = false); nothing was run");
  });

  it('follows [conductor] automated_clean for a node whose automated_clean is null', async () => {
    const on = await provide(true, null);
    expect(on.after).toMatchObject({ provision_state: 'clean wait', automated_clean: null });
    const off = await provide(false, null);
    expect(off.after).toMatchObject({ provision_state: 'available', automated_clean: null });
    expect(off.events).toContain('automated cleaning is disabled ([conductor] automated_clean = false); nothing was run');
  });

  it('skips the clean after an undeploy too, and never a manual clean', async () => {
    const fake = new FakeHardwareState();
    const ops = conductor(true, fake);
    const undeployed = await addNode({ provision_state: 'active', automated_clean: false });
    await ops.provision(undeployed, 'deleted');
    await Promise.allSettled([...ops.running]);
    expect((await node(undeployed)).provision_state).toBe('available');
    expect(await history(undeployed)).toContain("automated cleaning is disabled (the node's automated_clean = false); nothing was run");

    const manual = await addNode({ provision_state: 'manageable', automated_clean: false });
    await ops.provision(manual, 'clean', { cleanSteps: [{ interface: 'deploy', step: 'erase_devices_metadata' }] });
    await Promise.allSettled([...ops.running]);
    expect((await node(manual)).provision_state).toBe('manageable');
    expect(fake.peek(manual)?.cleanSteps).toEqual(['deploy.erase_devices_metadata']);
  });
});
