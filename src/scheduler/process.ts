/** The scheduler as its own process (`ironring scheduler`): its databases from the configuration. */
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import type { CellStores } from '../cells/cell-stores.js';
import type { Store } from '../db/connect.js';
import { startTierProcess } from '../compute/tier-process.js';
import type { RunningTierProcess } from '../compute/tier-process.js';
import { SchedulerService } from './scheduler-service.js';

export type RunningScheduler = RunningTierProcess<SchedulerService>;

/** A scheduler service as the configuration describes it (its own process, or inside `ironring up`). */
export function schedulerFromConfig(config: Config, logger: Logger, api: Store, cells: CellStores): SchedulerService {
  return new SchedulerService({
    host: config.DEFAULT.host,
    api,
    cells,
    logger,
    reportInterval: config.compute.report_interval,
    serviceDownTime: config.compute.service_down_time,
    discoverHostsInterval: config.scheduler.discover_hosts_interval,
    discoverHostsByService: config.scheduler.discover_hosts_by_service,
  });
}

export function startSchedulerProcess(config: Config, logger: Logger): Promise<RunningScheduler> {
  return startTierProcess(config, logger, 'scheduler', ({ api, cells }) => schedulerFromConfig(config, logger, api, cells));
}
