/**
 * Scenario 4 (issue #8): five `ironring manage cell discover-hosts --by-service` processes at once,
 * on PostgreSQL and on one SQLite file. Nova fails such runs with "Host mapping already exists"
 * (exit 2); here every run exits 0 and each host is mapped exactly once.
 *
 * Discovery takes milliseconds and a process takes about a second to start, so left alone the first
 * process would map everything before the others look. The test holds the write lock until every
 * process has printed `Found 2000 unmapped computes` (--verbose prints it once it has read the
 * unmapped hosts, before it maps any): all five are then inside the read-then-insert window at
 * once, each about to insert the same 2,000 mappings — the collision Nova fails on, asserted here
 * rather than hoped for, with no waiting for a fixed time.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { CellStores, createCell } from '../../src/cells/index.js';
import { openDatabase } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';

const engines = await testEngines();
const HOSTS = 2000;
const PROCESSES = 5;

// What a test that fails part-way leaves behind (the lock held, processes waiting on it).
const leftovers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of leftovers.splice(0).reverse()) await cleanup();
});

for (const engine of engines) {
  describe(`concurrent discovery on ${engine}`, () => {
    it(`maps each of ${HOSTS} hosts exactly once when ${PROCESSES} processes discover at once, all exiting 0`, { timeout: 150_000 }, async () => {
      const target = await createTestDatabase(engine);
      const dir = mkdtempSync(path.join(tmpdir(), 'ironring-discover-'));
      const store = await openDatabase(target.url);
      const cells = new CellStores();
      cells.share(target.url, store);
      try {
        await migrateDatabase(store, ['api', 'cell']);
        await createCell(store, cells, { name: 'cell1', databaseConnection: target.url });
        const host = (i: number) => `compute-${String(i).padStart(4, '0')}`;
        await store.db
          .insertInto('services')
          .values(Array.from({ length: HOSTS }, (_, i) => ({ uuid: randomUUID(), host: host(i), binary: 'ironring-compute' })))
          .execute();
        // Half the hosts also have nodes, so both tables are marked concurrently.
        await store.db
          .insertInto('compute_nodes')
          .values(Array.from({ length: HOSTS }, (_, i) => ({ uuid: randomUUID(), host: host(i % (HOSTS / 2)), hypervisor_hostname: `n${i}` })))
          .execute();

        const gate = await holdWriteLock(engine, target.url);
        leftovers.push(() => gate.release());
        const runs = Array.from({ length: PROCESSES }, () =>
          startCli(['manage', 'cell', 'discover-hosts', '--by-service', '--verbose', '--api-database', target.url, '-f', 'json'], {
            cwd: dir,
            env: { IRONRING_DATABASE_SQLITE_BUSY_TIMEOUT: '600000' },
          }),
        );
        leftovers.push(() => runs.forEach((r) => r.child.kill('SIGKILL')));
        // The barrier: each has read all the unmapped hosts (none can have been mapped: the lock is ours).
        const found = await Promise.all(runs.map((r) => readUnmapped(r)));
        expect(found).toEqual(Array.from({ length: PROCESSES }, () => HOSTS));
        await gate.release();
        const codes = await Promise.all(runs.map((r) => r.exited));
        for (const [i, r] of runs.entries()) expect(codes[i], `process ${i}: ${r.stderr()}`).toBe(0);

        const created = runs.flatMap((r) => (JSON.parse(r.stdout()) as { mapped: Array<{ host: string }> }).mapped.map((m) => m.host));
        // Five runs set out to insert the same 2,000 mappings: 8,000 inserts collided, none failed.
        expect(created).toHaveLength(HOSTS);
        expect(new Set(created).size).toBe(HOSTS);
        for (const r of runs) expect(JSON.parse(r.stdout())).toMatchObject({ conflicts: [], failed_cells: [] });

        const mappings = await store.db.selectFrom('host_mappings').select('host').execute();
        expect(mappings).toHaveLength(HOSTS);
        expect(await store.db.selectFrom('services').select('id').where('mapped', '=', false).execute()).toEqual([]);
        expect(await store.db.selectFrom('compute_nodes').select('id').where('mapped', '=', false).execute()).toEqual([]);
      } finally {
        await cells.close();
        await store.close();
        await target.drop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/**
 * How many hosts the run read as unmapped: its `Found N unmapped computes in cell` line, waited
 * for (no time limit: the test's own timeout is the limit). Null if it exits without one.
 */
async function readUnmapped(run: CliProcess): Promise<number | null> {
  const line = /^Found (\d+) unmapped computes in cell: /m;
  let exited = false;
  void run.exited.then(() => (exited = true));
  for (;;) {
    const wasExited = exited;
    const m = line.exec(run.stderr());
    if (m) return Number(m[1]);
    if (wasExited) return null;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Blocks writers to the database until `release()` (idempotent); readers go on. PostgreSQL: an
 * EXCLUSIVE lock on host_mappings. SQLite: an IMMEDIATE transaction on the file.
 */
async function holdWriteLock(engine: string, url: string): Promise<{ release(): Promise<void> }> {
  let released = false;
  if (engine === 'sqlite') {
    const handle = new BetterSqlite3(url.slice('sqlite://'.length));
    handle.exec('begin immediate');
    return {
      async release() {
        if (released) return;
        released = true;
        handle.exec('commit');
        handle.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('begin');
  await client.query('lock table host_mappings in exclusive mode');
  return {
    async release() {
      if (released) return;
      released = true;
      await client.query('commit');
      await client.end();
    },
  };
}
