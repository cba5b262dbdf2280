/**
 * What `ironring compute` and `ironring scheduler` share as processes: the API database and the cell
 * databases opened from the configuration (named in PostgreSQL's `application_name`), a service
 * started on them once the API schema is there, and one idempotent stop that closes everything.
 */
import { CellStores } from '../cells/cell-stores.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import { openDatabase } from '../db/connect.js';
import type { Store } from '../db/connect.js';
import { requireSchema } from '../db/migrate.js';

export interface TierService {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface RunningTierProcess<S extends TierService> {
  service: S;
  stop(): Promise<void>;
}

export async function startTierProcess<S extends TierService>(
  config: Config,
  logger: Logger,
  role: 'compute' | 'scheduler',
  build: (stores: { api: Store; cells: CellStores }) => S,
): Promise<RunningTierProcess<S>> {
  const { database } = config;
  const open = { connectTimeout: database.connect_timeout, sqliteBusyTimeout: database.sqlite_busy_timeout, applicationName: `ironring-${role}-${config.DEFAULT.host}` };
  const api = await openDatabase(config.api_database.url, { maxPoolSize: database.max_pool_size, ...open });
  const cells = new CellStores({ logger, open });
  cells.share(config.api_database.url, api);
  const service = build({ api, cells });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await service.stop();
      await cells.close();
      await api.close();
    })());
  try {
    await requireSchema(api, ['api']);
    await service.start();
  } catch (err) {
    await stop();
    throw err;
  }
  return { service, stop };
}
