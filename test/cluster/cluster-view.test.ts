import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClusterView } from '../../src/cluster/cluster-view.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const logger = createLogger({ level: 'silent', pretty: false });

describe.each(engines)('ClusterView on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let view: ClusterView;

  beforeEach(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    view = new ClusterView(store, { heartbeatTimeout: 60, pollIntervalMs: 60_000, logger });
  });
  afterEach(async () => {
    await view.stop();
    await store.close();
    await target.drop();
  });

  const staleHeartbeat = (hostname: string) =>
    store.db.updateTable('conductors').set({ updated_at: new Date(Date.now() - 3_600_000) }).where('hostname', '=', hostname).execute();

  it('builds one ring per group from live conductors and reports each change once with a new version', async () => {
    await registerConductor(store, { hostname: 'a', group: '', drivers: [] }, 60);
    await registerConductor(store, { hostname: 'r1', group: 'rack1', drivers: [] }, 60);
    const changes: Array<{ group: string; added: readonly string[]; removed: readonly string[]; version: number }> = [];
    view.subscribe((c) => changes.push({ group: c.group, added: c.added, removed: c.removed, version: c.version }));
    await view.start();
    expect(view.rings.groups()).toEqual(['', 'rack1']);
    await view.refresh();
    expect(changes).toHaveLength(2);
    await registerConductor(store, { hostname: 'b', group: '', drivers: [] }, 60);
    await view.refresh();
    expect(changes.at(-1)).toMatchObject({ group: '', added: ['b'], removed: [] });
    await staleHeartbeat('r1');
    await view.refresh();
    expect(changes.at(-1)).toMatchObject({ group: 'rack1', added: [], removed: ['r1'] });
    expect(view.rings.tryRing('rack1')).toBeUndefined();
    expect(changes.map((c) => c.version)).toEqual([1, 2, 3, 4]);
    expect(view.version).toBe(4);
  });

  it('keeps itself in its own ring when its own heartbeat is late, and only itself', async () => {
    await registerConductor(store, { hostname: 'me', group: '', drivers: [] }, 60);
    await registerConductor(store, { hostname: 'other', group: '', drivers: [] }, 60);
    await staleHeartbeat('me');
    await staleHeartbeat('other');
    view.setSelf({ hostname: 'me', group: '', weight: 1 });
    await view.start();
    expect(view.rings.ring('').hosts).toEqual(['me']);
    // Without the self entry (a stopping conductor), its stale row no longer counts.
    view.setSelf(null);
    await view.refresh();
    expect(view.rings.tryRing('')).toBeUndefined();
  });

  it('coalesces a burst of refreshes into at most two reads', async () => {
    await registerConductor(store, { hostname: 'a', group: '', drivers: [] }, 60);
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
});
