/**
 * Databases for tests: every test gets its own, on both engines, and removes it afterwards.
 * SQLite: a fresh file in a temp directory. PostgreSQL: a fresh schema in the `test` database,
 * selected through the connection's `search_path`, dropped at the end.
 *
 * PostgreSQL tests fail when the server is unreachable under CI (`CI=true`) and are skipped with a
 * printed reason elsewhere.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach } from 'vitest';
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

/** The engines to run a suite on: SQLite always, PostgreSQL when available (or required by CI). */
export async function testEngines(): Promise<TestEngine[]> {
  return (await postgresAvailable()) ? ['sqlite', 'postgres'] : ['sqlite'];
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
