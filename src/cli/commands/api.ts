/** `ironring api`: the REST API on its own, against the configured database. */
import { Command, Option } from 'commander';
import { commandContext } from '../context.js';
import { waitForStopSignal } from '../signals.js';

export function apiCommand(): Command {
  return new Command('api')
    .summary('serve the REST API on its own against the configured database')
    .description(
      'Serve the REST API (Ironic v1 compatible, plus ironring extensions) against the configured database. ' +
        'Any number of API processes may run side by side on one database; they hold no state of their own. ' +
        'The schema must exist (`ironring manage db migrate`). Stops on SIGINT or SIGTERM.',
    )
    .addOption(new Option('--api-address <host:port>', 'address to listen on (overrides [api] address)'))
    .addOption(new Option('--database <url>', 'database URL (overrides [database] url)'))
    .action(async (_opts: unknown, command: Command) => {
      const { config, logger } = commandContext(command, { apiAddress: 'api.address', database: 'database.url' });
      const stopSignal = waitForStopSignal(() => process.exit(130));
      const { openDatabase } = await import('../../db/connect.js');
      const { requireSchema } = await import('../../db/migrate.js');
      const { buildApi, listenApi } = await import('../../api/server.js');
      const store = await openDatabase(config.database.url, {
        maxPoolSize: config.database.max_pool_size,
        connectTimeout: config.database.connect_timeout,
        sqliteBusyTimeout: config.database.sqlite_busy_timeout,
        applicationName: 'ironring-api',
      });
      try {
        await requireSchema(store);
        const app = buildApi({ store, config, logger });
        const url = await listenApi(app, config.api.address);
        process.stdout.write(`ironring API serving ${store.displayUrl} at ${url}/v1\n`);
        await stopSignal;
        await app.close();
      } finally {
        await store.close();
      }
    });
}
