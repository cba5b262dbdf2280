/**
 * The databases of the compute tier as one value: the API database (cell and host mappings,
 * instance mappings) and the connections to every cell's database. A process that runs the API
 * alone opens them from `[api_database] url` on first use; `ironring up` lends the ones it has.
 */
import type { Logger } from '../common/logger.js';
import { openDatabase } from '../db/connect.js';
import type { OpenOptions, Store } from '../db/connect.js';
import { requireSchema } from '../db/migrate.js';
import { CellStores } from './cell-stores.js';

/** The databases of the compute tier. */
export interface ComputeStores {
  api: Store;
  cells: CellStores;
}

/**
 * Opens the API database at `apiUrl` (which must be migrated: `SchemaNotMigrated` otherwise) and a
 * `CellStores` that reuses it for cells kept in the same database.
 */
export async function openComputeStores(apiUrl: string, options: { open: OpenOptions; logger?: Logger }): Promise<ComputeStores> {
  const api = await openDatabase(apiUrl, options.open);
  const { maxPoolSize: _apiPool, ...cellOpen } = options.open;
  const cells = new CellStores({ ...(options.logger ? { logger: options.logger } : {}), open: cellOpen });
  cells.share(apiUrl, api);
  try {
    await requireSchema(api, ['api']);
  } catch (err) {
    await cells.close();
    await api.close();
    throw err;
  }
  return { api, cells };
}

/**
 * Compute stores opened on first use and closed by `close()`: a failed open is not kept, so the
 * next request tries again (the database may come back).
 */
export class LazyComputeStores {
  #opened: Promise<ComputeStores> | undefined;

  constructor(private readonly open: () => Promise<ComputeStores>) {}

  get(): Promise<ComputeStores> {
    if (!this.#opened) {
      const opening = this.open();
      this.#opened = opening;
      opening.catch(() => {
        if (this.#opened === opening) this.#opened = undefined;
      });
    }
    return this.#opened;
  }

  async close(): Promise<void> {
    const stores = await this.#opened?.catch(() => undefined);
    this.#opened = undefined;
    if (stores) {
      await stores.cells.close();
      await stores.api.close();
    }
  }
}
