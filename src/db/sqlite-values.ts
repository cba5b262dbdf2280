/**
 * Makes SQLite read and write the same JavaScript values as PostgreSQL does: booleans, `Date`s and
 * parsed JSON. SQLite has no such types (and better-sqlite3 refuses to bind booleans and dates), so
 * this wraps the better-sqlite3 handle Kysely talks to: parameters are converted on the way in,
 * result columns on the way out — by the type of the table column each one comes from
 * (`COLUMN_KINDS` in `schema.ts`), whatever it is called in the result. A computed flag has no
 * table column, so `sqliteFlag` reads it through one (`temp.flag_values`). Code above the database
 * layer never sees the difference between the engines.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import type { Expression, RawBuilder, SqlBool, SqliteDatabase, SqliteStatement } from 'kysely';
import { COLUMN_KINDS } from './schema.js';
import type { ColumnKind } from './schema.js';

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

const CONVERTERS: readonly Converter[] = [toBoolean, toDate, toJson];
const CONVERTER_INDEX: Readonly<Record<ColumnKind, number>> = { flag: 0, timestamp: 1, json: 2 };

/**
 * A two-row table whose one column is a flag: a computed condition read through it
 * (`sqliteFlag`) comes back from a table column, which SQLite reports and the converter knows.
 * Temporary, so it lives in this connection only and no migration or other process sees it.
 */
const FLAG_TABLE = 'flag_values';
/** `table.column` → kind, for every column that needs converting. */
const KINDS: ReadonlyMap<string, ColumnKind> = new Map(
  Object.entries({ ...COLUMN_KINDS, [FLAG_TABLE]: { value: 'flag' } }).flatMap(([table, columns]) =>
    Object.entries(columns as Record<string, ColumnKind>).map(([column, kind]) => [`${table}.${column}`, kind] as const),
  ),
);

/** What SQLite says a result column is: its name, and the table column it comes from (if any). */
interface ResultColumn {
  name: string;
  table: string | null;
  column: string | null;
}

/** How a result column is converted: the index into `CONVERTERS`, or -1 for as stored. */
function converterIndex(c: ResultColumn): number {
  if (c.table === null || c.column === null) return -1;
  const kind = KINDS.get(`${c.table}.${c.column}`);
  return kind === undefined ? -1 : CONVERTER_INDEX[kind];
}

/**
 * A condition as a flag that reads `true`/`false` (never null: unknown is false). SQLite evaluates
 * a condition to 0/1 without a type, so it is looked up in `temp.flag_values`, whose column is one.
 */
export function sqliteFlag(condition: Expression<SqlBool>): RawBuilder<boolean> {
  return sql<boolean>`(select value from temp.${sql.table(FLAG_TABLE)} where value = coalesce((${condition}), 0))`;
}

/**
 * Builds a statement's rows from better-sqlite3's raw arrays with one generated object literal per
 * statement (converting the columns that need it): every row then has the same, fast shape. Rows
 * better-sqlite3 builds as objects itself get their ~50 properties one by one, which for a
 * 1,000-node listing cost more than the query and slowed every later read and the JSON output.
 * Column names only ever appear as JSON-quoted string literals in the generated code; a name that
 * occurs twice (a join) keeps the last value, as better-sqlite3's own objects do.
 */
function rowBuilder(columns: readonly ResultColumn[]): (values: unknown[]) => unknown {
  const last = new Map<string, number>();
  columns.forEach((c, i) => last.set(c.name, i));
  const parts: string[] = [];
  for (const [name, i] of last) {
    const conv = converterIndex(columns[i]!);
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
  handle.exec(`create temp table if not exists ${FLAG_TABLE} (value boolean primary key) without rowid; insert or ignore into ${FLAG_TABLE} values (0), (1)`);
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
        const build = rowBuilder(stmt.columns());
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
