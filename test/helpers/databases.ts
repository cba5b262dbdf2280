/**
 * Databases for tests: every test gets its own, on both engines, and removes it afterwards.
 * SQLite: a fresh file in a temp directory. PostgreSQL: a fresh schema in the `test` database,
 * selected through the connection's `search_path`, dropped at the end.
 *
 * PostgreSQL tests fail when the server is unreachable under CI (`CI=true`). Elsewhere they are
 * still generated and reported as skipped, with the reason as their note and one printed line, so
 * that the closing "N passed, N failed, N skipped" line counts them instead of them vanishing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { TestRunner, afterEach, beforeAll, beforeEach } from 'vitest';
import type { RunnerTask, RunnerTestSuite } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';

export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type TestEngine = 'sqlite' | 'postgres';

let reachability: Promise<string | null> | undefined;

/** Null when PostgreSQL answers; otherwise why not. */
export function postgresProblem(): Promise<string | null> {
  reachability ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('select 1');
      return null;
    } catch (err) {
      return `${POSTGRES_URL}: ${(err as Error).message}`;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return reachability;
}

/** Whether PostgreSQL tests run here; throws under CI when the server is unreachable. */
export async function postgresAvailable(): Promise<boolean> {
  const problem = await postgresProblem();
  if (problem === null) return true;
  if (process.env.CI === 'true') throw new Error(`PostgreSQL is required under CI but unreachable: ${problem}`);
  console.warn(`skipping PostgreSQL tests: ${problem}`);
  return false;
}

/**
 * What marks a describe block or a test as a PostgreSQL one: the `… on %s` convention of
 * `describe.each(await testEngines())` ("nodes API on postgres"), or "(PostgreSQL)" in the name.
 */
export const POSTGRES_TEST_NAME = /\bon postgres(?:ql)?\b|\(postgresql\)/i;

/**
 * Registers, on the suite being collected (the test file, as testEngines() is awaited at its top),
 * a hook that turns every PostgreSQL describe block and test of it into skipped tests noting
 * `reason`. A whole block is skipped by skipping each of its tests and dropping its hooks (its
 * beforeAll would open the unreachable database) rather than by `mode = 'skip'` on the block: the
 * tests of a block skipped that way are reported as neither passed, failed nor skipped.
 */
function skipPostgresTests(reason: string): void {
  const note = `PostgreSQL unreachable: ${reason}`;
  const skipAll = (task: RunnerTask): void => {
    if (task.type === 'test') {
      task.mode = 'skip';
      // `note` (what ctx.skip(note) sets and reporters print) is not in the public TaskResult type.
      const result = { state: 'skip' as const, note };
      task.result = result;
      return;
    }
    const hooks = TestRunner.getSuiteHooks(task);
    for (const list of [hooks.beforeAll, hooks.afterAll, hooks.beforeEach, hooks.afterEach]) list.length = 0;
    task.tasks.forEach(skipAll);
  };
  const visit = (suite: RunnerTestSuite): void => {
    for (const task of suite.tasks) {
      if (POSTGRES_TEST_NAME.test(task.name)) skipAll(task);
      else if (task.type === 'suite') visit(task);
    }
  };
  // eslint-disable-next-line no-empty-pattern -- vitest requires a destructured context before the suite argument
  beforeAll(({}, suite) => visit(suite));
}

/**
 * Opens nothing: when PostgreSQL is unreachable outside CI, skips the running test (a database
 * asked for in a test or a beforeEach) with the reason; elsewhere (a beforeAll of a block whose
 * name does not say PostgreSQL) throws, so that such a test fails rather than vanishes.
 */
async function requirePostgres(): Promise<void> {
  const problem = await postgresProblem();
  if (problem === null) return;
  if (process.env.CI === 'true') throw new Error(`PostgreSQL is required under CI but unreachable: ${problem}`);
  TestRunner.getCurrentTest()?.context.skip(`PostgreSQL unreachable: ${problem}`);
  throw new Error(`PostgreSQL is unreachable (${problem}) and this block is not named as a PostgreSQL one (${String(POSTGRES_TEST_NAME)}), so it could not be skipped`);
}

export interface TestDatabase {
  engine: TestEngine;
  url: string;
  /** Drops the schema / removes the file. */
  drop(): Promise<void>;
}

/** Creates a fresh, empty database on the given engine. */
export async function createTestDatabase(engine: TestEngine): Promise<TestDatabase> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-test-'));
    return {
      engine,
      url: `sqlite://${path.join(dir, 'test.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  await requirePostgres();
  const schema = `t_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    engine,
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * The engines to run a suite on: both, always. Await it at the top of a test file and name the
 * blocks `… on %s`: when PostgreSQL is unreachable, its blocks are reported as skipped with the
 * reason (and under CI this throws instead, failing the file).
 */
export async function testEngines(): Promise<TestEngine[]> {
  if (!(await postgresAvailable())) skipPostgresTests((await postgresProblem())!);
  return ['sqlite', 'postgres'];
}

/**
 * A fresh, migrated database per test for a `describe` block: `db.store` is open on it, `db.other()`
 * opens further handles (closed after the test), and everything is dropped afterwards.
 */
export function useMigratedDatabase(engine: TestEngine): { readonly store: Store; readonly url: string; other(): Promise<Store> } {
  let target: TestDatabase;
  let store: Store;
  const extra: Store[] = [];
  beforeEach(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
  });
  afterEach(async () => {
    await Promise.all(extra.splice(0).map((s) => s.close()));
    await store.close();
    await target.drop();
  });
  return {
    get store() {
      return store;
    },
    get url() {
      return target.url;
    },
    async other() {
      const s = await openDatabase(target.url);
      extra.push(s);
      return s;
    },
  };
}
