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

/** How a result column is converted: the index into `CONVERTERS`, or -1 for as stored. */
function converterIndex(name: string): number {
  if (BOOLEAN_COLUMNS.has(name)) return 0;
  if (TIMESTAMP_COLUMNS.has(name)) return 1;
  if (JSON_COLUMNS.has(name)) return 2;
  return -1;
}

const CONVERTERS: readonly Converter[] = [toBoolean, toDate, toJson];

/**
 * Builds a statement's rows from better-sqlite3's raw arrays with one generated object literal per
 * statement (converting the columns that need it): every row then has the same, fast shape. Rows
 * better-sqlite3 builds as objects itself get their ~50 properties one by one, which for a
 * 1,000-node listing cost more than the query and slowed every later read and the JSON output.
 * Column names only ever appear as JSON-quoted string literals in the generated code; a name that
 * occurs twice (a join) keeps the last value, as better-sqlite3's own objects do.
 */
function rowBuilder(columns: readonly string[]): (values: unknown[]) => unknown {
  const last = new Map<string, number>();
  columns.forEach((name, i) => last.set(name, i));
  const parts: string[] = [];
  for (const [name, i] of last) {
    const conv = converterIndex(name);
    const read = conv < 0 ? `v[${i}]` : `(v[${i}] === null || v[${i}] === undefined ? v[${i}] : c[${conv}](v[${i}]))`;
    parts.push(`${JSON.stringify(name)}: ${read}`);
  }
  return new Function('c', `return function row(v) { return { ${parts.join(', ')} }; };`)(CONVERTERS) as (values: unknown[]) => unknown;
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
      let wrapped: SqliteStatement;
      if (stmt.reader) {
        const build = rowBuilder(stmt.columns().map((c) => c.name));
        stmt.raw(true);
        wrapped = {
          reader: true,
          all: (params) => {
            const rows = stmt.all(...params.map(toSqlite)) as unknown[][];
            const out = new Array<unknown>(rows.length);
            for (let i = 0; i < rows.length; i++) out[i] = build(rows[i]!);
            return out;
          },
          run: (params) => stmt.run(...params.map(toSqlite)),
          iterate: (params) => mapIterator(stmt.iterate(...params.map(toSqlite)) as IterableIterator<unknown>, (row) => build(row as unknown[])),
        };
      } else {
        wrapped = {
          reader: false,
          all: (params) => stmt.all(...params.map(toSqlite)),
          run: (params) => stmt.run(...params.map(toSqlite)),
          iterate: (params) => stmt.iterate(...params.map(toSqlite)) as IterableIterator<unknown>,
        };
      }
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(sql, wrapped);
      return wrapped;
    },
  };
}
