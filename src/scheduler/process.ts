/** The scheduler as its own process (`ironring scheduler`): its databases from the configuration. */
import { CellStores } from '../cells/cell-stores.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import { openDatabase } from '../db/connect.js';
import { requireSchema } from '../db/migrate.js';
import { SchedulerService } from './scheduler-service.js';

export interface RunningScheduler {
  service: SchedulerService;
  stop(): Promise<void>;
}

export async function startSchedulerProcess(config: Config, logger: Logger): Promise<RunningScheduler> {
  const { database } = config;
  const open = { connectTimeout: database.connect_timeout, sqliteBusyTimeout: database.sqlite_busy_timeout, applicationName: `ironring-scheduler-${config.DEFAULT.host}` };
  const api = await openDatabase(config.api_database.url, { maxPoolSize: database.max_pool_size, ...open });
  const cells = new CellStores({ logger, open });
  cells.share(config.api_database.url, api);
  const service = new SchedulerService({
    host: config.DEFAULT.host,
    api,
    cells,
    logger,
    reportInterval: config.compute.report_interval,
    serviceDownTime: config.compute.service_down_time,
    discoverHostsInterval: config.scheduler.discover_hosts_interval,
    discoverHostsByService: config.scheduler.discover_hosts_by_service,
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
