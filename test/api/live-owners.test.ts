import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LiveOwners } from '../../src/api/live-owners.js';
import { MEMBERSHIP_CHANNEL, registerConductor } from '../../src/cluster/membership.js';
import type { Store } from '../../src/db/connect.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const NODE = { uuid: '5d3f0b7e-3a55-4c0e-9e1b-0c7c2c1f9a10', conductor_group: '' };

/** A conductor row written straight to the table: no notification. */
const sneakIn = (store: Store, hostname: string) => store.db.insertInto('conductors').values({ hostname, online: true, updated_at: store.sqlNow() }).execute();

describe.each(engines)('LiveOwners on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let store: Store;
  let owners: LiveOwners;

  beforeEach(() => {
    store = db.store;
    owners = new LiveOwners(store, { heartbeatTimeout: 60, ring: { mode: 'balanced' } }, 60_000);
  });
  afterEach(() => owners.close());

  it('sees a conductor that registers (and announces itself) at once', async () => {
    expect((await owners.get()).owner(NODE)).toBeNull();
    await registerConductor(store, { hostname: 'c1', group: '', drivers: [] }, 60);
    // The announcement reaches the listener asynchronously; a snapshot is dropped as soon as it does.
    const deadline = Date.now() + 5000;
    while ((await owners.get()).owner(NODE) !== 'c1' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect((await owners.get()).owner(NODE)).toBe('c1');
  });

  it(engine === 'postgres' ? 'keeps a snapshot between announcements (one read for many requests)' : 'reads the conductors for every request (no notifications on SQLite)', async () => {
    await registerConductor(store, { hostname: 'c1', group: '', drivers: [] }, 60);
    const deadline = Date.now() + 5000;
    while ((await owners.get()).owner(NODE) !== 'c1' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const first = await owners.get();
    await sneakIn(store, 'c0');
    const c0 = (await store.db.selectFrom('conductors').select('id').where('hostname', '=', 'c0').executeTakeFirstOrThrow()).id;
    const second = await owners.get();
    if (engine === 'postgres') {
      expect(second).toBe(first);
      expect(second.hostname(c0)).toBeNull();
      // Any membership announcement drops the snapshot.
      await store.notify(MEMBERSHIP_CHANNEL, 'test');
      const until = Date.now() + 5000;
      while ((await owners.get()) === first && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(await owners.get()).not.toBe(first);
    } else {
      expect(second).not.toBe(first);
    }
    expect((await owners.get()).hostname(c0)).toBe('c0');
  });
});
