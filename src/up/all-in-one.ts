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
import { callRpc } from '../conductor/rpc.js';
import type { LocalConductor } from '../api/conductor-router.js';
import { injectTransport } from '../compute/in-process-transport.js';
import { CellStores } from '../cells/cell-stores.js';
import { CELL0_UUID, COMPUTE_BINARY, createCell, findCell, mapCell0 } from '../cells/cells.js';
import type { CellMapping } from '../cells/cells.js';
import { CellNotFound } from '../cells/errors.js';
import { databaseKey } from '../cells/cell-stores.js';
import { BaremetalClient } from '../compute/baremetal-client.js';
import { ComputeService } from '../compute/compute-service.js';
import { SCHEDULER_BINARY, releaseServiceOfDeadInstance, serviceInstance } from '../compute/services.js';
import { releaseConductorOfDeadInstance } from '../cluster/membership.js';
import { InstanceLock } from './instance-lock.js';
import type { InstanceRecord, InstanceRows } from './instance-lock.js';
import { schedulerFromConfig } from '../scheduler/process.js';
import type { SchedulerService } from '../scheduler/scheduler-service.js';

export interface RunningServices {
  dataDir: string;
  /** The database URL, password masked. */
  database: string;
  apiUrl: string;
  /** The in-process conductor's host name, RPC endpoint and how RPC callers authenticate. */
  conductor: { hostname: string; rpcUrl: string; rpcAuth: string; tftp: string | null; http: string | null; proxyDhcp: string | null };
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
  // First of all: a live `up` of this host from this directory is refused before anything starts.
  const lock = await InstanceLock.acquire(config.DEFAULT.data_dir, config.DEFAULT.host);
  let store: Store;
  try {
    // The API and the conductor of this process share the RPC secret; made on first start, so the
    // RPC port is never open to anyone who reaches it, whatever address it binds.
    if (config.json_rpc.auth_strategy === 'hmac' && ensureSecret(config.json_rpc.secret_file).created) {
      logger.info({ file: config.json_rpc.secret_file }, 'created the RPC secret ([json_rpc] secret_file); copy it to conductors and APIs that join this deployment');
    }
    store = await openDatabase(config.database.url, {
      maxPoolSize: config.database.max_pool_size,
      connectTimeout: config.database.connect_timeout,
      sqliteBusyTimeout: config.database.sqlite_busy_timeout,
    });
  } catch (err) {
    await lock.release();
    throw err;
  }
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
      await lock.release();
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
    if (lock.previous) await takeBackRows(lock.previous, { store, apiStore, cells }, logger);
    // Nodes this process's conductor owns are called in-process; other owners over authenticated RPC.
    app = buildApi({ store, config, logger, compute: { api: apiStore, cells }, localConductor: () => (conductor ? localCalls(conductor) : null) });
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
    await lock.recordRows(await registeredRows({ conductor: started, computeHost: compute.host, cell, store, apiStore, cells }));
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

/** The conductor of this process as the API calls it: its RPC actions, without HTTP. */
function localCalls(conductor: Conductor): LocalConductor {
  return {
    hostname: conductor.hostname,
    // The conductor builds its operations once, in start(), before `conductor` is set to it.
    call: (method, action, uuid, body) => callRpc(conductor.operations, method, action, uuid, body),
  };
}

/** How RPC callers authenticate, for the start-up summary. */
function rpcAuthSummary(config: Config): string {
  const rpc = config.json_rpc;
  if (rpc.auth_strategy === 'hmac') return `signed with ${rpc.secret_file}`;
  if (rpc.auth_strategy === 'http_basic') return `http_basic, users in ${rpc.http_basic_auth_user_file}`;
  return 'UNAUTHENTICATED (noauth)';
}

interface Stores {
  store: Store;
  apiStore: Store;
  cells: CellStores;
}

/**
 * The rows a dead predecessor (same host, same data directory) registered are marked down at once,
 * each only while it still carries that process's fingerprint — so the ordinary registrations that
 * follow take them over instead of waiting for their heartbeats to expire.
 */
async function takeBackRows(previous: InstanceRecord, { store, apiStore, cells }: Stores, logger: Logger): Promise<void> {
  const taken: string[] = [];
  // Each row on its own: one that cannot be taken back (its cell deleted meanwhile…) only means
  // that role waits for its heartbeat to expire, as before.
  const attempt = async (what: string, take: () => Promise<boolean>) => {
    try {
      if (await take()) taken.push(what);
    } catch (err) {
      logger.warn({ err: (err as Error).message }, `cannot take back the ${what} row of the previous process`);
    }
  };
  const { conductor, compute, scheduler } = previous;
  if (conductor) {
    await attempt(`conductor ${conductor.hostname}`, () => releaseConductorOfDeadInstance(store, conductor));
  }
  if (compute) {
    await attempt(`compute service ${compute.host}`, async () =>
      releaseServiceOfDeadInstance(await cells.get(await findCell(apiStore, compute.cellUuid)), { id: compute.serviceId, host: compute.host, binary: COMPUTE_BINARY, instanceToken: compute.instanceToken }),
    );
  }
  if (scheduler) {
    await attempt(`scheduler ${scheduler.host}`, async () =>
      releaseServiceOfDeadInstance(await cells.get(await findCell(apiStore, CELL0_UUID)), { id: scheduler.serviceId, host: scheduler.host, binary: SCHEDULER_BINARY, instanceToken: scheduler.instanceToken }),
    );
  }
  logger.warn({ pid: previous.pid, since: previous.startedAt, taken }, 'the previous ironring up of this host and data directory is gone (killed?): took its rows back');
}

/** What this start registered, for the lock file. */
async function registeredRows(input: { conductor: Conductor; computeHost: string; cell: CellMapping } & Stores): Promise<InstanceRows> {
  const { conductor, computeHost, cell, apiStore, cells } = input;
  const rows: InstanceRows = { conductor: { id: conductor.id, hostname: conductor.hostname, rpcUrl: conductor.rpcUrl } };
  const compute = await serviceInstance(await cells.get(cell), computeHost, COMPUTE_BINARY);
  if (compute) rows.compute = { cellUuid: cell.uuid, host: computeHost, serviceId: compute.id, instanceToken: compute.instanceToken };
  const cell0Store = await cells.get(await findCell(apiStore, CELL0_UUID));
  const scheduler = await serviceInstance(cell0Store, computeHost, SCHEDULER_BINARY);
  if (scheduler) rows.scheduler = { host: computeHost, serviceId: scheduler.id, instanceToken: scheduler.instanceToken };
  return rows;
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
