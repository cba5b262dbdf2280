/**
 * Connections to the cell databases, one per database URL, opened on first use and kept until
 * `close()`. A process that serves several cells (the scheduler, `manage cell discover-hosts`)
 * reaches each cell database through here, so it never opens a second pool to the same database.
 *
 * URLs are compared by what they name, not by spelling: `sqlite:///a.db` and `sqlite:////a.db` are
 * the same file. A store opened elsewhere (typically the API database's, when the embedded default
 * keeps the API and cell tables in one SQLite file) can be lent with `share()`; it is used for that
 * URL and left open by `close()`.
 */
import type { Logger } from '../common/logger.js';
import { openDatabase, parseDatabaseUrl } from '../db/connect.js';
import type { OpenOptions, Store } from '../db/connect.js';
import type { CellMapping } from './cells.js';

export interface CellStoresOptions {
  /** Most connections per PostgreSQL cell database (default 4). */
  maxPoolSize?: number;
  logger?: Logger;
  /** Further connection settings (timeouts, application name) for every cell database. */
  open?: Omit<OpenOptions, 'maxPoolSize'>;
}

/** The identity of the database a URL names, for caching. */
export function databaseKey(url: string): string {
  const target = parseDatabaseUrl(url);
  return target.engine === 'sqlite' ? `sqlite:${target.file}` : `postgres:${target.connectionString}`;
}

export class CellStores {
  readonly #opened = new Map<string, Promise<Store>>();
  readonly #shared = new Map<string, Store>();
  readonly #options: CellStoresOptions;
  #closed = false;

  constructor(options: CellStoresOptions = {}) {
    this.#options = options;
  }

  /**
   * The open store of a cell's database, opening it on first use. Throws `DatabaseUrlError` for a
   * malformed URL and `DatabaseUnavailable` when the database does not answer (a later call tries again).
   */
  get(cell: Pick<CellMapping, 'uuid' | 'databaseConnection'>): Promise<Store> {
    return this.open(cell.databaseConnection, cell.uuid);
  }

  /** The open store for a database URL (see `get`). */
  open(url: string, label = url): Promise<Store> {
    if (this.#closed) return Promise.reject(new Error('CellStores is closed'));
    const key = databaseKey(url);
    const shared = this.#shared.get(key);
    if (shared) return Promise.resolve(shared);
    let pending = this.#opened.get(key);
    if (!pending) {
      this.#options.logger?.debug({ cell: label }, 'opening cell database');
      pending = openDatabase(url, { maxPoolSize: this.#options.maxPoolSize ?? 4, ...this.#options.open });
      this.#opened.set(key, pending);
      // A failed open is not cached: the database may come back.
      pending.catch(() => {
        if (this.#opened.get(key) === pending) this.#opened.delete(key);
      });
    }
    return pending;
  }

  /**
   * Lends an already open store for `url`: `get`/`open` return it and `close()` leaves it open. Used
   * when the cell database is the API database (one SQLite file, or one `:memory:` database in tests).
   */
  share(url: string, store: Store): void {
    this.#shared.set(databaseKey(url), store);
  }

  /** Closes every store this object opened (not the shared ones); idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const pending = [...this.#opened.values()];
    this.#opened.clear();
    this.#shared.clear();
    await Promise.all(
      pending.map(async (p) => {
        const store = await p.catch(() => null);
        await store?.close();
      }),
    );
  }
}
