import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { DatabaseUnavailable, DatabaseUrlError } from '../../src/common/errors.js';
import { maskUrl } from '../../src/common/mask.js';
import { openDatabase, parseDatabaseUrl } from '../../src/db/connect.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';

const engines = await testEngines();

describe('parseDatabaseUrl', () => {
  it('reads SQLite paths: absolute with three or four slashes, relative without, and memory', () => {
    expect(parseDatabaseUrl('sqlite:///var/lib/ironring/ironring.db')).toMatchObject({ engine: 'sqlite', file: '/var/lib/ironring/ironring.db' });
    expect(parseDatabaseUrl('sqlite:////var/lib/ironring/ironring.db')).toMatchObject({ engine: 'sqlite', file: '/var/lib/ironring/ironring.db' });
    expect(parseDatabaseUrl('sqlite:data/x.db', '/srv')).toMatchObject({ engine: 'sqlite', file: '/srv/data/x.db' });
    expect(parseDatabaseUrl('sqlite::memory:')).toMatchObject({ engine: 'sqlite', file: ':memory:' });
  });

  it('reads PostgreSQL URLs, including SQLAlchemy driver suffixes from Ironic configs', () => {
    expect(parseDatabaseUrl('postgres://u:p@db:5432/ironring')).toMatchObject({ engine: 'postgres', connectionString: 'postgres://u:p@db:5432/ironring' });
    expect(parseDatabaseUrl('postgresql+psycopg2://u@db/ironring')).toMatchObject({ engine: 'postgres', connectionString: 'postgres://u@db/ironring' });
  });

  it('rejects unsupported and malformed URLs with the password masked', () => {
    expect(() => parseDatabaseUrl('mysql+pymysql://root:hunter2@db/ironic')).toThrow(DatabaseUrlError);
    expect(() => parseDatabaseUrl('mysql+pymysql://root:hunter2@db/ironic')).toThrow(/unsupported database "mysql" in "mysql\+pymysql:\/\/root:\*\*\*@db\/ironic"/);
    expect(() => parseDatabaseUrl('not a url')).toThrow(/invalid database URL/);
    expect(() => parseDatabaseUrl('postgres:db')).toThrow(/expected postgres:\/\//);
    expect(() => parseDatabaseUrl('sqlite://host/x.db')).toThrow(/sqlite:\/\/\/absolute/);
    expect(() => parseDatabaseUrl('sqlite:')).toThrow(/no file path/);
  });
});

describe('maskUrl', () => {
  it('hides only the password', () => {
    expect(maskUrl('postgres://ironring:pa:ss@db:5432/x')).toBe('postgres://ironring:***@db:5432/x');
    expect(maskUrl('postgres://ironring@db/x')).toBe('postgres://ironring@db/x');
    expect(maskUrl('sqlite:///tmp/x.db')).toBe('sqlite:///tmp/x.db');
  });
});

describe('openDatabase', () => {
  it('says which URL could not be reached and why, password masked', async () => {
    const err = await openDatabase('postgres://ironring:hunter2@127.0.0.1:1/ironring', { connectTimeout: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailable);
    expect((err as Error).message).toBe('cannot connect to database postgres://ironring:***@127.0.0.1:1/ironring: connection refused (is the server running and listening there?)');
  });

  it('refuses an SQLite file in a directory that does not exist', async () => {
    await expect(openDatabase('sqlite:///nonexistent-dir-for-ironring/x.db')).rejects.toThrow(
      'cannot open database sqlite:///nonexistent-dir-for-ironring/x.db: directory /nonexistent-dir-for-ironring does not exist',
    );
  });

  it('opens SQLite in WAL mode with a busy timeout', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-wal-'));
    try {
      const store = await openDatabase(`sqlite://${path.join(dir, 'x.db')}`, { sqliteBusyTimeout: 1234 });
      const { sql } = await import('kysely');
      const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(store.db);
      const timeout = await sql<{ timeout: number }>`pragma busy_timeout`.execute(store.db);
      expect(mode.rows[0]?.journal_mode).toBe('wal');
      expect(timeout.rows[0]?.timeout).toBe(1234);
      await store.close();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(engines)('reads the database clock on %s', async (engine) => {
    const target = await createTestDatabase(engine);
    const store = await openDatabase(target.url);
    try {
      const now = await store.now();
      expect(now).toBeInstanceOf(Date);
      // The database runs on this machine, so its clock agrees with ours to within seconds.
      expect(Math.abs(now.getTime() - Date.now())).toBeLessThan(5000);
    } finally {
      await store.close();
      await target.drop();
    }
  });
});

describe.skipIf(!engines.includes('postgres'))('a PostgreSQL connection lost while lent out', () => {
  it('fails the transaction using it, does not crash the process, and the next query reconnects', async () => {
    const target = await createTestDatabase('postgres');
    const applicationName = `ironring-lost-${process.pid}`;
    const store = await openDatabase(target.url, { applicationName });
    const admin = await openDatabase(target.url);
    const crashes: unknown[] = [];
    const onUncaught = (err: unknown) => crashes.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const outcome = await store.db
        .transaction()
        .execute(async (trx) => {
          await sql`select 1`.execute(trx);
          // The server ends this connection between two statements of the transaction.
          await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${applicationName}`.execute(admin.db);
          await new Promise((resolve) => setTimeout(resolve, 300));
          await sql`select 1`.execute(trx);
          return 'committed';
        })
        .catch((err: Error) => `failed: ${err.message}`);
      expect(outcome).toMatch(/^failed: /);
      expect(crashes).toEqual([]);
      const { rows } = await sql<{ x: number }>`select 2 as x`.execute(store.db);
      expect(rows).toEqual([{ x: 2 }]);
    } finally {
      process.off('uncaughtException', onUncaught);
      await store.close();
      await admin.close();
      await target.drop();
    }
  });
});
