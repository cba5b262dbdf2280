/** `ironring scheduler`: the scheduler service with periodic host discovery (a long-running process). */
import { Command, Option } from 'commander';
import { commandContext } from '../context.js';
import { waitForStopSignal } from '../signals.js';

export function schedulerCommand(): Command {
  return new Command('scheduler')
    .summary('run a scheduler: periodic host discovery on the leading scheduler')
    .description(
      'Run a scheduler. It registers a service row (binary ironring-scheduler) in cell0\'s database and heartbeats it by ' +
        'the database clock. One scheduler at a time leads — the live one with the lowest service id among those with ' +
        'periodic discovery on — and runs host discovery every [scheduler] discover_hosts_interval seconds (-1 or 0: off), ' +
        'by service unless [scheduler] discover_hosts_by_service is false, so a compute service that registers is mapped ' +
        'to its cell within one interval even before it has nodes. Placement itself is done by the compute API ' +
        '(POST /compute/v1/servers) from the databases; no scheduler process needs to be up for it. ' +
        'SIGINT/SIGTERM: marked down at once (another scheduler takes the lead), exit 0.',
    )
    .addOption(new Option('--host <name>', 'scheduler host name (overrides host; default: this machine)'))
    .addOption(new Option('--data-dir <dir>', 'data directory, where the default API database lives (overrides data_dir)'))
    .addOption(new Option('--api-database <url>', 'the API database (overrides [api_database] url)'))
    .addOption(new Option('--discover-hosts-interval <seconds>', 'seconds between periodic discoveries, -1 or 0 to disable (overrides [scheduler] discover_hosts_interval)'))
    .addHelpText('after', '\nExample:\n  ironring scheduler --host sched-1 --api-database postgres://ironring@db/ironring_api --discover-hosts-interval 30')
    .action(async (_opts: unknown, command: Command) => {
      const { config, logger } = commandContext(command, {
        host: 'DEFAULT.host',
        dataDir: 'DEFAULT.data_dir',
        apiDatabase: 'api_database.url',
        discoverHostsInterval: 'scheduler.discover_hosts_interval',
      });
      const stopSignal = waitForStopSignal(() => {
        logger.warn('second signal: exiting now');
        process.exit(130);
      });
      const { startSchedulerProcess } = await import('../../scheduler/process.js');
      const running = await startSchedulerProcess(config, logger);
      try {
        const s = config.scheduler;
        process.stdout.write(
          `scheduler ${running.service.host} is up (service id ${running.service.id}); periodic discovery ` +
            `${s.discover_hosts_interval > 0 ? `every ${s.discover_hosts_interval} s ${s.discover_hosts_by_service ? 'by service' : 'by compute node'} when leading` : 'off'}\n`,
        );
        await stopSignal;
      } finally {
        await running.stop();
      }
    });
}
