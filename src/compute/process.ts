/**
 * A compute service as its own process (`ironring compute`): the API database, the cell
 * databases and the bare-metal API client from the configuration, and the service itself.
 */
import { CellStores } from '../cells/cell-stores.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import { openDatabase } from '../db/connect.js';
import { requireSchema } from '../db/migrate.js';
import { BaremetalClient, httpTransport } from './baremetal-client.js';
import { ComputeService } from './compute-service.js';

export interface RunningCompute {
  service: ComputeService;
  stop(): Promise<void>;
}

export async function startComputeProcess(config: Config, logger: Logger): Promise<RunningCompute> {
  const { database } = config;
  const api = await openDatabase(config.api_database.url, {
    maxPoolSize: database.max_pool_size,
    connectTimeout: database.connect_timeout,
    sqliteBusyTimeout: database.sqlite_busy_timeout,
    applicationName: `ironring-compute-${config.DEFAULT.host}`,
  });
  const cells = new CellStores({ logger, open: { connectTimeout: database.connect_timeout, sqliteBusyTimeout: database.sqlite_busy_timeout, applicationName: `ironring-compute-${config.DEFAULT.host}` } });
  cells.share(config.api_database.url, api);
  const service = new ComputeService({
    host: config.DEFAULT.host,
    cell: config.compute.cell,
    api,
    cells,
    baremetal: new BaremetalClient(httpTransport(config.baremetal.endpoint, { username: config.baremetal.username, password: config.baremetal.password })),
    logger,
    reportInterval: config.compute.report_interval,
    serviceDownTime: config.compute.service_down_time,
    updateResourcesInterval: config.compute.update_resources_interval,
  });
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
