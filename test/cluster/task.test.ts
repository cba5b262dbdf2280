import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ConductorStopping, NodeLocked, NodeNotFound, NodeNotLocked, SharedTaskWrite, TaskReleased } from '../../src/cluster/errors.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { releaseReservationsOf, reserveNode } from '../../src/cluster/reservations.js';
import { TaskTracker, acquireTask, acquireTasks, releaseTasks, withTask } from '../../src/cluster/task.js';
import type { NodePatch } from '../../src/cluster/task.js';
import type { Store } from '../../src/db/connect.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

/** Lets other promises run; a retry back-off that costs no wall-clock time. */
const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A sleep that never ends on its own: only the abort signal stops it. */
function endlessSleep() {
  const signals: AbortSignal[] = [];
  const sleep = vi.fn(
    (_ms: number, signal: AbortSignal) =>
      new Promise<void>((_resolve, reject) => {
        signals.push(signal);
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      }),
  );
  return { sleep, signals };
}

describe.each(engines)('node tasks on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let store: Store;
  beforeEach(() => {
    store = db.store;
  });

  async function insertNode(values: { reservation?: string | null; extra?: Record<string, unknown> } = {}) {
    return store.db
      .insertInto('nodes')
      .values({
        uuid: randomUUID(),
        reservation: values.reservation ?? null,
        extra: JSON.stringify(values.extra ?? {}),
        driver: 'fake-hardware',
        provision_state: 'available',
        // Far in the past, so that a write's new updated_at is unmistakably the database's "now".
        updated_at: new Date('2000-01-01T00:00:00Z'),
      })
      .returning(['id', 'uuid'])
      .executeTakeFirstOrThrow();
  }

  async function readNode(id: number) {
    return store.db.selectFrom('nodes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }

  describe('exclusive tasks', () => {
    it('hold the reservation, write through it, and give it back on release', async () => {
      const node = await insertNode({ extra: { keep: true } });
      const task = await acquireTask(store, node.uuid, { host: 'c1', purpose: 'power on' });
      expect(task.shared).toBe(false);
      expect(task.node.reservation).toBe('c1');
      expect((await readNode(node.id)).reservation).toBe('c1');

      const before = await store.now();
      const row = await task.update({ power_state: 'power on', extra: { keep: true, counter: 1 } });
      expect(row).toMatchObject({ power_state: 'power on', extra: { keep: true, counter: 1 }, reservation: 'c1' });
      expect(task.node).toEqual(row);
      const stored = await readNode(node.id);
      expect(stored.power_state).toBe('power on');
      expect(stored.extra).toEqual({ keep: true, counter: 1 });
      expect(stored.updated_at.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1);

      await task.release();
      expect(task.released).toBe(true);
      expect((await readNode(node.id)).reservation).toBeNull();
      await task.release();
      expect((await readNode(node.id)).reservation).toBeNull();
    });

    it('throw NodeLocked naming the holder when another conductor has the node', async () => {
      const node = await insertNode({ reservation: 'c-other' });
      const sleep = vi.fn(async () => undefined);
      const err = await acquireTask(store, node.id, { host: 'c1', retry: { attempts: 2, intervalMs: 5, sleep } }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NodeLocked);
      expect(err).toMatchObject({ holder: 'c-other', node: node.uuid });
      expect(sleep).toHaveBeenCalledTimes(1);
    });

    it('throw NodeNotFound for a node that does not exist, shared or not', async () => {
      await expect(acquireTask(store, randomUUID(), { host: 'c1' })).rejects.toBeInstanceOf(NodeNotFound);
      await expect(acquireTask(store, 424_242, { host: 'c1', shared: true })).rejects.toBeInstanceOf(NodeNotFound);
    });

    it('refuse to write once the lock was taken away, and leave the new holder alone on release', async () => {
      const node = await insertNode();
      const task = await acquireTask(store, node.id, { host: 'c1' });
      // Survivors judged c1 dead, released its lock, and c2 took the node.
      await releaseReservationsOf(store, 'c1', { by: 'c2', reason: 'heartbeat expired' });
      await reserveNode(store, node.id, 'c2');

      const err = await task.update({ power_state: 'power off' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NodeNotLocked);
      expect(err).toMatchObject({ host: 'c1', holder: 'c2' });
      expect((await readNode(node.id)).power_state).toBeNull();

      await task.release();
      expect((await readNode(node.id)).reservation).toBe('c2');
    });

    it('refuse writes after release', async () => {
      const node = await insertNode();
      const task = await acquireTask(store, node.id, { host: 'c1' });
      await task.release();
      await expect(task.update({ power_state: 'power on' })).rejects.toBeInstanceOf(TaskReleased);
      await expect(task.recordHistory({ eventType: 'power', severity: 'INFO', event: 'late' })).rejects.toBeInstanceOf(TaskReleased);
      expect((await readNode(node.id)).power_state).toBeNull();
    });

    it('never let a patch change the lock or the identity of the node', async () => {
      const node = await insertNode();
      const task = await acquireTask(store, node.id, { host: 'c1' });
      // Built elsewhere, as from a row spread: the type checker does not see the extra keys.
      const sneaky = { power_state: 'power on', reservation: null, uuid: 'not-a-uuid' } as unknown as NodePatch;
      await task.update(sneaky);
      const stored = await readNode(node.id);
      expect(stored).toMatchObject({ power_state: 'power on', reservation: 'c1', uuid: node.uuid });
      await task.release();
    });

    it('record history entries as the task host', async () => {
      const node = await insertNode();
      await withTask(store, node.id, { host: 'c1' }, (task) =>
        task.recordHistory({ eventType: 'power', severity: 'ERROR', event: 'BMC did not answer', user: 'admin' }),
      );
      const history = await store.db.selectFrom('node_history').selectAll().execute();
      expect(history).toHaveLength(1);
      expect(history[0]).toMatchObject({ node_id: node.id, conductor: 'c1', event_type: 'power', severity: 'ERROR', event: 'BMC did not answer', user: 'admin' });
    });
  });

  describe('batches of tasks (take-over)', () => {
    /** A conductor row for `conductor_affinity` to name. */
    const conductorRow = (hostname: string) => registerConductor(store, { hostname, group: '', drivers: ['fake-hardware'] }, 60);
    const stampOf = async (id: number) =>
      (await store.db.selectFrom('nodes').select(sql<string>`cast(updated_at as text)`.as('stamp')).where('id', '=', id).executeTakeFirstOrThrow()).stamp;

    it('lock the free nodes in one go, as tasks the tracker waits for, and leave held ones alone', async () => {
      const free = [await insertNode(), await insertNode()];
      const held = await insertNode({ reservation: 'c2' });
      const tracker = new TaskTracker();
      const { tasks, changed } = await acquireTasks(store, [...free, held].map((n) => n.id), { host: 'c1', tracker, purpose: 'take over' });
      expect(tasks.map((t) => t.node.uuid).sort()).toEqual(free.map((n) => n.uuid).sort());
      expect(changed).toEqual([]);
      expect(tracker.tasks().map((t) => t.purpose)).toEqual(['take over', 'take over']);
      expect((await readNode(held.id)).reservation).toBe('c2');
      const released = await releaseTasks(store, tasks);
      expect(released.map((r) => r.uuid).sort()).toEqual(free.map((n) => n.uuid).sort());
      expect(tracker.active).toBe(0);
      expect(tasks.every((t) => t.released)).toBe(true);
      for (const n of free) expect((await readNode(n.id)).reservation).toBeNull();
    });

    it('skip, and unlock again, a node written between the read and the lock', async () => {
      const same = await insertNode();
      const moved = await insertNode();
      const read = new Map([
        [same.id, await stampOf(same.id)],
        [moved.id, await stampOf(moved.id)],
      ]);
      // Someone else's change lands after the caller read the rows and before it locks them.
      await withTask(store, moved.id, { host: 'c2' }, (task) => task.update({ provision_state: 'manageable' }));
      const tracker = new TaskTracker();
      const { tasks, changed } = await acquireTasks(store, [same.id, moved.id], { host: 'c1', tracker, unchangedSince: read });
      expect(tasks.map((t) => t.node.id)).toEqual([same.id]);
      expect(changed.map((n) => n.id)).toEqual([moved.id]);
      expect(tracker.active).toBe(1);
      expect(await readNode(moved.id)).toMatchObject({ reservation: null, provision_state: 'manageable' });
      await releaseTasks(store, tasks);
    });

    it('set conductor_affinity only in the release, only where the lock is still held', async () => {
      const kept = await insertNode();
      const lost = await insertNode();
      const { tasks } = await acquireTasks(store, [kept.id, lost.id], { host: 'c1' });
      // Survivors judged c1 dead and another conductor took the node meanwhile.
      await releaseReservationsOf(store, 'c1', { by: 'c3', reason: 'test' });
      await reserveNode(store, kept.id, 'c1', { attempts: 1 });
      await reserveNode(store, lost.id, 'c2', { attempts: 1 });
      const me = await conductorRow('c1');
      const released = await releaseTasks(store, tasks, { affinity: me });
      expect(released.map((r) => r.id)).toEqual([kept.id]);
      expect(released[0]!.stamp).toBe(await stampOf(kept.id));
      expect(await readNode(kept.id)).toMatchObject({ reservation: null, conductor_affinity: me });
      expect(await readNode(lost.id)).toMatchObject({ reservation: 'c2', conductor_affinity: null });
    });

    it('are refused while the tracker drains', async () => {
      const node = await insertNode();
      const tracker = new TaskTracker();
      tracker.drain();
      await expect(acquireTasks(store, [node.id], { host: 'c1', tracker })).rejects.toBeInstanceOf(ConductorStopping);
      expect((await readNode(node.id)).reservation).toBeNull();
    });

    it('never let a task patch write conductor_affinity: only a release says where the boot files are', async () => {
      const node = await insertNode();
      const me = await conductorRow('c1');
      const task = await acquireTask(store, node.id, { host: 'c1' });
      await task.update({ power_state: 'power on', conductor_affinity: me } as unknown as NodePatch);
      expect(await readNode(node.id)).toMatchObject({ power_state: 'power on', conductor_affinity: null });
      const released = await task.release({ affinity: me });
      expect(released).toMatchObject({ id: node.id, uuid: node.uuid });
      expect(await readNode(node.id)).toMatchObject({ reservation: null, conductor_affinity: me });
      expect(await task.release({ affinity: me })).toBeNull();
    });
  });

  describe('shared tasks', () => {
    it('read a node another conductor holds, without taking its lock', async () => {
      const node = await insertNode({ reservation: 'c-other', extra: { a: 1 } });
      const task = await acquireTask(store, node.uuid, { host: 'c1', shared: true });
      expect(task.shared).toBe(true);
      expect(task.node).toMatchObject({ uuid: node.uuid, reservation: 'c-other', extra: { a: 1 } });
      await task.release();
      expect((await readNode(node.id)).reservation).toBe('c-other');
    });

    it('refuse every write with SharedTaskWrite', async () => {
      const node = await insertNode();
      const task = await acquireTask(store, node.id, { host: 'c1', shared: true, purpose: 'inspect' });
      const err = await task.update({ power_state: 'power on' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SharedTaskWrite);
      expect(err).toMatchObject({ node: node.uuid, httpStatus: 500, userError: false });
      const stored = await readNode(node.id);
      expect(stored.power_state).toBeNull();
      expect(stored.reservation).toBeNull();
    });
  });

  describe('withTask', () => {
    it("returns the function's result and releases the lock", async () => {
      const node = await insertNode();
      const result = await withTask(store, node.id, { host: 'c1' }, async (task) => {
        expect((await readNode(node.id)).reservation).toBe('c1');
        await task.update({ provision_state: 'manageable' });
        return 'done';
      });
      expect(result).toBe('done');
      expect(await readNode(node.id)).toMatchObject({ reservation: null, provision_state: 'manageable' });
    });

    it("releases the lock when the function throws, and rethrows the function's error", async () => {
      const node = await insertNode();
      const boom = new Error('deploy failed');
      await expect(withTask(store, node.id, { host: 'c1' }, () => Promise.reject(boom))).rejects.toBe(boom);
      expect((await readNode(node.id)).reservation).toBeNull();
    });
  });

  describe('TaskTracker', () => {
    it('counts exclusive tasks until they are released, and not shared ones', async () => {
      const a = await insertNode();
      const b = await insertNode();
      const tracker = new TaskTracker();
      const t1 = await acquireTask(store, a.id, { host: 'c1', tracker, purpose: 'deploy' });
      const t2 = await acquireTask(store, b.id, { host: 'c1', tracker });
      const shared = await acquireTask(store, a.id, { host: 'c1', tracker, shared: true });
      expect(tracker.active).toBe(2);
      expect(tracker.tasks()).toEqual([{ node: a.uuid, purpose: 'deploy' }, { node: b.uuid, purpose: undefined }]);
      await shared.release();
      await t1.release();
      await t1.release();
      expect(tracker.active).toBe(1);
      await t2.release();
      expect(tracker.active).toBe(0);
    });

    it('refuses new exclusive tasks once draining, while shared reads and work in flight go on', async () => {
      const a = await insertNode();
      const b = await insertNode();
      const tracker = new TaskTracker();
      const inFlight = await acquireTask(store, a.id, { host: 'c1', tracker });
      tracker.drain();
      await expect(acquireTask(store, b.id, { host: 'c1', tracker })).rejects.toThrow(ConductorStopping);
      expect((await readNode(b.id)).reservation).toBeNull();
      const shared = await acquireTask(store, b.id, { host: 'c1', tracker, shared: true });
      await shared.release();
      await inFlight.update({ last_error: 'still writing' });
      await inFlight.release();
      expect(tracker.active).toBe(0);
    });

    it('waitIdle resolves true as soon as the last locked task is released, and stops its timer', async () => {
      const node = await insertNode();
      const { sleep, signals } = endlessSleep();
      const tracker = new TaskTracker({ sleep });
      const task = await acquireTask(store, node.id, { host: 'c1', tracker });
      const idle = tracker.waitIdle(30_000);
      await task.release();
      expect(await idle).toBe(true);
      expect(sleep).toHaveBeenCalledWith(30_000, expect.any(AbortSignal));
      expect(signals.every((s) => s.aborted)).toBe(true);
    });

    it('waitIdle resolves false at the deadline while locked work is still running', async () => {
      const node = await insertNode();
      const tracker = new TaskTracker({ sleep: async () => undefined });
      const task = await acquireTask(store, node.id, { host: 'c1', tracker });
      expect(await tracker.waitIdle(5_000)).toBe(false);
      expect(tracker.active).toBe(1);
      await task.release();
      expect(await tracker.waitIdle(5_000)).toBe(true);
    });

    it('waitIdle resolves true at once with nothing in flight', async () => {
      const { sleep } = endlessSleep();
      expect(await new TaskTracker({ sleep }).waitIdle(1_000)).toBe(true);
      expect(sleep).not.toHaveBeenCalled();
    });
  });

  it('lets exactly one of many concurrent lockers hold a node at a time, losing no update', async () => {
    const node = await insertNode({ extra: { counter: 0 } });
    const stores = [store];
    for (let i = 1; i < 4; i++) {
      const s = await db.other();
      stores.push(s);
    }
    const rounds = 5;
    let holding = false;
    let overlaps = 0;
    let acquired = 0;
    let locked = 0;
    let retries = 0;
    const retry = {
      attempts: 500,
      intervalMs: 1,
      sleep: async () => {
        retries++;
        await yieldTurn();
      },
    };

    async function worker(s: Store, host: string): Promise<void> {
      for (let round = 0; round < rounds; round++) {
        let task;
        try {
          task = await acquireTask(s, node.id, { host, retry });
        } catch (err) {
          if (!(err instanceof NodeLocked)) throw err;
          locked++;
          continue;
        }
        if (holding) overlaps++;
        holding = true;
        acquired++;
        const counter = Number(task.node.extra.counter);
        // Give every other worker the chance to try the lock while it is held.
        await yieldTurn();
        await task.update({ extra: { counter: counter + 1 } });
        holding = false;
        await task.release();
      }
    }

    await Promise.all(
      stores.flatMap((s, i) => Array.from({ length: 10 }, (_, w) => worker(s, `conductor-${i}-${w % 2}`))),
    );

    expect(overlaps).toBe(0);
    expect(acquired + locked).toBe(4 * 10 * rounds);
    expect(acquired).toBeGreaterThan(0);
    // The lock really was contended: workers had to back off and retry.
    expect(retries).toBeGreaterThan(0);
    const final = await readNode(node.id);
    expect(final.extra).toEqual({ counter: acquired });
    expect(final.reservation).toBeNull();
  });
});
