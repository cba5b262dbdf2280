/**
 * The all-in-one deployment behind `ironring up`: every role in one process on one database (an
 * embedded SQLite file under the data directory unless told otherwise). Today that is the API and
 * one conductor; the compute service and scheduler join it as they land. Other conductors may join
 * the same cluster from other processes given the same database.
 */
import { mkdir } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import { buildApi, listenApi } from '../api/server.js';
import { openDatabase } from '../db/connect.js';
import type { Store } from '../db/connect.js';
import { migrateDatabase } from '../db/migrate.js';
import { Conductor } from '../conductor/conductor.js';

export interface RunningServices {
  dataDir: string;
  /** The database URL, password masked. */
  database: string;
  apiUrl: string;
  /** The in-process conductor's host name and RPC endpoint. */
  conductor: { hostname: string; rpcUrl: string; tftp: string | null; http: string | null };
  /** Migrations this start applied, as `set/name`. */
  migrated: string[];
  /** Stops everything started; idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts everything. `defaults` says which boot server addresses were left at their defaults: those
 * servers are skipped with a warning when their port cannot be bound (an ordinary user cannot bind
 * port 69), so a first `ironring up` always comes up; an address the operator chose must bind.
 */
export async function startAllInOne(config: Config, logger: Logger, defaults: { tftp: boolean; http: boolean } = { tftp: false, http: false }): Promise<RunningServices> {
  await mkdir(config.DEFAULT.data_dir, { recursive: true });
  const store: Store = await openDatabase(config.database.url, {
    maxPoolSize: config.database.max_pool_size,
    connectTimeout: config.database.connect_timeout,
    sqliteBusyTimeout: config.database.sqlite_busy_timeout,
  });
  let app: FastifyInstance | undefined;
  let conductor: Conductor | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      // The conductor first: it goes offline and hands its locks back while the API still answers.
      if (conductor) await conductor.stop();
      if (app) await app.close();
      await store.close();
      logger.info('stopped');
    })());
  try {
    const reports = await migrateDatabase(store);
    const migrated = reports.flatMap((r) => r.applied.map((name) => `${r.set}/${name}`));
    if (migrated.length > 0) logger.info({ migrated }, 'database schema migrated');
    app = buildApi({ store, config, logger });
    const apiUrl = await listenApi(app, config.api.address);
    logger.info({ url: apiUrl }, 'API listening');
    const started = new Conductor({ store, config, logger, optionalServers: defaults });
    await started.start();
    conductor = started;
    return {
      dataDir: config.DEFAULT.data_dir,
      database: store.displayUrl,
      apiUrl,
      conductor: { hostname: started.hostname, rpcUrl: started.rpcUrl, ...started.bootEndpoints },
      migrated,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
