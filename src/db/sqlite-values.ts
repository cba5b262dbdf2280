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

type Converter = (value: unknown) => unknown;

const toBoolean: Converter = (v) => (typeof v === 'number' ? v !== 0 : v);
const toDate: Converter = (v) => (typeof v === 'string' ? new Date(v) : v);
const toJson: Converter = (v) => (typeof v === 'string' ? JSON.parse(v) : v);

/** The converters a statement's result columns need, found once per prepared statement. */
function convertersFor(columns: readonly string[]): Array<[string, Converter]> {
  const out: Array<[string, Converter]> = [];
  for (const name of columns) {
    if (BOOLEAN_COLUMNS.has(name)) out.push([name, toBoolean]);
    else if (TIMESTAMP_COLUMNS.has(name)) out.push([name, toDate]);
    else if (JSON_COLUMNS.has(name)) out.push([name, toJson]);
  }
  return out;
}

function converterFor(converters: ReadonlyArray<[string, Converter]>): (row: unknown) => unknown {
  if (converters.length === 0) return (row) => row;
  return (row) => {
    const record = row as Record<string, unknown>;
    for (const [name, convert] of converters) {
      const value = record[name];
      if (value !== null && value !== undefined) record[name] = convert(value);
    }
    return record;
  };
}

function* mapIterator(it: IterableIterator<unknown>, convert: (row: unknown) => unknown): IterableIterator<unknown> {
  for (const row of it) yield convert(row);
}

/** Prepared statements kept per SQL text: Kysely prepares on every query, SQLite need not. */
const STATEMENT_CACHE_SIZE = 256;

/** Wraps a better-sqlite3 handle for Kysely's `SqliteDialect`. */
export function wrapSqlite(handle: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => {
      cache.clear();
      handle.close();
    },
    prepare(sql: string): SqliteStatement {
      const cached = cache.get(sql);
      if (cached) return cached;
      const stmt = handle.prepare(sql);
      const convert = stmt.reader ? converterFor(convertersFor(stmt.columns().map((c) => c.name))) : (row: unknown) => row;
      const wrapped: SqliteStatement = {
        reader: stmt.reader,
        all: (params) => {
          const rows = stmt.all(...params.map(toSqlite));
          for (let i = 0; i < rows.length; i++) rows[i] = convert(rows[i]);
          return rows;
        },
        run: (params) => stmt.run(...params.map(toSqlite)),
        iterate: (params) => mapIterator(stmt.iterate(...params.map(toSqlite)), convert),
      };
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(sql, wrapped);
      return wrapped;
    },
  };
}
