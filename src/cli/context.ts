/**
 * What every command needs before it does its work: the effective configuration (file, environment
 * and its own flags) and a logger. Commands declare which of their flags stand for which option, so
 * a flag, an `IRONRING_…` variable and a config key are three spellings of one setting.
 */
import { Option } from 'commander';
import type { Command } from 'commander';
import { createLogger } from '../common/logger.js';
import type { Logger } from '../common/logger.js';
import { loadConfig } from '../config/load.js';
import type { LoadedConfig, OptionName } from '../config/load.js';
import { LOG_LEVELS } from '../config/options.js';
import type { Config } from '../config/options.js';

/** `--config` and `--log-level`, accepted by every command. */
export function addGlobalOptions(program: Command): Command {
  return program
    .option('-c, --config <file>', 'config file (TOML); default ./ironring.toml if present, or $IRONRING_CONFIG')
    .addOption(new Option('--log-level <level>', 'least severe log level written (overrides log_level)').choices(LOG_LEVELS));
}

export interface CommandContext {
  loaded: LoadedConfig;
  config: Config;
  logger: Logger;
}

/**
 * Loads the configuration for a command. `flagMap` maps the command's option names (commander's
 * camelCase) to config options; flags left unset do not override anything.
 */
export function commandContext(command: Command, flagMap: Record<string, OptionName> = {}): CommandContext {
  const opts = command.optsWithGlobals<Record<string, unknown>>();
  const flags: Partial<Record<OptionName, unknown>> = { 'DEFAULT.log_level': opts.logLevel };
  for (const [flag, option] of Object.entries(flagMap)) flags[option] = opts[flag];
  const loaded = loadConfig({ file: opts.config as string | undefined, flags });
  const logger = createLogger({ level: loaded.config.DEFAULT.log_level });
  return { loaded, config: loaded.config, logger };
}
