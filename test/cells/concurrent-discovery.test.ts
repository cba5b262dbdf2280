/**
 * Scenario 4 (issue #8): five `ironring manage cell discover-hosts --by-service` processes at once,
 * on PostgreSQL and on one SQLite file. Nova fails such runs with "Host mapping already exists"
 * (exit 2); here every run exits 0 and each host is mapped exactly once.
 *
 * Discovery takes milliseconds and a process takes about a second to start, so left alone the first
 * process would map everything before the others look. The test holds the write lock while they
 * start: each reads the same unmapped hosts, then all insert the same mappings the moment the lock
 * is released — the collision Nova fails on.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { CellStores, createCell } from '../../src/cells/index.js';
import { openDatabase } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { startCli } from '../helpers/cli.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';

const engines = await testEngines();
const HOSTS = 2000;
const PROCESSES = 5;

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
        const runs = Array.from({ length: PROCESSES }, () =>
          startCli(['manage', 'cell', 'discover-hosts', '--by-service', '--api-database', target.url, '-f', 'json'], {
            cwd: dir,
            env: { IRONRING_DATABASE_SQLITE_BUSY_TIMEOUT: '60000' },
          }),
        );
        await gate.release();
        const codes = await Promise.all(runs.map((r) => r.exited));
        for (const [i, r] of runs.entries()) expect(codes[i], `process ${i}: ${r.stderr()}`).toBe(0);

        const created = runs.flatMap((r) => (JSON.parse(r.stdout()) as { mapped: Array<{ host: string }> }).mapped.map((m) => m.host));
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
 * Blocks writers to the database until `release()`; readers go on. PostgreSQL: an EXCLUSIVE lock
 * on host_mappings, released once all the processes wait for it. SQLite: an IMMEDIATE transaction
 * on the file, released after the processes had time to start and read.
 */
async function holdWriteLock(engine: string, url: string): Promise<{ release(): Promise<void> }> {
  if (engine === 'sqlite') {
    const handle = new BetterSqlite3(url.slice('sqlite://'.length));
    handle.exec('begin immediate');
    return {
      async release() {
        await new Promise((resolve) => setTimeout(resolve, 6000));
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
      const deadline = Date.now() + 30_000;
      for (;;) {
        // Inside a transaction pg_stat_activity is a snapshot: clear it to see the processes arrive.
        await client.query('select pg_stat_clear_snapshot()');
        const waiting = await client.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where application_name = 'ironring-manage' and wait_event_type = 'Lock'",
        );
        if (waiting.rows[0]!.n >= PROCESSES) break;
        if (Date.now() > deadline) {
          // Never leave the lock held (the processes would hang until the test times out): let them go
          // and let their exit codes and output tell what happened.
          console.warn(`only ${waiting.rows[0]!.n} of ${PROCESSES} processes reached the insert within 30 s; releasing anyway`);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await client.query('commit');
      await client.end();
    },
  };
}
