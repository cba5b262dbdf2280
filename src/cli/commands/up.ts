/** `ironring up`: run everything in one process on the embedded default, until SIGINT/SIGTERM. */
import { Command, Option } from 'commander';
import { commandContext } from '../context.js';
import { waitForStopSignal } from '../signals.js';

export function upCommand(): Command {
  return new Command('up')
    .summary('run everything in one process: API on 127.0.0.1:6385, a conductor, a compute service, the scheduler, SQLite under ./ironring-data')
    .description(
      'Run ironring all-in-one: create the data directory, migrate the database (SQLite under ' +
        '--data-dir unless --database is given), serve the REST API and the compute API, and run a conductor, a compute ' +
        'service (host = --host, in the cell named by [compute] cell, created on first start) and the scheduler. Further ' +
        '`ironring compute --host NAME --data-dir DIR` processes join the same cell. Stops cleanly on SIGINT or ' +
        'SIGTERM; a second signal exits at once. A lock file per host in the data directory (up-<host>.lock) refuses a ' +
        'second `up` of the same host and directory while the first runs, and lets a restart after a crash (kill -9) take ' +
        'its rows back at once instead of waiting for their heartbeats to expire.',
    )
    .addOption(new Option('--data-dir <dir>', 'directory for local state (overrides data_dir)').default(undefined, './ironring-data'))
    .addOption(new Option('--api-address <host:port>', 'address the API listens on (overrides [api] address)').default(undefined, '127.0.0.1:6385'))
    .addOption(new Option('--database <url>', 'database URL (overrides [database] url); default sqlite under the data dir'))
    .addOption(new Option('--rpc-address <host:port>', 'the conductor\'s RPC endpoint (overrides [conductor] rpc_address)').default(undefined, '127.0.0.1:6386'))
    .addOption(new Option('--tftp-address <host:port>', 'embedded TFTP server address (overrides [pxe] tftp_address)').default(undefined, '0.0.0.0:69'))
    .addOption(new Option('--http-address <host:port>', 'embedded HTTP boot server address (overrides [deploy] http_address)').default(undefined, '0.0.0.0:8080'))
    .addOption(new Option('--host <name>', 'the conductor\'s host name (overrides host; default: this machine)'))
    .addHelpText(
      'after',
      '\nExamples:\n  npx ironring up\n  npx ironring up --data-dir /var/lib/ironring --api-address 0.0.0.0:6385\n' +
        '  npx ironring up --database postgres://ironring@db.example.org/ironring',
    )
    .action(async (_opts: unknown, command: Command) => {
      const { config, logger, loaded } = commandContext(command, {
        dataDir: 'DEFAULT.data_dir',
        apiAddress: 'api.address',
        database: 'database.url',
        rpcAddress: 'conductor.rpc_address',
        host: 'DEFAULT.host',
        tftpAddress: 'pxe.tftp_address',
        httpAddress: 'deploy.http_address',
      });
      // Listen for the stop signal before anything starts, so an early Ctrl+C still stops cleanly.
      const stopSignal = waitForStopSignal(() => {
        logger.warn('second signal: exiting now');
        process.exit(130);
      });
      // Loaded on use so that `--help` and other commands start fast.
      const { startAllInOne } = await import('../../up/all-in-one.js');
      const services = await startAllInOne(config, logger, {
        tftp: loaded.sources['pxe.tftp_address'] === 'default',
        http: loaded.sources['deploy.http_address'] === 'default',
      });
      process.stdout.write(
        [
          'ironring is up.',
          `  data directory: ${services.dataDir}`,
          `  database:       ${services.database}`,
          `  API:            ${services.apiUrl}/v1  (health: ${services.apiUrl}/healthz)`,
          `  conductor:      ${services.conductor.hostname} (RPC ${services.conductor.rpcUrl}, ${services.conductor.rpcAuth})`,
          `  boot:           TFTP ${services.conductor.tftp ?? 'off'}, HTTP ${services.conductor.http ?? 'off'}, ProxyDHCP ${services.conductor.proxyDhcp ?? 'off'}`,
          `  compute:        ${services.compute.host} in cell ${services.compute.cell} (${services.compute.cellUuid}); API database ${services.compute.apiDatabase}`,
          `  scheduler:      host discovery ${services.compute.discovery}; servers at ${services.apiUrl}/compute/v1/servers`,
          `  try:            curl ${services.apiUrl}/v1`,
          'Press Ctrl+C to stop.',
          '',
        ].join('\n'),
      );
      await stopSignal;
      logger.info('stopping');
      await services.stop();
    });
}
