import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { ServiceRing, planFor } from '../../src/compute/ownership.js';
import { CELL_RING, serviceRing, serviceRings } from '../../src/compute/service-rings.js';
import type { ServiceRings } from '../../src/compute/service-rings.js';
import { COMPUTE_BINARY, markServiceDown, registerService } from '../../src/compute/services.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const logger = createLogger({ level: 'silent', pretty: false });
const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

describe.each(engines)('the compute services\' live ring on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const opened: ServiceRings[] = [];
  const rings = (selfHost: string) => {
    const r = serviceRings(db.store, { selfHost, downTime: 60, pollIntervalMs: 60_000, logger });
    opened.push(r);
    return r;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((r) => r.stop()));
  });
  const stale = (host: string) => db.store.db.updateTable('services').set({ last_seen_up: db.store.sqlSecondsAgo(3600) }).where('host', '=', host).execute();

  it('rings the live services of the cell by lower-cased host, and gives plans the hosts as registered', async () => {
    await registerService(db.store, { host: 'Compute-A', binary: COMPUTE_BINARY }, 60);
    await registerService(db.store, { host: 'b', binary: COMPUTE_BINARY }, 60);
    await registerService(db.store, { host: 'dead', binary: COMPUTE_BINARY }, 60);
    await registerService(db.store, { host: 'sched', binary: 'ironring-scheduler' }, 60);
    await stale('dead');
    const live = rings('b');
    await live.start();
    expect(live.ring(CELL_RING)?.hosts).toEqual(['b', 'compute-a']);
    const ring = serviceRing(live);
    expect(ring.hosts).toEqual(['Compute-A', 'b']);
    // The same owners as a ring built for one plan over the same hosts.
    const reference = ServiceRing.of(['Compute-A', 'b']);
    for (let i = 0; i < 50; i++) expect(ring.owner(uuid(i))).toBe(reference.owner(uuid(i)));
    const nodes = Array.from({ length: 50 }, (_, i) => ({ uuid: uuid(i), resourceClass: 'baremetal' }));
    expect(planFor('b', { ring, nodes, computeNodes: [], instances: [] })).toEqual(planFor('b', { liveHosts: ['Compute-A', 'b'], nodes, computeNodes: [], instances: [] }));
  });

  it('keeps itself in its ring with a late heartbeat or no row, and drops a service that stops', async () => {
    await registerService(db.store, { host: 'me', binary: COMPUTE_BINARY }, 60);
    const other = await registerService(db.store, { host: 'other', binary: COMPUTE_BINARY }, 60);
    await stale('me');
    const live = rings('me');
    const changes: Array<{ added: readonly string[]; removed: readonly string[] }> = [];
    live.subscribe((c) => changes.push({ added: c.added, removed: c.removed }));
    await live.start();
    expect(live.ring(CELL_RING)?.hosts).toEqual(['me', 'other']);
    await markServiceDown(db.store, other);
    await live.refresh();
    expect(live.ring(CELL_RING)?.hosts).toEqual(['me']);
    expect(changes.at(-1)).toEqual({ added: [], removed: ['other'] });

    const newcomer = rings('New-Host');
    await newcomer.start();
    // Its own stale row is no one else's: a newcomer sees only itself.
    expect(serviceRing(newcomer).hosts).toEqual(['New-Host']);
  });
});
