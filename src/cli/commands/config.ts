/** `ironring config …`: see the effective configuration and a commented sample file. */
import { Command, Option } from 'commander';
import { effectiveOptions, renderDefaults, renderEffective } from '../../config/render.js';
import { commandContext } from '../context.js';

export function configCommand(): Command {
  const config = new Command('config').description('inspect configuration: effective values and defaults');

  config
    .command('show')
    .summary('print the effective configuration, secrets masked')
    .description(
      'Print the effective configuration — defaults, then the config file, then IRONRING_* ' +
        'environment variables, then flags — with secrets masked and where each non-default value came from.',
    )
    .addOption(new Option('-f, --format <format>', 'output format').choices(['toml', 'json']).default('toml'))
    .action((opts: { format: 'toml' | 'json' }, command: Command) => {
      const { loaded } = commandContext(command);
      if (opts.format === 'json') {
        process.stdout.write(`${JSON.stringify({ file: loaded.file, options: effectiveOptions(loaded) }, null, 2)}\n`);
      } else {
        process.stdout.write(renderEffective(loaded));
      }
    });

  config
    .command('defaults')
    .description('print a sample config file: every option at its default, commented, with its description')
    .action(() => {
      process.stdout.write(renderDefaults());
    });

  return config;
}
