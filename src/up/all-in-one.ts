/**
 * The all-in-one deployment behind `ironring up`: every role in one process — the API (bare-metal
 * and compute), one conductor, one compute service and the scheduler — on embedded SQLite files
 * under the data directory unless told otherwise. Other conductors may join the same cluster from
 * other processes given the same database; other compute services (`ironring compute`) and
 * schedulers given the same data directory or `[api_database] url`.
 *
 * Compute tier databases: the API database is `[api_database] url` (api.db under the data
 * directory by default) and also holds cell0 (the scheduler's service rows). The cell named by
 * `[compute] cell` (cell1) is created on first start with `[database] url` as its database — the
 * bare-metal database, ironring.db or the `--database` PostgreSQL URL — whose cell tables sit beside
 * the bare-metal ones. One handle per database in this process (`CellStores.share`), because two
 * SQLite handles in one process would stall each other's writes.
 */
import { mkdir } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import { buildApi, listenApi } from '../api/server.js';
import { ensureSecret } from '../auth/hmac.js';
import { openDatabase } from '../db/connect.js';
import type { Store } from '../db/connect.js';
import { migrateDatabase } from '../db/migrate.js';
import { Conductor } from '../conductor/conductor.js';
import { injectTransport } from '../api/routes/compute-servers.js';
import { CellStores } from '../cells/cell-stores.js';
import { createCell, findCell, mapCell0 } from '../cells/cells.js';
import type { CellMapping } from '../cells/cells.js';
import { CellNotFound } from '../cells/errors.js';
import { databaseKey } from '../cells/cell-stores.js';
import { BaremetalClient } from '../compute/baremetal-client.js';
import { ComputeService } from '../compute/compute-service.js';
import { schedulerFromConfig } from '../scheduler/process.js';
import type { SchedulerService } from '../scheduler/scheduler-service.js';

export interface RunningServices {
  dataDir: string;
  /** The database URL, password masked. */
  database: string;
  apiUrl: string;
  /** The in-process conductor's host name, RPC endpoint and how RPC callers authenticate. */
  conductor: { hostname: string; rpcUrl: string; rpcAuth: string; tftp: string | null; http: string | null };
  /** Migrations this start applied, as `set/name`. */
  migrated: string[];
  /** The compute tier: API database (password masked), the cell and the in-process compute service host. */
  compute: { apiDatabase: string; cell: string; cellUuid: string; host: string; discovery: string };
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
  // The API and the conductor of this process share the RPC secret; made on first start, so the
  // RPC port is never open to anyone who reaches it, whatever address it binds.
  if (config.json_rpc.auth_strategy === 'hmac' && ensureSecret(config.json_rpc.secret_file).created) {
    logger.info({ file: config.json_rpc.secret_file }, 'created the RPC secret ([json_rpc] secret_file); copy it to conductors and APIs that join this deployment');
  }
  const store: Store = await openDatabase(config.database.url, {
    maxPoolSize: config.database.max_pool_size,
    connectTimeout: config.database.connect_timeout,
    sqliteBusyTimeout: config.database.sqlite_busy_timeout,
  });
  let app: FastifyInstance | undefined;
  let conductor: Conductor | undefined;
  let apiStore: Store | undefined;
  let compute: ComputeService | undefined;
  let scheduler: SchedulerService | undefined;
  const cells = new CellStores({ logger, open: { connectTimeout: config.database.connect_timeout, sqliteBusyTimeout: config.database.sqlite_busy_timeout } });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      // The compute service first (marked down at once, so others take its nodes), then the
      // conductor: it goes offline and hands its locks back while the API still answers.
      if (compute) await compute.stop();
      if (scheduler) await scheduler.stop();
      if (conductor) await conductor.stop();
      if (app) await app.close();
      await cells.close();
      if (apiStore && apiStore !== store) await apiStore.close();
      await store.close();
      logger.info('stopped');
    })());
  try {
    const reports = await migrateDatabase(store);
    const migrated = reports.flatMap((r) => r.applied.map((name) => `${r.set}/${name}`));
    const sameDatabase = databaseKey(config.api_database.url) === databaseKey(config.database.url);
    apiStore = sameDatabase
      ? store
      : await openDatabase(config.api_database.url, {
          maxPoolSize: config.database.max_pool_size,
          connectTimeout: config.database.connect_timeout,
          sqliteBusyTimeout: config.database.sqlite_busy_timeout,
        });
    const apiReports = sameDatabase ? [] : await migrateDatabase(apiStore, ['api', 'cell']);
    migrated.push(...apiReports.flatMap((r) => r.applied.map((name) => `${r.set}/${name} (API database)`)));
    if (migrated.length > 0) logger.info({ migrated }, 'database schema migrated');
    cells.share(config.database.url, store);
    cells.share(config.api_database.url, apiStore);
    await mapCell0(apiStore, cells, config.api_database.url);
    const cell = await ensureCell(apiStore, cells, config.compute.cell, config.database.url, logger);
    app = buildApi({ store, config, logger, compute: { api: apiStore, cells } });
    const apiUrl = await listenApi(app, config.api.address);
    logger.info({ url: apiUrl }, 'API listening');
    const started = new Conductor({ store, config, logger, optionalServers: defaults });
    await started.start();
    conductor = started;

    const credentials = config.baremetal.username ? `Basic ${Buffer.from(`${config.baremetal.username}:${config.baremetal.password}`).toString('base64')}` : undefined;
    compute = new ComputeService({
      host: config.DEFAULT.host,
      cell: cell.uuid,
      api: apiStore,
      cells,
      // The bare-metal API of this process, without a socket.
      baremetal: new BaremetalClient(injectTransport(app, credentials)),
      logger,
      reportInterval: config.compute.report_interval,
      serviceDownTime: config.compute.service_down_time,
      updateResourcesInterval: config.compute.update_resources_interval,
    });
    await compute.start();
    scheduler = schedulerFromConfig(config, logger, apiStore, cells);
    await scheduler.start();
    const s = config.scheduler;
    return {
      dataDir: config.DEFAULT.data_dir,
      database: store.displayUrl,
      apiUrl,
      conductor: { hostname: started.hostname, rpcUrl: started.rpcUrl, rpcAuth: rpcAuthSummary(config), ...started.bootEndpoints },
      migrated,
      compute: {
        apiDatabase: apiStore.displayUrl,
        cell: cell.name,
        cellUuid: cell.uuid,
        host: compute.host,
        discovery: s.discover_hosts_interval > 0 ? `every ${s.discover_hosts_interval} s ${s.discover_hosts_by_service ? 'by service' : 'by compute node'}` : 'off',
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** How RPC callers authenticate, for the start-up summary. */
function rpcAuthSummary(config: Config): string {
  const rpc = config.json_rpc;
  if (rpc.auth_strategy === 'hmac') return `signed with ${rpc.secret_file}`;
  if (rpc.auth_strategy === 'http_basic') return `http_basic, users in ${rpc.http_basic_auth_user_file}`;
  return 'UNAUTHENTICATED (noauth)';
}

/** The cell this deployment's compute service belongs to, created on first start. */
async function ensureCell(api: Store, cells: CellStores, name: string, databaseConnection: string, logger: Logger): Promise<CellMapping> {
  try {
    return await findCell(api, name);
  } catch (err) {
    if (!(err instanceof CellNotFound)) throw err;
  }
  try {
    const cell = await createCell(api, cells, { name, databaseConnection });
    logger.info({ cell: cell.name, cellUuid: cell.uuid }, 'cell created');
    return cell;
  } catch (err) {
    // Another process created it meanwhile.
    try {
      return await findCell(api, name);
    } catch {
      throw err;
    }
  }
}
