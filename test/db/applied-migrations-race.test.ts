/**
 * `requireSchema` (every `ironring conductor` and `ironring api` start) on PostgreSQL while another
 * schema of the same database is dropped: it must look at its own schema only. Kysely's migration
 * introspection scans every schema and failed with `schema "…" does not exist` (issue #21: seen as
 * conductors refusing to start while other test files dropped their schemas).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { appliedMigrations, migrateDatabase, requireSchema } from '../../src/db/migrate.js';
import { createTestDatabase, POSTGRES_URL, postgresAvailable } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

describe.skipIf(!(await postgresAvailable()))('requireSchema while other schemas come and go (PostgreSQL)', () => {
  let target: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    target = await createTestDatabase('postgres');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
  });
  afterAll(async () => {
    await store?.close();
    await target?.drop();
  });

  it('never fails because another schema was dropped meanwhile', { timeout: 120_000 }, async () => {
    const expected = await appliedMigrations(store, 'baremetal');
    expect(expected.length).toBeGreaterThan(0);
    const churn = new pg.Client({ connectionString: POSTGRES_URL });
    await churn.connect();
    let stop = false;
    const prefix = `race_${process.pid}_`;
    const churning = (async () => {
      for (let i = 0; !stop; i++) {
        await churn.query(`CREATE SCHEMA ${prefix}${i}; CREATE TABLE ${prefix}${i}.t (id serial primary key, note text)`);
        await churn.query(`DROP SCHEMA ${prefix}${i} CASCADE`);
      }
    })();
    const errors: string[] = [];
    try {
      // Forty rounds reproduce it every time (a third of the calls failed) while keeping the churn, which
      // other test files' own migrations could trip over, to a second or two.
      for (let i = 0; i < 40; i++) {
        await Promise.all([requireSchema(store), requireSchema(store)]).catch((err: Error) => errors.push(err.message));
      }
    } finally {
      stop = true;
      await churning;
      await churn.end();
    }
    expect(errors).toEqual([]);
    expect(await appliedMigrations(store, 'baremetal')).toEqual(expected);
  });
});
