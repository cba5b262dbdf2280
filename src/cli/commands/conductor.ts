/**
 * `ironring conductor`: run a conductor (a long-running process), and `ironring conductor list`:
 * the cluster's conductors as the API sees them.
 */
import { Command, Option } from 'commander';
import { apiGet, clientContext, withClientOptions } from '../client.js';
import { commandContext } from '../context.js';
import { emit, renderTable } from '../output.js';
import { waitForStopSignal } from '../signals.js';

interface ApiConductor {
  hostname: string;
  conductor_group: string;
  alive: boolean;
  drivers: string[];
  created_at: string;
  updated_at: string;
}

export function conductorCommand(): Command {
  const conductor = new Command('conductor')
    .summary('run a conductor; `conductor list` shows the cluster\'s conductors')
    .description(
      'Run a conductor: register in the database (refused while a live conductor has the same host name), ' +
        'heartbeat with the database clock, keep the hash ring of its group in line with the live conductors, ' +
        'and release locks of conductors whose heartbeat expired. Stops gracefully on SIGINT or SIGTERM: ' +
        'offline at once, waits up to graceful_shutdown_timeout for locked work, releases its locks; a second ' +
        'signal exits at once. The schema must exist (`ironring manage db migrate`). Every RPC request is ' +
        'authenticated ([json_rpc] auth_strategy, default hmac with the shared [json_rpc] secret_file); on a ' +
        'non-loopback --rpc-address the conductor refuses to start without credentials.',
    )
    .addOption(new Option('--host <name>', 'conductor host name, unique in the cluster (overrides host; default: this machine)'))
    .addOption(new Option('--group <group>', 'conductor group (overrides [conductor] conductor_group)'))
    .addOption(new Option('--database <url>', 'database URL (overrides [database] url)'))
    .addOption(new Option('--rpc-address <host:port>', 'RPC endpoint address (overrides [conductor] rpc_address; port 0 picks one)'))
    .addOption(new Option('--tftp-address <host:port>', 'embedded TFTP server address (overrides [pxe] tftp_address)'))
    .addOption(new Option('--http-address <host:port>', 'embedded HTTP boot server address (overrides [deploy] http_address)'))
    .addOption(new Option('--data-dir <dir>', 'directory for boot files and the image cache (overrides data_dir)'))
    .addHelpText('after', '\nExample (three conductors on one PostgreSQL database):\n  ironring conductor --host c1 --rpc-address 127.0.0.1:0 --database postgres://ironring@db/ironring' +
        '\n(on other hosts: copy <data-dir>/rpc-secret from the first one, or point [json_rpc] secret_file at a shared copy)')
    .action(async (_opts: unknown, command: Command) => {
      const { config, logger } = commandContext(command, {
        host: 'DEFAULT.host',
        group: 'conductor.conductor_group',
        database: 'database.url',
        rpcAddress: 'conductor.rpc_address',
        tftpAddress: 'pxe.tftp_address',
        httpAddress: 'deploy.http_address',
        dataDir: 'DEFAULT.data_dir',
      });
      const stopSignal = waitForStopSignal(() => {
        logger.warn('second signal: exiting now');
        process.exit(130);
      });
      const { openDatabase } = await import('../../db/connect.js');
      const { requireSchema } = await import('../../db/migrate.js');
      const { Conductor } = await import('../../conductor/conductor.js');
      const store = await openDatabase(config.database.url, {
        maxPoolSize: config.database.max_pool_size,
        connectTimeout: config.database.connect_timeout,
        sqliteBusyTimeout: config.database.sqlite_busy_timeout,
        applicationName: `ironring-conductor-${config.DEFAULT.host}`,
      });
      try {
        await requireSchema(store);
        const running = new Conductor({ store, config, logger });
        await running.start();
        process.stdout.write(
          `conductor ${running.hostname} is up (id ${running.id}, group ${JSON.stringify(running.group)}, ring version ${running.view.version}); ` +
            `TFTP ${running.bootEndpoints.tftp ?? 'off'}, HTTP boot ${running.bootEndpoints.http ?? 'off'}; RPC at ${running.rpcUrl} (auth ${config.json_rpc.auth_strategy})\n`,
        );
        await stopSignal;
        await running.stop();
      } finally {
        await store.close();
      }
    });

  withClientOptions(
    conductor.command('list').description('list the conductors known to the cluster, with their group and whether each is alive (by the database clock)'),
  ).action(async (_opts: unknown, command: Command) => {
      const { base, format } = clientContext(command);
      const body = await apiGet<{ conductors: ApiConductor[] }>(base, '/v1/conductors?detail=True');
      const rows = body.conductors.map(({ hostname, conductor_group, alive, drivers, created_at, updated_at }) => ({
        hostname,
        conductor_group,
        alive,
        drivers,
        created_at,
        updated_at,
      }));
      emit(format, rows, () =>
        renderTable(rows, [
          { header: 'Hostname', value: (r) => r.hostname },
          { header: 'Conductor Group', value: (r) => r.conductor_group },
          { header: 'Alive', value: (r) => r.alive },
          { header: 'Last Heartbeat', value: (r) => r.updated_at },
        ]),
      );
    });

  return conductor;
}
