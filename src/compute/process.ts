/**
 * A compute service as its own process (`ironring compute`): the API database, the cell
 * databases and the bare-metal API client from the configuration, and the service itself.
 */
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import { BaremetalClient, httpTransport } from './baremetal-client.js';
import { ComputeService } from './compute-service.js';
import { startTierProcess } from './tier-process.js';
import type { RunningTierProcess } from './tier-process.js';

export type RunningCompute = RunningTierProcess<ComputeService>;

export function startComputeProcess(config: Config, logger: Logger): Promise<RunningCompute> {
  return startTierProcess(config, logger, 'compute', ({ api, cells }) =>
    new ComputeService({
      host: config.DEFAULT.host,
      cell: config.compute.cell,
      api,
      cells,
      baremetal: new BaremetalClient(httpTransport(config.baremetal.endpoint, { username: config.baremetal.username, password: config.baremetal.password })),
      logger,
      reportInterval: config.compute.report_interval,
      serviceDownTime: config.compute.service_down_time,
      updateResourcesInterval: config.compute.update_resources_interval,
    }),
  );
}
