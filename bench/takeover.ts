/**
 * `npm run bench:takeover [-- --json]`: how fast boot state follows the ring (issue #7, DESIGN §8).
 *
 * 10,000 deployed ramdisk nodes (fake hardware, pxe boot, real files), three real `ironring
 * conductor` processes on PostgreSQL. Measured in one run:
 * - start: three conductors build every node's boot state from nothing;
 * - graceful: SIGTERM one; time until every node's `conductor_affinity` is its owner on the new ring
 *   (affinity is written only after the files are on disk and flushed), then the full invariant
 *   checker (files, per-MAC links, replica caches, reservations) is run once to confirm;
 * - rejoin: the stopped conductor comes back with its old files;
 * - crash: kill -9 another; the same, counted from the kill (detection takes heartbeat_timeout).
 * Ironic's time for the same events at its defaults is printed beside ours: a 15 s ring cache, then
 * one `_sync_local_state` run every 180 s taking over 8 nodes, after a 60 s heartbeat timeout for a crash.
 *
 * Options: --json, --nodes N (10000), --heartbeat-timeout S (10), --workers N (conductor
 * sync_local_state_workers, default the option's default), --data-root DIR (where the conductors'
 * data directories are created; default the system's temporary directory).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listConductors, membersByGroup } from '../src/cluster/membership.js';
import { openDatabase } from '../src/db/connect.js';
import type { Store } from '../src/db/connect.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { sql } from 'kysely';
import { HashRing } from '../src/ring/index.js';
import { startConductor } from '../test/helpers/conductors.js';
import type { RunningConductor } from '../test/helpers/conductors.js';
import { checkInvariants, seedDeployedNodes, writeTestImages } from '../test/helpers/takeover.js';
import { benchDatabase } from './bench-database.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const asJson = args.includes('--json');
const NODES = Number(flag('--nodes', '10000'));
// 10 s: with 10,000 nodes, three conductors, PostgreSQL and this process on two shared cores, a 3 s
// timeout lets a loaded conductor's late heartbeat look like a death (the tests use 3 s with 300 nodes).
const HEARTBEAT_TIMEOUT = Number(flag('--heartbeat-timeout', '10'));
const WORKERS = flag('--workers', '');
// Where the conductors' data directories go (default: the system's temporary directory). Creating a
// file costs what the file system makes it cost: see docs/takeover.md for figures by file system.
const DATA_ROOT = flag('--data-root', tmpdir());
const REPLICAS = 2;
// What the conductors use at their defaults (`conductorRingOptions`): balanced mode with its own points per host.
const RING = { mode: 'balanced' as const };
// Ironic at its defaults (REFERENCE.md): hash ring cache 15 s, sync_local_state every 180 s, 8 nodes per run, heartbeat timeout 60 s.
const IRONIC = { ringCacheS: 15, syncIntervalS: 180, nodesPerRun: 8, heartbeatTimeoutS: 60 };

const say = (line: string) => {
  if (!asJson) console.log(line);
};


/**
 * The expected owner of every node for one set of live conductors, loaded into a table of the
 * bench's schema so that each poll is one counting query: recomputing 10,000 owners and reading
 * 10,000 rows into this process every poll took CPU from the conductors being measured.
 */
let expectedFor = '';

async function loadExpected(store: Store, live: ReadonlyArray<{ hostname: string; id: number; conductorGroup: string; weight: number }>): Promise<void> {
  const key = live.map((c) => `${c.conductorGroup}/${c.hostname}/${c.id}`).sort().join(',');
  if (key === expectedFor) return;
  const ids = new Map(live.map((c) => [c.hostname, c.id]));
  const rings = new Map<string, HashRing>();
  for (const [group, members] of membersByGroup(live as Parameters<typeof membersByGroup>[0])) rings.set(group, new HashRing(members, RING));
  const rows = await store.db.selectFrom('nodes').select(['uuid', 'conductor_group']).execute();
  const uuids: string[] = [];
  const owners: Array<number | null> = [];
  for (const n of rows) {
    const owner = rings.get(n.conductor_group)?.lookup(n.uuid)[0];
    uuids.push(n.uuid);
    owners.push(owner === undefined ? null : (ids.get(owner) ?? null));
  }
  await sql`create table if not exists bench_expected (uuid text primary key, conductor_id integer)`.execute(store.db);
  await sql`truncate bench_expected`.execute(store.db);
  await sql`insert into bench_expected select * from unnest(cast(${uuids} as text[]), cast(${owners} as integer[]))`.execute(store.db);
  expectedFor = key;
}

/** Nodes whose affinity is not their owner on the live ring, or still locked; Infinity while a `gone` conductor is still live. */
async function misplaced(store: Store, gone: readonly string[]): Promise<number> {
  const conductors = await listConductors(store, HEARTBEAT_TIMEOUT);
  const live = conductors.filter((c) => c.alive);
  if (gone.some((h) => live.some((c) => c.hostname === h))) return Infinity;
  await loadExpected(store, live);
  const row = await sql<{ n: string }>`
    select count(*) as n from nodes left join bench_expected e on e.uuid = nodes.uuid
    where e.conductor_id is null or nodes.conductor_affinity is distinct from e.conductor_id or nodes.reservation is not null`.execute(store.db);
  return Number(row.rows[0]!.n);
}

async function until(store: Store, gone: readonly string[], timeoutMs: number, what: string): Promise<number> {
  const started = performance.now();
  for (;;) {
    if ((await misplaced(store, gone)) === 0) return (performance.now() - started) / 1000;
    if (performance.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  const db = await benchDatabase('postgres', 'takeover');
  const work = mkdtempSync(path.join(DATA_ROOT, 'ironring-bench-takeover-'));
  const store = await openDatabase(db.url);
  const running: RunningConductor[] = [];
  const dirs = new Map<string, string>();
  try {
    await migrateDatabase(store);
    const images = writeTestImages(path.join(work, 'images'));
    say(`seeding ${NODES} deployed ramdisk nodes…`);
    await seedDeployedNodes(store, NODES, images);
    const start = async (host: string) => {
      if (!dirs.has(host)) dirs.set(host, path.join(work, host));
      const c = await startConductor(db.url, host, {
        dataDir: dirs.get(host)!,
        // BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" profiles each conductor (written when it exits).
        nodeArgs: (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
        env: {
          IRONRING_LOG_LEVEL: process.env.BENCH_LOG_DIR ? (process.env.BENCH_LOG_LEVEL ?? 'info') : 'warn',
          IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT),
          IRONRING_CONDUCTOR_HEARTBEAT_INTERVAL: String(Math.max(1, Math.floor(HEARTBEAT_TIMEOUT / 3))),
          IRONRING_CONDUCTOR_REPLICAS: String(REPLICAS),
          IRONRING_CONDUCTOR_SYNC_LOCAL_STATE_INTERVAL: '0',
          // The shared images live beside the conductors' data directories.
          IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: path.join(work, 'images'),
          ...(WORKERS ? { IRONRING_CONDUCTOR_SYNC_LOCAL_STATE_WORKERS: WORKERS } : {}),
        },
      });
      running.push(c);
      return c;
    };
    const check = async () => {
      const report = await checkInvariants(
        store,
        [...dirs].map(([hostname, dataDir]) => ({ hostname, dataDir })),
        { heartbeatTimeout: HEARTBEAT_TIMEOUT, replicas: REPLICAS, ring: RING, images },
      );
      return report.violations.length;
    };

    let t = performance.now();
    const [, c2, c3] = await Promise.all(['c1', 'c2', 'c3'].map(start));
    // From the conductors' start (t) to every node on its ring owner: `until`'s own count starts
    // later, after the conductors are up, so it is not added to this one.
    await until(store, [], 600_000, 'the initial take-over');
    const initialS = (performance.now() - t) / 1000;
    // Replica caches are filled after take-overs: let them finish before the measured events.
    await new Promise((r) => setTimeout(r, 2000));
    const initialViolations = await check();
    say(`start: 3 conductors prepared ${NODES} nodes in ${initialS.toFixed(2)} s (invariant violations after: ${initialViolations})`);

    const ownersBefore = async () => new Map((await store.db.selectFrom('nodes').select(['uuid', 'conductor_affinity']).execute()).map((r) => [r.uuid, r.conductor_affinity]));
    const moved = async (before: Map<string, number | null>) => {
      let n = 0;
      for (const r of await store.db.selectFrom('nodes').select(['uuid', 'conductor_affinity']).execute()) if (before.get(r.uuid) !== r.conductor_affinity) n += 1;
      return n;
    };

    let before = await ownersBefore();
    t = performance.now();
    c2!.proc.child.kill('SIGTERM');
    const gracefulS = await until(store, ['c2'], 120_000, 'convergence after the graceful stop');
    const gracefulMoved = await moved(before);
    await c2!.proc.exited;
    const gracefulViolations = await check();
    say(`graceful stop of c2: ${gracefulMoved} nodes moved, converged in ${gracefulS.toFixed(3)} s (violations after: ${gracefulViolations})`);

    t = performance.now();
    await start('c2');
    const rejoinS = await until(store, [], 120_000, 'convergence after c2 rejoined');
    await new Promise((r) => setTimeout(r, 2000));
    const rejoinViolations = await check();
    say(`c2 rejoined: converged in ${rejoinS.toFixed(3)} s (violations after clean-up: ${rejoinViolations})`);

    before = await ownersBefore();
    t = performance.now();
    c3!.proc.child.kill('SIGKILL');
    const crashS = await until(store, ['c3'], 120_000, 'convergence after kill -9');
    const crashMoved = await moved(before);
    const crashViolations = await check();
    say(`kill -9 of c3: ${crashMoved} nodes moved, converged in ${crashS.toFixed(3)} s (heartbeat_timeout ${HEARTBEAT_TIMEOUT} s; violations after: ${crashViolations})`);
    void t;

    const ironicGraceful = IRONIC.ringCacheS + Math.ceil(gracefulMoved / IRONIC.nodesPerRun) * IRONIC.syncIntervalS;
    const ironicCrash = IRONIC.heartbeatTimeoutS + IRONIC.ringCacheS + Math.ceil(crashMoved / IRONIC.nodesPerRun) * IRONIC.syncIntervalS;
    const hours = (s: number) => `${(s / 3600).toFixed(1)} h`;
    say(`Ironic at its defaults, same events: graceful ${hours(ironicGraceful)}, crash ${hours(ironicCrash)} (8 nodes per 180 s sweep after a 15 s ring cache; +60 s heartbeat timeout)`);
    const result = {
      bench: 'takeover',
      engine: 'postgres',
      nodes: NODES,
      conductors: 3,
      replicas: REPLICAS,
      heartbeat_timeout_s: HEARTBEAT_TIMEOUT,
      data_root: DATA_ROOT,
      initial_prepare_s: Number(initialS.toFixed(3)),
      graceful_moved: gracefulMoved,
      graceful_convergence_s: Number(gracefulS.toFixed(3)),
      rejoin_convergence_s: Number(rejoinS.toFixed(3)),
      crash_moved: crashMoved,
      crash_convergence_s: Number(crashS.toFixed(3)),
      takeover_nodes_per_s: Math.round(gracefulMoved / gracefulS),
      invariant_violations: { initial: initialViolations, graceful: gracefulViolations, rejoin: rejoinViolations, crash: crashViolations },
      targets: { graceful_convergence_s: 2, crash_convergence_s: HEARTBEAT_TIMEOUT + 2 },
      meets_targets: gracefulS <= 2 && crashS <= HEARTBEAT_TIMEOUT + 2,
      ironic_defaults: { graceful_s: ironicGraceful, crash_s: ironicCrash },
    };
    if (asJson) console.log(JSON.stringify(result));
    else say(JSON.stringify(result, null, 2));
  } finally {
    // BENCH_LOG_DIR=dir keeps each conductor's log.
    if (process.env.BENCH_LOG_DIR) running.forEach((c, i) => writeFileSync(path.join(process.env.BENCH_LOG_DIR!, `${c.host}-${i}.log`), c.proc.stderr()));
    // A graceful stop lets profiling conductors write their profiles; SIGKILL after 15 s regardless.
    for (const c of running) if (c.proc.child.exitCode === null) c.proc.child.kill('SIGTERM');
    const kill = setTimeout(() => running.forEach((c) => c.proc.child.exitCode === null && c.proc.child.kill('SIGKILL')), 15_000);
    await Promise.all(running.map((c) => c.proc.exited));
    clearTimeout(kill);
    await store.close();
    await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
