/**
 * `ironring compute`: run a compute service for one cell (a long-running process); `compute list`
 * and `compute nodes`: the compute services and compute nodes as the compute API sees them.
 */
import { Command, Option } from 'commander';
import { apiRequest, clientContext, withClientOptions } from '../client.js';
import { commandContext } from '../context.js';
import { emit, renderTable } from '../output.js';
import { waitForStopSignal } from '../signals.js';

interface ServiceJson {
  id: number;
  host: string;
  binary: string;
  cell: string;
  state: string;
  status: string;
  host_mapped: boolean | null;
  nodes: number | null;
  last_seen_up: string | null;
}

interface ComputeNodeJson {
  uuid: string;
  host: string;
  cell: string;
  resource_class: string | null;
  mapped: boolean;
}

export function computeCommand(): Command {
  const compute = new Command('compute')
    .summary('run a compute service; `compute list` / `compute nodes` show the compute tier')
    .description(
      'Run a compute service for one cell. It finds its cell in the API database ([api_database] url, by default ' +
        'api.db under the data directory), registers a service row (binary ironring-compute) in the cell database and ' +
        'heartbeats it by the database clock every [compute] report_interval. Every update_resources_interval, and at ' +
        'once when the set of live compute services changes, it lists the nodes through the bare-metal REST API ' +
        '([baremetal] endpoint) and exposes those it owns on a hash ring over the live compute services of its cell as ' +
        'compute nodes. A node with a server stays with the server\'s host while that host is live; when the host dies, ' +
        'the node and its server move to a live service. It deploys and tears down the nodes of its servers. ' +
        'SIGINT/SIGTERM: marked down at once (the others take over its nodes), exit 0; a second signal exits at once. ' +
        'Its host is mapped to the cell by `ironring manage cell discover-hosts --by-service` or the scheduler\'s periodic discovery.',
    )
    .addOption(new Option('--host <name>', 'compute host name, unique in the cell (overrides host; default: this machine)'))
    .addOption(new Option('--cell <name>', 'cell name or uuid (overrides [compute] cell)').default(undefined, 'cell1'))
    .addOption(new Option('--data-dir <dir>', 'data directory, where the default API database lives (overrides data_dir)'))
    .addOption(new Option('--api-database <url>', 'the API database (overrides [api_database] url)'))
    .addOption(new Option('--baremetal-endpoint <url>', 'bare-metal REST API base URL (overrides [baremetal] endpoint)'))
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  # a second compute service beside `ironring up` on one host\n' +
        '  ironring compute --host compute-2 --data-dir ./ironring-data\n' +
        '  # on another host, against PostgreSQL\n' +
        '  ironring compute --host compute-3 --cell cell1 --api-database postgres://ironring@db/ironring_api --baremetal-endpoint http://api.example.org:6385',
    )
    .action(async (_opts: unknown, command: Command) => {
      const { config, logger } = commandContext(command, {
        host: 'DEFAULT.host',
        cell: 'compute.cell',
        dataDir: 'DEFAULT.data_dir',
        apiDatabase: 'api_database.url',
        baremetalEndpoint: 'baremetal.endpoint',
      });
      const stopSignal = waitForStopSignal(() => {
        logger.warn('second signal: exiting now');
        process.exit(130);
      });
      const { startComputeProcess } = await import('../../compute/process.js');
      const running = await startComputeProcess(config, logger);
      try {
        const status = running.service.status();
        process.stdout.write(
          `compute service ${status.host} is up in cell ${status.cell} (service id ${status.serviceId}); ` +
            `live compute services: ${status.liveServices.join(', ')}; exposing ${status.nodes} node(s); bare-metal API ${config.baremetal.endpoint}\n`,
        );
        await stopSignal;
      } finally {
        await running.stop();
      }
    });

  withClientOptions(compute.command('list').description('list compute services (and schedulers) of every cell: up or down by the database clock, host mapped or not, nodes exposed'))
    .action(async (_opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const { services } = await apiRequest<{ services: ServiceJson[] }>(base, 'GET', '/compute/v1/services');
      emit(format, services, () =>
        renderTable(services, [
          { header: 'ID', value: (s) => s.id },
          { header: 'Binary', value: (s) => s.binary },
          { header: 'Host', value: (s) => s.host },
          { header: 'Cell', value: (s) => s.cell },
          { header: 'Status', value: (s) => s.status },
          { header: 'State', value: (s) => s.state },
          { header: 'Host Mapped', value: (s) => s.host_mapped ?? '' },
          { header: 'Nodes', value: (s) => s.nodes ?? '' },
          { header: 'Last Seen Up', value: (s) => s.last_seen_up },
        ]),
      );
    });

  withClientOptions(compute.command('nodes').description('list compute nodes: which compute service exposes each bare-metal node'))
    .action(async (_opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const body = await apiRequest<{ compute_nodes: ComputeNodeJson[] }>(base, 'GET', '/compute/v1/compute-nodes');
      emit(format, body.compute_nodes, () =>
        renderTable(body.compute_nodes, [
          { header: 'Node UUID', value: (n) => n.uuid },
          { header: 'Host', value: (n) => n.host },
          { header: 'Cell', value: (n) => n.cell },
          { header: 'Resource Class', value: (n) => n.resource_class },
        ]),
      );
    });
  return compute;
}
