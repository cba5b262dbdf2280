/**
 * The reconciler's per-node decisions, in process, on a real database (issue #21: the mutation run
 * of scripts/mutate.ts found them covered only by process-spawning scenarios). The ring, the boot
 * environment and the deploy interface are recorded stand-ins, so each test can say exactly which
 * node was taken over, resumed, pre-cached or cleaned up, and which was left alone.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ConductorRings } from '../../src/cluster/conductor-rings.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { TaskTracker } from '../../src/cluster/task.js';
import { createLogger } from '../../src/common/logger.js';
import { ConductorMetrics } from '../../src/conductor/metrics.js';
import { Reconciler } from '../../src/conductor/reconciler.js';
import type { PassReport, ReconcilerOptions } from '../../src/conductor/reconciler.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import type { ListenHandlers } from '../../src/db/notifications.js';
import type { DriverRegistry } from '../../src/drivers/registry.js';
import { HashRing } from '../../src/ring/hash-ring.js';
import { waitUntil } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const ME = 'c1';
const HOSTS = ['c1', 'c2', 'c3'];
const ring = new HashRing(HOSTS);
const IMAGES = { driver_info: { deploy_kernel: 'file:///k', deploy_ramdisk: 'file:///r' } };

/** A uuid whose owner (and, with `replica`, second host) on the test ring is as asked. */
function uuidWhere(owner: string, replica?: string): string {
  for (;;) {
    const uuid = randomUUID();
    const [o, r] = ring.lookup(uuid, { replicas: 2 });
    if (o === owner && (replica === undefined || r === replica)) return uuid;
  }
}

interface Harness {
  store: Store;
  reconciler: Reconciler;
  me: number;
  other: number;
  /** Node directories the stand-in boot environment reports. */
  disk: Set<string>;
  cleaned: string[];
  precached: number;
  resumed: string[];
  takenOver: string[];
  /** Calls of the deploy take-over, failed ones included. */
  attempts: number;
  /** Uuids whose deploy take-over throws. */
  failing: Set<string>;
  /** What the boot environment's clean-up reports as removed (default: the node's directory). */
  cleanUpRemoves: boolean;
  ringListeners: Array<(change: { group: string; version: number }) => void>;
  nodeHandlers: ListenHandlers | null;
  /** The stand-in boot environment's sweep (default: nothing to do, finished). */
  sweep: (options: { shouldStop?: () => boolean }) => Promise<{ complete: boolean }>;
  options: ReconcilerOptions;
  addNode(uuid: string, values: Record<string, unknown>): Promise<number>;
}

describe('reconciler decisions (in process, SQLite)', () => {
  let target: TestDatabase;
  let h: Harness;

  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
    const store = await openDatabase(target.url);
    await migrateDatabase(store);
    const me = await registerConductor(store, { hostname: ME, group: '', drivers: ['fake-hardware'] }, 60);
    const other = await registerConductor(store, { hostname: 'c2', group: '', drivers: ['fake-hardware'] }, 60);
    const harness: Partial<Harness> = {
      store,
      me,
      other,
      disk: new Set(),
      cleaned: [],
      precached: 0,
      resumed: [],
      takenOver: [],
      failing: new Set(),
      attempts: 0,
      cleanUpRemoves: true,
      ringListeners: [],
      nodeHandlers: null,
      sweep: async () => ({ complete: true }),
    };
    const hx = harness as Harness;
    const view = {
      version: 1,
      ring: (group: string) => (group === '' ? ring : undefined),
      subscribe: (listener: (change: { group: string; version: number }) => void) => {
        hx.ringListeners.push(listener);
        return () => undefined;
      },
    } as unknown as ConductorRings;
    const boot = {
      listPrepared: async () => [...hx.disk],
      precache: async () => {
        hx.precached += 1;
      },
      cleanUp: async ({ uuid }: { uuid: string }) => {
        hx.cleaned.push(uuid);
        hx.disk.delete(uuid);
        return { removed: hx.cleanUpRemoves ? [uuid] : [], written: [] };
      },
      batch: <T>(fn: () => Promise<T>) => fn(),
      sweep: async (o: { shouldStop?: () => boolean } = {}) => ({ temps: [], danglingLinks: [], dhcp: [], ...(await hx.sweep(o)) }),
    };
    const deploy = {
      prepare: async () => undefined,
      takeOver: async (task: { node: { uuid: string } }) => {
        hx.attempts += 1;
        if (hx.failing.has(task.node.uuid)) throw new Error('take-over refused by the test');
        hx.takenOver.push(task.node.uuid);
        hx.disk.add(task.node.uuid);
      },
    };
    const drivers = { bind: ({ node }: { node: { uuid: string } }) => ({ node, driver: { deploy } }) } as unknown as DriverRegistry;
    // SQLite has no notifications; the stand-in captures the reconciler's handlers to drive them.
    const listeningStore = {
      ...store,
      listen: (_channel: string, handlers: ListenHandlers) => {
        hx.nodeHandlers = handlers;
        return Promise.resolve(null);
      },
    } as Store;
    const options: ReconcilerOptions = {
      store: listeningStore,
      hostname: ME,
      group: '',
      conductorId: () => me,
      view,
      drivers,
      boot: boot as unknown as ReconcilerOptions['boot'],
      tracker: new TaskTracker(),
      resume: async (uuid) => {
        hx.resumed.push(uuid);
        return 'resumed';
      },
      logger: createLogger({ level: 'silent', pretty: false }),
      metrics: new ConductorMetrics({ conductor: ME, conductor_group: '' }),
      replicas: 2,
      workers: 2,
      intervalSeconds: 0,
      // Polling would trigger passes of its own; these tests trigger every pass themselves.
      changePollMs: 3_600_000,
      retryMs: 3_600_000,
      orphanGraceMs: 0,
    };
    hx.options = options;
    hx.reconciler = new Reconciler(options);
    hx.addNode = async (uuid, values) => {
      const row = await store.db
        .insertInto('nodes')
        .values({ uuid, driver: 'fake-hardware', provision_state: 'available', ...values, created_at: store.sqlNow(), updated_at: store.sqlNow() } as never)
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    };
    h = hx;
    // A stopped reconciler does no work: start it (its start pass sees no nodes) before each test.
    await hx.reconciler.start();
    await waitUntil(() => hx.reconciler.last !== null, 20_000, 'the start pass');
  });

  afterEach(async () => {
    vi.useRealTimers();
    await h.reconciler.stop();
    await h.store.close();
    await target.drop();
  });

  /** The report of a pass asked for now (not of one already running), through the reconciler's own loop. */
  const pass = async (verify = false): Promise<PassReport> => {
    for (;;) {
      const report = await h.reconciler.nextPass({ verify });
      if (report.trigger.split(', ').includes('requested')) return report;
    }
  };

  it("a verify pass's sweep gives way to a pass that is waiting, and the next pass finishes it", async () => {
    const asked: boolean[] = [];
    let arrivals = 1;
    h.sweep = async ({ shouldStop }) => {
      // A ring change arrives while the sweep walks the files.
      if (arrivals-- > 0) h.reconciler.trigger('ring change to version 2');
      const stop = shouldStop?.() ?? false;
      asked.push(stop);
      return { complete: !stop };
    };
    await h.reconciler.nextPass({ verify: true });
    // Cut short for the ring change's pass (not a verify pass), which then sweeps to the end.
    await waitUntil(() => asked.length >= 2, 10_000, 'the owed sweep');
    expect(asked).toEqual([true, false]);
    // Owed no longer: a plain pass does not sweep.
    await pass();
    expect(asked).toHaveLength(2);
    await pass(true);
    expect(asked).toEqual([true, false, false]);
  });

  it('a sweep cut short five times in a row runs to its end the sixth time, whatever waits', async () => {
    const asked: boolean[] = [];
    h.sweep = async ({ shouldStop }) => {
      h.reconciler.trigger('node change');
      const stop = shouldStop?.() ?? false;
      asked.push(stop);
      return { complete: !stop };
    };
    await h.reconciler.nextPass({ verify: true });
    await waitUntil(() => asked.length >= 6, 10_000, 'six sweeps');
    expect(asked.slice(0, 6)).toEqual([true, true, true, true, true, false]);
  });

  it('resumes the unlocked work of a departed conductor, never work another conductor holds', async () => {
    const stranded = uuidWhere(ME);
    const held = uuidWhere(ME);
    await h.addNode(stranded, { provision_state: 'deploying' });
    await h.addNode(held, { provision_state: 'deploying', reservation: 'c2' });
    const report = await pass();
    expect(h.resumed).toEqual([stranded]);
    expect(report).toMatchObject({ owned: 2, resumed: 1, pending: 1 });
  });

  it('removes left-over files of an owned node that no longer boots, unless a task holds it', async () => {
    const idle = uuidWhere(ME);
    const locked = uuidWhere(ME);
    await h.addNode(idle, { provision_state: 'available' });
    await h.addNode(locked, { provision_state: 'manageable', reservation: ME });
    h.disk.add(idle).add(locked);
    await pass();
    expect(h.cleaned).toEqual([idle]);
  });

  it('keeps serving a node that moved away until its new owner has taken over, then removes it', async () => {
    const unowned = uuidWhere('c2', 'c3');
    const mine = uuidWhere('c2', 'c3');
    const takenOver = uuidWhere('c2', 'c3');
    await h.addNode(unowned, { provision_state: 'active', conductor_affinity: null });
    await h.addNode(mine, { provision_state: 'active', conductor_affinity: h.me });
    await h.addNode(takenOver, { provision_state: 'active', conductor_affinity: h.other });
    h.disk.add(unowned).add(mine).add(takenOver);
    const report = await pass();
    expect(report.awaitingNewOwner).toBe(2);
    expect(h.cleaned).toEqual([takenOver]);
  });

  it('counts only clean-ups that removed or wrote something', async () => {
    h.cleanUpRemoves = false;
    const gone = randomUUID();
    h.disk.add(gone);
    const report = await pass();
    expect(h.cleaned).toEqual([gone]);
    expect(report.cleanedUp).toBe(0);
  });

  it('removes the files of a node missing from the database once the grace (here 0) is over', async () => {
    const gone = randomUUID();
    h.disk.add(gone);
    const report = await pass();
    expect(h.cleaned).toEqual([gone]);
    expect(report.cleanedUp).toBe(1);
  });

  it('pre-caches a replica node, again on a verify pass, and not on a pass over unchanged nodes', async () => {
    const replicated = uuidWhere('c2', ME);
    await h.addNode(replicated, { provision_state: 'active', ...jsonImages() });
    expect(await pass()).toMatchObject({ replicated: 1, precached: 1 });
    expect(await pass()).toMatchObject({ replicated: 1, precached: 0 });
    expect(await pass(true)).toMatchObject({ replicated: 1, precached: 1 });
    expect(h.precached).toBe(2);
  });

  it('fetches an image set shared by replica nodes once, and not again for a node whose images did not change', async () => {
    const images = (kernel: string) => ({ driver_info: JSON.stringify({ deploy_kernel: kernel, deploy_kernel_checksum: 'k1', deploy_ramdisk: 'file:///r', deploy_ramdisk_checksum: 'r1' }) });
    const a = uuidWhere('c2', ME);
    const b = uuidWhere('c2', ME);
    await h.addNode(a, { provision_state: 'active', ...images('file:///k') });
    await h.addNode(b, { provision_state: 'active', ...images('file:///k') });
    expect(await pass()).toMatchObject({ replicated: 2, precached: 2 });
    expect(h.precached).toBe(1);
    // A new stamp (a take-over elsewhere, say) with the same images: compared, not fetched.
    // SQLite stamps to the millisecond: each write waits a little so that it gets a stamp of its own.
    const later = () => new Promise((resolve) => setTimeout(resolve, 5));
    await later();
    await h.store.db.updateTable('nodes').set({ updated_at: h.store.sqlNow() }).where('uuid', '=', a).execute();
    expect(await pass()).toMatchObject({ precached: 0 });
    expect(h.precached).toBe(1);
    await later();
    await h.store.db.updateTable('nodes').set({ ...images('file:///k2'), updated_at: h.store.sqlNow() } as never).where('uuid', '=', a).execute();
    expect(await pass()).toMatchObject({ precached: 1 });
    expect(h.precached).toBe(2);
  });

  it('takes over an owned network-booted node within the pass, skips it while current, re-checks it on verify', async () => {
    const owned = uuidWhere(ME);
    await h.addNode(owned, { provision_state: 'active' });
    const first = await pass();
    // The pass's report is final when it returns: the take-over is awaited, affinity recorded.
    expect(first.takenOver).toBe(1);
    const row = await h.store.db.selectFrom('nodes').select(['conductor_affinity', 'reservation']).where('uuid', '=', owned).executeTakeFirstOrThrow();
    expect(row).toEqual({ conductor_affinity: h.me, reservation: null });
    expect((await pass()).takenOver).toBe(0);
    expect((await pass(true)).takenOver).toBe(1);
    expect(h.takenOver).toEqual([owned, owned]);
  });

  it('passes again on a write made just after the start pass read the nodes (without notifications, the change poll counts from before that read)', async () => {
    await h.reconciler.stop();
    const owned = uuidWhere(ME);
    await h.addNode(owned, { provision_state: 'active' });
    // The change poll's first look comes 2 s after start, long after the start pass: a baseline
    // taken then would already include the write below, and no pass would follow it.
    const reconciler = new Reconciler({ ...h.options, changePollMs: 2000 });
    try {
      await reconciler.start();
      await waitUntil(() => reconciler.last !== null, 20_000, 'the start pass');
      expect(h.takenOver).toEqual([owned]);
      // Another conductor, deciding on a ring that did not have this one yet, claims the node.
      await h.store.db.updateTable('nodes').set({ conductor_affinity: h.other, updated_at: h.store.sqlNow() }).where('uuid', '=', owned).execute();
      await waitUntil(() => h.takenOver.length === 2, 20_000, 'a pass that takes the node back');
      const row = await h.store.db.selectFrom('nodes').select('conductor_affinity').where('uuid', '=', owned).executeTakeFirstOrThrow();
      expect(row.conductor_affinity).toBe(h.me);
    } finally {
      await reconciler.stop();
    }
  });

  it('takes over again when only a port changed its pxe_enabled flag', async () => {
    const owned = uuidWhere(ME);
    const id = await h.addNode(owned, { provision_state: 'active' });
    await h.store.db.insertInto('ports').values({ uuid: randomUUID(), address: '52:54:00:00:00:01', node_id: id, pxe_enabled: true } as never).execute();
    expect((await pass()).takenOver).toBe(1);
    expect((await pass()).takenOver).toBe(0);
    await h.store.db.updateTable('ports').set({ pxe_enabled: false }).where('node_id', '=', id).execute();
    expect((await pass()).takenOver).toBe(1);
  });

  it('rebuilds the boot files of every state that boots from the network, rescue wait included', async () => {
    const uuids: string[] = [];
    for (const state of ['active', 'wait call-back', 'clean wait', 'inspect wait', 'rescue wait', 'rescue']) {
      const uuid = uuidWhere(ME);
      uuids.push(uuid);
      await h.addNode(uuid, { provision_state: state });
    }
    const report = await pass();
    expect(report.takenOver).toBe(uuids.length);
    expect([...h.takenOver].sort()).toEqual([...uuids].sort());
  });

  it('backs off a node whose take-over failed while its inputs are unchanged', async () => {
    // Time stands still: the back-off (1 s after the first failure) cannot run out between passes.
    vi.useFakeTimers({ toFake: ['Date'] });
    const owned = uuidWhere(ME);
    await h.addNode(owned, { provision_state: 'active' });
    h.failing.add(owned);
    expect((await pass()).takenOver).toBe(0);
    expect(h.attempts).toBe(1);
    h.failing.delete(owned);
    expect(await pass()).toMatchObject({ takenOver: 0, backingOff: 1 });
    expect(h.attempts).toBe(1);
    vi.setSystemTime(Date.now() + 1001);
    expect(await pass()).toMatchObject({ takenOver: 1, backingOff: 0 });
    expect(h.attempts).toBe(2);
  });

  it('passes on a node change notified for its group or for every group, and on its own group\'s ring changes only', async () => {
    const seen = (text: string) => h.reconciler.last !== null && h.reconciler.last.trigger.includes(text);
    h.ringListeners.forEach((l) => l({ group: 'elsewhere', version: 6 }));
    h.ringListeners.forEach((l) => l({ group: '', version: 7 }));
    await waitUntil(() => seen('version 7'), 20_000, 'a pass for the ring change of group ""');
    expect(h.reconciler.last!.trigger).not.toContain('version 6');
    h.nodeHandlers!.onMessage('');
    await waitUntil(() => seen('node change'), 20_000, 'a pass for a node change of every group');
  });

  it('in a named group, passes on a node change notified for every group (the empty payload)', async () => {
    const rack = new Reconciler({ ...h.options, group: 'rack1' });
    try {
      await rack.start();
      await waitUntil(() => rack.last !== null, 20_000, 'the start pass of group rack1');
      h.nodeHandlers!.onMessage('');
      await waitUntil(() => rack.last !== null && rack.last.trigger.includes('node change'), 20_000, 'a pass for a node change of every group');
    } finally {
      await rack.stop();
    }
  });
});

function jsonImages(): Record<string, string> {
  return { driver_info: JSON.stringify(IMAGES.driver_info) };
}
