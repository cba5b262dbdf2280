/**
 * Opening a database from a URL — SQLite for one host, PostgreSQL for many — behind one Kysely
 * handle, with the engine's settings applied (WAL and a busy timeout on SQLite; a pool, int8 as
 * number on PostgreSQL), "now" read from the database clock, and the same JavaScript types from
 * both engines (computed flags included: `sqlFlag`).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type { Expression, RawBuilder, SqlBool } from 'kysely';
import pg from 'pg';
import { DatabaseUnavailable, DatabaseUrlError } from '../common/errors.js';
import { maskUrl } from '../common/mask.js';
import { listenPostgres } from './notifications.js';
import type { ListenHandlers, Listener } from './notifications.js';
import type { Database } from './schema.js';
import { SQLITE_TIME_FORMAT, sqliteFlag, wrapSqlite } from './sqlite-values.js';

export const ENGINES = ['sqlite', 'postgres'] as const;
export type Engine = (typeof ENGINES)[number];

/** A parsed database URL. */
export type DatabaseTarget =
  | { engine: 'sqlite'; url: string; file: string }
  | { engine: 'postgres'; url: string; connectionString: string };

/**
 * Parses a database URL.
 *
 * - `sqlite:///abs/path.db` (and SQLAlchemy's `sqlite:////abs/path.db`) → an absolute path;
 *   `sqlite:relative/path.db` → relative to the working directory; `sqlite::memory:` → in memory.
 * - `postgres://…`, `postgresql://…` and SQLAlchemy's `postgresql+psycopg2://…` → PostgreSQL.
 */
export function parseDatabaseUrl(url: string, cwd = process.cwd()): DatabaseTarget {
  const shown = maskUrl(url);
  const m = /^([a-z][a-z0-9]*)(\+[a-z0-9_]+)?:(.*)$/i.exec(url.trim());
  if (!m) throw new DatabaseUrlError(`invalid database URL ${JSON.stringify(shown)}: expected sqlite:///path/to/file.db or postgres://user@host:port/dbname`);
  const scheme = m[1]!.toLowerCase();
  const rest = m[3]!;
  if (scheme === 'sqlite') {
    if (rest === ':memory:' || rest === '//:memory:' || rest === '///:memory:') return { engine: 'sqlite', url, file: ':memory:' };
    let file: string;
    if (rest.startsWith('//')) {
      // sqlite://<authority>/<path>: no authority is allowed, the path is absolute.
      const after = rest.slice(2);
      if (!after.startsWith('/')) throw new DatabaseUrlError(`invalid database URL ${JSON.stringify(shown)}: use sqlite:///absolute/path.db or sqlite:relative/path.db`);
      file = path.resolve(after);
    } else {
      file = path.resolve(cwd, rest);
    }
    if (file === '/' || rest === '' || rest === '//' || rest === '///') {
      throw new DatabaseUrlError(`invalid database URL ${JSON.stringify(shown)}: no file path`);
    }
    return { engine: 'sqlite', url, file };
  }
  if (scheme === 'postgres' || scheme === 'postgresql') {
    if (!rest.startsWith('//')) throw new DatabaseUrlError(`invalid database URL ${JSON.stringify(shown)}: expected postgres://user@host:port/dbname`);
    let parsed: URL;
    try {
      parsed = new URL(`postgres:${rest}`);
    } catch {
      throw new DatabaseUrlError(`invalid database URL ${JSON.stringify(shown)}: not a valid URL`);
    }
    if (!parsed.hostname && !parsed.searchParams.get('host')) {
      throw new DatabaseUrlError(`invalid database URL ${JSON.stringify(shown)}: no host`);
    }
    return { engine: 'postgres', url, connectionString: `postgres:${rest}` };
  }
  throw new DatabaseUrlError(`unsupported database ${JSON.stringify(scheme)} in ${JSON.stringify(shown)}: ironring runs on sqlite and postgres`);
}

export interface OpenOptions {
  /** Most connections to PostgreSQL. */
  maxPoolSize?: number;
  /** Seconds to wait for a connection. */
  connectTimeout?: number;
  /** Milliseconds an SQLite writer waits for another process's lock. */
  sqliteBusyTimeout?: number;
  /** Shown in PostgreSQL's pg_stat_activity, so an operator can tell which process holds a connection. */
  applicationName?: string;
}

/** An open database: the Kysely handle plus what the engines do differently. */
export interface Store {
  readonly db: Kysely<Database>;
  readonly engine: Engine;
  /** The URL with its password masked, for messages. */
  readonly displayUrl: string;
  /** An SQL expression for the database clock's current time, for writes like heartbeats. */
  sqlNow(): RawBuilder<Date>;
  /** An SQL expression for the database clock's time `seconds` ago, for liveness cut-offs. */
  sqlSecondsAgo(seconds: number): RawBuilder<Date>;
  /**
   * A computed flag to select (`store.sqlFlag(cond).as('alive')`): reads as `true` or `false` on
   * both engines — false also when the condition is unknown (null) — never as 0/1.
   */
  sqlFlag(condition: Expression<SqlBool>): RawBuilder<boolean>;
  /** The database clock's current time. Liveness is judged by this, never by `Date.now()`. */
  now(): Promise<Date>;
  /**
   * Subscribes to notifications on `channel` (PostgreSQL LISTEN). Resolves to null on SQLite, which
   * has no notifications: callers poll there.
   */
  listen(channel: string, handlers: ListenHandlers): Promise<Listener | null>;
  /**
   * SQLite only (absent on PostgreSQL, which notifies instead): a value that differs after any
   * commit to the database by another connection (`PRAGMA data_version`), so a reader can tell
   * that what another process wrote may have changed what it read, without reading it again.
   * This connection's own commits do not move it (counting them too, with `total_changes()`, cost
   * a read transaction per call: more than the API's whole create of a node gained). Null once
   * closed.
   */
  changeToken?(): string | null;
  /** Sends a notification on `channel` (PostgreSQL NOTIFY); a no-op on SQLite. */
  notify(channel: string, payload: string): Promise<void>;
  /** Closes every connection; idempotent. */
  close(): Promise<void>;
}

/** Opens the database at `url` and checks that it answers. Throws `DatabaseUnavailable` if not. */
export async function openDatabase(url: string, options: OpenOptions = {}): Promise<Store> {
  const target = parseDatabaseUrl(url);
  const store = target.engine === 'sqlite' ? openSqlite(target, options) : openPostgres(target, options);
  try {
    await store.now();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw new DatabaseUnavailable(`cannot connect to database ${store.displayUrl}: ${describeConnectError(err)}`, { cause: err });
  }
  return store;
}

function openSqlite(target: Extract<DatabaseTarget, { engine: 'sqlite' }>, options: OpenOptions): Store {
  const displayUrl = target.url;
  if (target.file !== ':memory:') {
    const dir = path.dirname(target.file);
    if (!existsSync(dir)) {
      throw new DatabaseUnavailable(`cannot open database ${displayUrl}: directory ${dir} does not exist`);
    }
  }
  let handle: BetterSqlite3.Database;
  try {
    handle = new BetterSqlite3(target.file, { timeout: options.sqliteBusyTimeout ?? 5000 });
    // WAL lets readers proceed while a writer commits, so several processes on one host can share
    // the file; NORMAL synchronous is durable at each checkpoint and much faster under WAL.
    handle.pragma('journal_mode = WAL');
    handle.pragma('synchronous = NORMAL');
    handle.pragma('foreign_keys = ON');
  } catch (err) {
    throw new DatabaseUnavailable(`cannot open database ${displayUrl}: ${(err as Error).message}`, { cause: err });
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: wrapSqlite(handle) }) });
  const sqlNow = (): RawBuilder<Date> => sql<Date>`strftime(${sql.lit(SQLITE_TIME_FORMAT)}, 'now')`;
  const dataVersion = handle.prepare('pragma data_version').pluck();
  let closed: Promise<void> | undefined;
  return {
    db,
    engine: 'sqlite',
    displayUrl,
    sqlNow,
    sqlSecondsAgo: (seconds) => sql<Date>`strftime(${sql.lit(SQLITE_TIME_FORMAT)}, 'now', ${`-${seconds} seconds`})`,
    sqlFlag: sqliteFlag,
    async now() {
      const row = await sql<{ now: string }>`select ${sqlNow()} as now`.execute(db);
      return new Date(row.rows[0]!.now);
    },
    listen: () => Promise.resolve(null),
    changeToken: () => (handle.open ? String(dataVersion.get() as number) : null),
    notify: () => Promise.resolve(),
    close() {
      closed ??= db.destroy();
      return closed;
    },
  };
}

/**
 * Numbers as JS numbers, as SQLite gives them: int8 (counts, sums) and numeric (averages, sums of
 * int8). Ids are `serial` (int4) and nothing stored nears 2**53, so no precision is lost here.
 */
const PG_NUMBER_TYPES: ReadonlySet<number> = new Set([20, 1700]);
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (PG_NUMBER_TYPES.has(oid) && format !== 'binary') return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

function openPostgres(target: Extract<DatabaseTarget, { engine: 'postgres' }>, options: OpenOptions): Store {
  const displayUrl = maskUrl(target.url);
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: options.maxPoolSize ?? 10,
    connectionTimeoutMillis: (options.connectTimeout ?? 10) * 1000,
    types: pgTypes,
    application_name: options.applicationName ?? 'ironring',
  });
  // An idle client that loses its server emits 'error' on the pool; without a listener Node would
  // crash the process. The next query reconnects, and its failure is reported where it happens.
  pool.on('error', () => undefined);
  // A client lent out between two queries (inside a transaction, say) that loses its server emits
  // 'error' with nobody listening — pg-pool drops its own listener while a client is lent — and that
  // crashed the process. The query running or the next one fails with the cause instead, and the
  // pool discards the client when it comes back (it is no longer queryable).
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const sqlNow = (): RawBuilder<Date> => sql<Date>`clock_timestamp()`;
  let closed: Promise<void> | undefined;
  return {
    db,
    engine: 'postgres',
    displayUrl,
    sqlNow,
    sqlSecondsAgo: (seconds) => sql<Date>`(clock_timestamp() - make_interval(secs => ${seconds}))`,
    sqlFlag: (condition) => sql<boolean>`coalesce((${condition}), false)`,
    async now() {
      const row = await sql<{ now: Date }>`select ${sqlNow()} as now`.execute(db);
      return row.rows[0]!.now;
    },
    listen: (channel, handlers) => listenPostgres(target.connectionString, channel, handlers),
    async notify(channel, payload) {
      await sql`select pg_notify(${channel}, ${payload})`.execute(db);
    },
    close() {
      closed ??= db.destroy();
      return closed;
    },
  };
}

/** Turns a driver error into a short reason a person can act on. */
export function describeConnectError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  switch (e.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is the server running and listening there?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host name not found';
    case 'ETIMEDOUT':
      return 'connection timed out';
    case '3D000':
      return `database does not exist (${e.message ?? ''})`;
    case '28P01':
    case '28000':
      return `authentication failed (${e.message ?? ''})`;
  }
  const message = String(e.message ?? err).split('\n')[0]!;
  if (/timeout/i.test(message)) return 'connection timed out';
  return message;
}
