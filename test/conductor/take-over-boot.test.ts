/**
 * Take-over rebuilds what a node boots in its provision state, and nothing else: a real conductor
 * (in process, SQLite, its own boot environment) takes over nodes seeded as another conductor left
 * them, and each node's PXELINUX config must make the right label the default — the instance for
 * `active`, the deploy ramdisk for a node whose ramdisk is to call back or is being cleaned,
 * inspected or rescued. Those need no instance images: without `instance_info` they are taken over
 * all the same. And a conductor whose own work left a node booting from its files (a deploy) does
 * not take that node over again: the release that ended the work set the affinity, once.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/options.js';
import { Conductor } from '../../src/conductor/conductor.js';
import type { PassReport } from '../../src/conductor/reconciler.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { bootNeed } from '../../src/nodes/state-machine.js';
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { pxelinuxPath, seedDeployedNodes, writeTestImages } from '../helpers/takeover.js';
import type { SeededNode, TestImages } from '../helpers/takeover.js';

/** The label each boot need makes the default of a PXELINUX config. */
const LABEL = { deploy: 'deploy', rescue: 'deploy', instance: 'boot_ramdisk' } as const;

/** States a take-over finds a node resting in (working states are resumed, not taken over). */
const RESTING_BOOT_STATES = ['active', 'wait call-back', 'clean wait', 'inspect wait', 'rescue wait', 'rescue'] as const;

describe('take-over rebuilds the boot state of each provision state', () => {
  let target: TestDatabase;
  let store: Store;
  let conductor: Conductor;
  let config: Config;
  let dataDir: string;
  let images: TestImages;

  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-takeover-boot-'));
    images = writeTestImages(path.join(dataDir, 'images'));
    config = loadConfig({
      env: testConductorEnv(path.join(dataDir, 'conductor'), {
        IRONRING_HOST: 'cond-1',
        IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: path.join(dataDir, 'images'),
        IRONRING_CONDUCTOR_SYNC_LOCAL_STATE_INTERVAL: '0',
      }),
    }).config;
    conductor = new Conductor({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    await conductor.start();
    await waitUntil(() => conductor.reconciler.last !== null, 20_000, 'the start pass');
  });
  afterEach(async () => {
    await conductor.stop();
    await store.close();
    await target.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The report of a pass asked for now (not of one already running). */
  const pass = async (): Promise<PassReport> => {
    for (;;) {
      const report = await conductor.reconciler.nextPass();
      if (report.trigger.split(', ').includes('requested')) return report;
    }
  };

  /** The label a node's PXELINUX config boots by default, from this conductor's TFTP root. */
  const activeLabel = (node: SeededNode): string | undefined => {
    const config_ = readFileSync(path.join(config.pxe.tftp_root, pxelinuxPath(node.mac)), 'utf8');
    return /^default (\S+)$/m.exec(config_)?.[1];
  };

  const seed = async (state: string, first: number, columns: Record<string, unknown> = {}) => {
    const [node] = await seedDeployedNodes(store, 1, images, { state, first, columns: { power_state: 'power on', ...columns } });
    return node!;
  };

  it.each(RESTING_BOOT_STATES.map((s, i) => [s, i] as const))('%s: the take-over makes what the state boots the default label', async (state, i) => {
    const node = await seed(state, 100 + i);
    const report = await pass();
    expect(report).toMatchObject({ takenOver: 1, failed: 0, pending: 0 });
    const need = bootNeed(state);
    expect(need).not.toBe('none');
    expect(activeLabel(node)).toBe(LABEL[need as keyof typeof LABEL]);
    const row = await store.db.selectFrom('nodes').select(['conductor_affinity', 'reservation', 'provision_state']).where('uuid', '=', node.uuid).executeTakeFirstOrThrow();
    expect(row).toEqual({ conductor_affinity: conductor.id, reservation: null, provision_state: state });
  });

  it('takes over a waiting or rescued node without instance_info, on the first pass, with the deploy ramdisk', async () => {
    const states = ['clean wait', 'inspect wait', 'rescue wait', 'rescue'];
    const nodes = await Promise.all(states.map((state, i) => seed(state, 200 + i, { instance_info: '{}', instance_uuid: null })));
    const report = await pass();
    expect(report).toMatchObject({ takenOver: states.length, failed: 0, backingOff: 0 });
    for (const node of nodes) expect(activeLabel(node)).toBe('deploy');
    const errors = await store.db.selectFrom('node_history').select('event').where('severity', '=', 'ERROR').execute();
    expect(errors).toEqual([]);
  });

  it('does not take over its own freshly deployed node: one affinity write, by the deploy', async () => {
    const [node] = await seedDeployedNodes(store, 1, images, { state: 'available', first: 400, columns: { instance_uuid: null, power_state: 'power off' } });
    await store.db.updateTable('nodes').set({ boot_interface: null, deploy_interface: null }).where('uuid', '=', node!.uuid).execute();
    await pass();
    await conductor.operations.provision(node!.uuid, 'deploy');
    await Promise.all([...conductor.operations.running]);
    const deployed = await store.db.selectFrom('nodes').select(['provision_state', 'conductor_affinity', 'reservation', 'updated_at']).where('uuid', '=', node!.uuid).executeTakeFirstOrThrow();
    expect(deployed).toMatchObject({ provision_state: 'active', conductor_affinity: conductor.id, reservation: null });
    const report = await pass();
    expect(report).toMatchObject({ takenOver: 0, failed: 0, pending: 0, owned: 1 });
    expect((await conductor.metrics.takeovers.get()).values[0]?.value ?? 0).toBe(0);
    const after = await store.db.selectFrom('nodes').select('updated_at').where('uuid', '=', node!.uuid).executeTakeFirstOrThrow();
    expect(after.updated_at).toEqual(deployed.updated_at);
    const events = await store.db.selectFrom('node_history').select('event').where('event', 'like', 'boot state taken over%').execute();
    expect(events).toEqual([]);
  });

  it('takes over an active node without instance images as a failure to retry, not as a deploy ramdisk', async () => {
    const node = await seed('active', 300, { instance_info: '{}' });
    const report = await pass();
    expect(report).toMatchObject({ takenOver: 0, failed: 1 });
    const row = await store.db.selectFrom('nodes').select(['conductor_affinity', 'reservation']).where('uuid', '=', node.uuid).executeTakeFirstOrThrow();
    expect(row).toEqual({ conductor_affinity: null, reservation: null });
  });
});
