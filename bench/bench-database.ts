/**
 * A throw-away database for a benchmark: a fresh PostgreSQL schema (dropped afterwards) in the test
 * database, or a SQLite file in a temporary directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export const BENCH_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: BENCH_POSTGRES_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** `name` names the schema (`bench_<name>_<pid>`) or the temporary directory. */
export async function benchDatabase(engine: string, name: string): Promise<BenchDatabase> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(path.join(tmpdir(), `ironring-bench-${name}-`));
    return { url: `sqlite://${path.join(dir, 'bench.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `bench_${name}_${process.pid}`;
  await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  const url = new URL(BENCH_POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), drop: () => adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
}
