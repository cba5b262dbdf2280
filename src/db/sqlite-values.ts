/**
 * Makes SQLite read and write the same JavaScript values as PostgreSQL does: booleans, `Date`s and
 * parsed JSON. SQLite has no such types (and better-sqlite3 refuses to bind booleans and dates), so
 * this wraps the better-sqlite3 handle Kysely talks to: parameters are converted on the way in,
 * result columns (by name, see `schema.ts`) on the way out. Code above the database layer never
 * sees the difference between the engines.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';
import { BOOLEAN_COLUMNS, JSON_COLUMNS, TIMESTAMP_COLUMNS } from './schema.js';

/** The text form SQLite stores timestamps in; sorts and compares like the instants it names. */
export const SQLITE_TIME_FORMAT = '%Y-%m-%dT%H:%M:%fZ';

function toSqlite(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString();
  return value;
}

function fromSqlite(row: unknown): unknown {
  if (typeof row !== 'object' || row === null) return row;
  const record = row as Record<string, unknown>;
  for (const key in record) {
    const value = record[key];
    if (value === null || value === undefined) continue;
    if (BOOLEAN_COLUMNS.has(key) && typeof value === 'number') record[key] = value !== 0;
    else if (TIMESTAMP_COLUMNS.has(key) && typeof value === 'string') record[key] = new Date(value);
    else if (JSON_COLUMNS.has(key) && typeof value === 'string') record[key] = JSON.parse(value);
  }
  return record;
}

function* mapIterator(it: IterableIterator<unknown>): IterableIterator<unknown> {
  for (const row of it) yield fromSqlite(row);
}

/** Wraps a better-sqlite3 handle for Kysely's `SqliteDialect`. */
export function wrapSqlite(handle: BetterSqlite3.Database): SqliteDatabase {
  return {
    close: () => handle.close(),
    prepare(sql: string): SqliteStatement {
      const stmt = handle.prepare(sql);
      return {
        reader: stmt.reader,
        all: (params) => stmt.all(...params.map(toSqlite)).map(fromSqlite),
        run: (params) => stmt.run(...params.map(toSqlite)),
        iterate: (params) => mapIterator(stmt.iterate(...params.map(toSqlite))),
      };
    },
  };
}
