import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { conductorMembership, nodeOwners } from '../../src/cluster/conductor-rings.js';
import type { ConductorMember } from '../../src/cluster/conductor-rings.js';
import { LiveRings } from '../../src/cluster/live-rings.js';
import type { LiveRingsOptions } from '../../src/cluster/live-rings.js';
import { MEMBERSHIP_CHANNEL, markOffline, registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import type { Store } from '../../src/db/connect.js';
import { HashRing } from '../../src/ring/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const logger = createLogger({ level: 'silent', pretty: false });
const NODE = { uuid: '5d3f0b7e-3a55-4c0e-9e1b-0c7c2c1f9a10', conductor_group: '' };

/** A conductor row written straight to the table: no notification. */
const sneakIn = (store: Store, hostname: string) => store.db.insertInto('conductors').values({ hostname, online: true, updated_at: store.sqlNow() }).execute();

const until = async (what: () => boolean | Promise<boolean>, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!(await what()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return what();
};

describe.each(engines)('LiveRings over the conductors on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let store: Store;
  const opened: Array<LiveRings<ConductorMember>> = [];
  const rings = (options: Partial<LiveRingsOptions> & { heartbeatTimeout?: number } = {}) => {
    const { heartbeatTimeout = 60, ...rest } = options;
    const r = new LiveRings(store, conductorMembership(store, heartbeatTimeout), { pollIntervalMs: 60_000, logger, ...rest });
    opened.push(r);
    return r;
  };

  beforeEach(() => {
    store = db.store;
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((r) => r.stop()));
  });

  const staleHeartbeat = (hostname: string) =>
    store.db.updateTable('conductors').set({ updated_at: new Date(Date.now() - 3_600_000) }).where('hostname', '=', hostname).execute();

  it('builds one ring per group from live conductors and reports each change once with a new version', async () => {
    const view = rings();
    await registerConductor(store, { hostname: 'a', group: '', drivers: [] }, 60);
    await registerConductor(store, { hostname: 'r1', group: 'rack1', drivers: [] }, 60);
    const changes: Array<{ group: string; added: readonly string[]; removed: readonly string[]; version: number }> = [];
    view.subscribe((c) => changes.push({ group: c.group, added: c.added, removed: c.removed, version: c.version }));
    await view.start();
    expect(view.groups()).toEqual(['', 'rack1']);
    await view.refresh();
    expect(changes).toHaveLength(2);
    await registerConductor(store, { hostname: 'b', group: '', drivers: [] }, 60);
    await view.refresh();
    expect(changes.at(-1)).toMatchObject({ group: '', added: ['b'], removed: [] });
    await staleHeartbeat('r1');
    await view.refresh();
    expect(changes.at(-1)).toMatchObject({ group: 'rack1', added: [], removed: ['r1'] });
    expect(view.ring('rack1')).toBeUndefined();
    expect(view.owner('rack1', NODE.uuid)).toBeNull();
    expect(changes.map((c) => c.version)).toEqual([1, 2, 3, 4]);
    expect(view.version).toBe(4);
  });

  it('answers owners from the ring of the node\'s group: the same as a ring built over the live members', async () => {
    for (const h of ['a', 'b', 'c']) await registerConductor(store, { hostname: h, group: '', drivers: [] }, 60);
    await registerConductor(store, { hostname: 'r1', group: 'rack1', drivers: [] }, 60);
    const view = rings();
    await view.start();
    const reference = new HashRing(['a', 'b', 'c']);
    const keys = Array.from({ length: 50 }, (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`);
    for (const key of keys) {
      expect(view.owner('', key)).toBe(reference.owner(key));
      expect(view.owners('', key, 2)).toEqual(reference.lookup(key, { replicas: 2 }));
      expect(view.owner('rack1', key)).toBe('r1');
      expect(view.owner('nowhere', key)).toBeNull();
    }
    const { owners, counts } = view.ownersMap([...keys.map((k) => ({ k, g: '' })), { k: 'lost', g: 'nowhere' }], (i) => ({ group: i.g, key: i.k }));
    expect(owners.size).toBe(50);
    expect(owners.has('lost')).toBe(false);
    for (const key of keys) expect(owners.get(key)).toBe(reference.owner(key));
    // Every live conductor is counted, one without nodes at zero.
    expect([...counts.keys()].sort()).toEqual(['a', 'b', 'c', 'r1']);
    expect(counts.get('r1')).toBe(0);
    expect(counts.get('a')! + counts.get('b')! + counts.get('c')!).toBe(50);
  });

  it('drops a conductor that stops at once on its announcement, and one that dies when its heartbeat expires by the database clock', async () => {
    await registerConductor(store, { hostname: 'a', group: '', drivers: [] }, 60);
    const b = await registerConductor(store, { hostname: 'b', group: '', drivers: [] }, 60);
    // Heartbeats expire after 2 s; the poll interval (60 s) cannot be what notices.
    const view = rings({ heartbeatTimeout: 2 });
    const removed: string[] = [];
    view.subscribe((c) => removed.push(...c.removed));
    await view.start();
    expect(view.ring('')?.hosts).toEqual(['a', 'b']);
    await markOffline(store, b, 'b');
    // PostgreSQL: the announcement; SQLite has none, so the read is asked for as the next poll would.
    if (engine === 'sqlite') await view.refresh();
    expect(await until(() => removed.includes('b'))).toBe(true);
    expect(view.ring('')?.hosts).toEqual(['a']);
    // 'a' never heartbeats again: the expiry timer reads at its timeout, without a poll or a notification.
    const started = Date.now();
    expect(await until(() => view.ring('') === undefined, 6000)).toBe(true);
    expect(removed).toContain('a');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('keeps itself in its own ring when its own heartbeat is late, and only itself', async () => {
    await registerConductor(store, { hostname: 'me', group: '', drivers: [] }, 60);
    await registerConductor(store, { hostname: 'other', group: '', drivers: [] }, 60);
    await staleHeartbeat('me');
    await staleHeartbeat('other');
    const view = rings();
    view.setSelf({ name: 'me', group: '', weight: 1 });
    await view.start();
    expect(view.ring('')?.hosts).toEqual(['me']);
    // Without the self entry (a stopping conductor), its stale row no longer counts.
    view.setSelf(null);
    await view.refresh();
    expect(view.ring('')).toBeUndefined();
  });

  it('puts itself in its ring before its row exists', async () => {
    const view = rings();
    view.setSelf({ name: 'new', group: 'g', weight: 1 });
    await view.start();
    expect(view.ring('g')?.hosts).toEqual(['new']);
    expect(view.members().map((m) => m.hostname)).toEqual(['new']);
  });

  it('coalesces a burst of refreshes into at most two reads', async () => {
    await registerConductor(store, { hostname: 'a', group: '', drivers: [] }, 60);
    const view = rings();
    await view.start();
    let reads = 0;
    const counting = store.db.selectFrom.bind(store.db);
    (store.db as unknown as { selectFrom: typeof counting }).selectFrom = ((...args: Parameters<typeof counting>) => {
      reads += 1;
      return counting(...args);
    }) as typeof counting;
    await Promise.all(Array.from({ length: 50 }, () => view.refresh()));
    expect(reads).toBeLessThanOrEqual(2);
    expect(reads).toBeGreaterThanOrEqual(1);
  });

  it('keeps the last known rings while membership cannot be read', async () => {
    await registerConductor(store, { hostname: 'a', group: '', drivers: [] }, 60);
    const failing = { fail: false };
    const source = conductorMembership(store, 60);
    const view = new LiveRings(store, { ...source, read: () => (failing.fail ? Promise.reject(new Error('database gone')) : source.read()) }, { pollIntervalMs: 60_000, logger });
    opened.push(view);
    await view.start();
    failing.fail = true;
    await view.refresh();
    expect(view.ring('')?.hosts).toEqual(['a']);
    expect(view.version).toBe(1);
  });

  describe('on demand (the API)', () => {
    it('sees a conductor that registers (and announces itself) at once', async () => {
      const view = rings({ pollIntervalMs: 0, maxAgeMs: 60_000 });
      expect(nodeOwners(await view.current()).owner(NODE)).toBeNull();
      // A conductor is another process: on SQLite another connection (its commit moves the change token).
      const id = await registerConductor(engine === 'postgres' ? store : await db.other(), { hostname: 'c1', group: '', drivers: [], rpcUrl: 'http://c1:6386' }, 60);
      // The announcement reaches the listener asynchronously; the read after it is awaited.
      expect(await until(async () => nodeOwners(await view.current()).owner(NODE) === 'c1')).toBe(true);
      const owners = nodeOwners(await view.current(), 3);
      expect(owners.hostname(id)).toBe('c1');
      expect(owners.rpcUrl('c1')).toBe('http://c1:6386');
      expect(owners.replicas(NODE)).toEqual([]);
    });

    it(engine === 'postgres' ? 'keeps a read between announcements (one read for many requests)' : 'sees a conductor another process writes without an announcement at once (SQLite: its commit moves the change token)', async () => {
      const view = rings({ pollIntervalMs: 0, maxAgeMs: 60_000 });
      await registerConductor(store, { hostname: 'c1', group: '', drivers: [] }, 60);
      expect(await until(async () => nodeOwners(await view.current()).owner(NODE) === 'c1')).toBe(true);
      await sneakIn(engine === 'postgres' ? store : await db.other(), 'c0');
      const c0 = (await store.db.selectFrom('conductors').select('id').where('hostname', '=', 'c0').executeTakeFirstOrThrow()).id;
      if (engine === 'postgres') {
        const version = view.version;
        expect(nodeOwners(await view.current()).hostname(c0)).toBeNull();
        expect(view.version).toBe(version);
        // Any membership announcement makes the next answer read again.
        await store.notify(MEMBERSHIP_CHANNEL, 'test');
        expect(await until(async () => nodeOwners(await view.current()).hostname(c0) === 'c0')).toBe(true);
      } else {
        expect(nodeOwners(await view.current()).hostname(c0)).toBe('c0');
      }
      expect(view.ring('')?.hosts).toEqual(['c0', 'c1']);
    });

    // SQLite only (defined only there, so that PostgreSQL runs report no skip): its change token.
    if (engine === 'sqlite') it('on SQLite, keeps a read until another process commits something or the read is maxAgeMs old', async () => {
      const source = conductorMembership(store, 60);
      let reads = 0;
      const counted = { ...source, read: () => ((reads += 1), source.read()) };
      const view = new LiveRings(store, counted, { pollIntervalMs: 0, maxAgeMs: 60_000, logger });
      opened.push(view);
      await registerConductor(store, { hostname: 'c1', group: '', drivers: [] }, 60);
      await view.current();
      const first = reads;
      for (let i = 0; i < 5; i++) await view.current();
      expect(reads).toBe(first);
      // Another process's commit (another connection: PRAGMA data_version moves).
      const other = await db.other();
      await sneakIn(other, 'c0');
      expect((await view.current()).ring('')?.hosts).toEqual(['c0', 'c1']);
      expect(reads).toBe(first + 1);
      await view.current();
      expect(reads).toBe(first + 1);

      // Nothing committed by another process, but the read is older than maxAgeMs: a heartbeat may
      // have expired since, or this process wrote (its own commits do not move the token).
      const aged = new LiveRings(store, counted, { pollIntervalMs: 0, maxAgeMs: 50, logger });
      opened.push(aged);
      await aged.current();
      const before = reads;
      await staleHeartbeat('c0');
      expect((await aged.current()).ring('')?.hosts).toEqual(['c0', 'c1']);
      expect(reads).toBe(before);
      await new Promise((r) => setTimeout(r, 60));
      expect((await aged.current()).ring('')?.hosts).toEqual(['c1']);
      expect(reads).toBe(before + 1);
    });

    it('reads afresh for `fresh()` whatever it keeps', async () => {
      const view = rings({ pollIntervalMs: 0, maxAgeMs: 60_000 });
      await view.current();
      await sneakIn(store, 'c0');
      expect((await view.fresh()).ring('')?.hosts).toEqual(['c0']);
    });
  });
});
