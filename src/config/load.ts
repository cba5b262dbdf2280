/**
 * Loading the effective configuration: defaults, then the TOML file, then `IRONRING_…` environment
 * variables, then command-line flags — each later source overriding the earlier ones — validated
 * against the option table. Every problem becomes a one-line `ConfigError` naming where the bad value
 * came from, the key and the expected type.
 */
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { ConfigError } from '../common/errors.js';
import { ADDRESS_PATTERN, OPTIONS, describeType, listOptions } from './options.js';
import type { Config, OptionSpec, SectionName } from './options.js';

/** Where an option's effective value came from. */
export type ValueSource = 'default' | 'file' | 'environment' | 'command line' | 'derived';

/** An option named as `section.key` (top-level keys use the `DEFAULT` section). */
export type OptionName = `${string}.${string}`;

export interface LoadOptions {
  /** `--config FILE`; when absent, `IRONRING_CONFIG`, then `./ironring.toml` if it exists. */
  file?: string | undefined;
  /** Values from command-line flags, already parsed by the CLI, by `section.key`. */
  flags?: Partial<Record<OptionName, unknown>>;
  /** The environment (defaults to `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** The working directory relative paths are resolved against (defaults to `process.cwd()`). */
  cwd?: string;
}

export interface LoadedConfig {
  config: Config;
  /** The config file that was read, or null when none was. */
  file: string | null;
  /** For each `section.key`, where its value came from. */
  sources: Record<string, ValueSource>;
}

export const DEFAULT_CONFIG_FILE = 'ironring.toml';
export const ENV_PREFIX = 'IRONRING_';

/** Name of the environment variable for an option: `IRONRING_<SECTION>_<KEY>` (no section for DEFAULT). */
export function envName(section: SectionName, key: string): string {
  return `${ENV_PREFIX}${section === 'DEFAULT' ? '' : `${section}_`}${key}`.toUpperCase();
}

/** Display form of an option in messages: `[section] key`, or just `key` for top-level keys. */
export function displayName(section: string, key: string): string {
  return section === 'DEFAULT' ? key : `[${section}] ${key}`;
}

/** Reads, merges and validates the configuration. Throws `ConfigError` on any problem. */
export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const values = new Map<string, unknown>();
  const sources: Record<string, ValueSource> = {};
  for (const { section, key, spec } of listOptions()) {
    values.set(`${section}.${key}`, spec.default);
    sources[`${section}.${key}`] = 'default';
  }

  const file = resolveConfigFile(options.file ?? env.IRONRING_CONFIG, cwd);
  if (file) {
    for (const [name, value] of Object.entries(readConfigFile(file))) {
      const [section, key] = name.split('.') as [SectionName, string];
      values.set(name, coerce(value, spec(section, key), file, section, key, false));
      sources[name] = 'file';
    }
  }

  const byEnvName = new Map(listOptions().map((o) => [envName(o.section, o.key), o]));
  for (const [variable, raw] of Object.entries(env)) {
    if (!variable.startsWith(ENV_PREFIX) || variable === 'IRONRING_CONFIG' || raw === undefined) continue;
    const option = byEnvName.get(variable);
    if (!option) {
      throw new ConfigError(`environment: unknown variable ${variable} (options are ${ENV_PREFIX}<SECTION>_<KEY>, e.g. IRONRING_DATABASE_URL)`, 'environment');
    }
    values.set(`${option.section}.${option.key}`, coerce(raw, option.spec, `environment ${variable}`, option.section, option.key, true));
    sources[`${option.section}.${option.key}`] = 'environment';
  }

  for (const [name, raw] of Object.entries(options.flags ?? {})) {
    if (raw === undefined) continue;
    const [section, key] = name.split('.') as [SectionName, string];
    values.set(name, coerce(raw, spec(section, key), 'command line', section, key, true));
    sources[name] = 'command line';
  }

  const config = {} as Record<string, Record<string, unknown>>;
  for (const [name, value] of values) {
    const [section, key] = name.split('.') as [string, string];
    (config[section] ??= {})[key] = value;
  }
  const effective = config as unknown as Config;
  derive(effective, sources, cwd);
  return { config: effective, file, sources };
}

function spec(section: SectionName, key: string): OptionSpec {
  const found = (OPTIONS[section] as Record<string, OptionSpec> | undefined)?.[key];
  if (!found) throw new Error(`no such option ${section}.${key}`);
  return found;
}

function resolveConfigFile(given: string | undefined, cwd: string): string | null {
  if (given !== undefined && given !== '') {
    const file = path.resolve(cwd, given);
    if (!existsSync(file)) throw new ConfigError(`${given}: config file not found`, given);
    return file;
  }
  const fallback = path.join(cwd, DEFAULT_CONFIG_FILE);
  return existsSync(fallback) ? fallback : null;
}

/** Parses a TOML file into `section.key` → raw value, refusing unknown sections and keys. */
function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: cannot read config file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, file);
  }
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    const first = String((err as Error).message).split('\n')[0];
    throw new ConfigError(`${file}: not valid TOML: ${first}`, file);
  }
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(doc)) {
    if (isTable(value)) {
      if (name === 'DEFAULT' || !(name in OPTIONS)) {
        throw new ConfigError(`${file}: unknown section [${name}] (sections: ${sectionList()})`, file, name);
      }
      const section = name as SectionName;
      for (const [key, inner] of Object.entries(value)) {
        if (!(key in OPTIONS[section])) {
          throw new ConfigError(`${file}: unknown key ${displayName(section, key)} (known: ${Object.keys(OPTIONS[section]).join(', ')})`, file, `${section}.${key}`);
        }
        out[`${section}.${key}`] = inner;
      }
    } else {
      if (!(name in OPTIONS.DEFAULT)) {
        throw new ConfigError(`${file}: unknown top-level key ${name} (known: ${Object.keys(OPTIONS.DEFAULT).join(', ')})`, file, name);
      }
      out[`DEFAULT.${name}`] = value;
    }
  }
  return out;
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function sectionList(): string {
  return Object.keys(OPTIONS)
    .filter((s) => s !== 'DEFAULT')
    .map((s) => `[${s}]`)
    .join(', ');
}

/**
 * Checks one value against its option's type. Values from TOML must already have the right type;
 * values from the environment or flags are strings and are parsed (`fromText`).
 */
export function coerce(value: unknown, option: OptionSpec, origin: string, section: string, key: string, fromText: boolean): unknown {
  const fail = (): never => {
    const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
    throw new ConfigError(`${origin}: ${displayName(section, key)}: expected ${describeType(option.type)}, got ${shown}`, origin, `${section}.${key}`);
  };
  const type = option.type;
  switch (type.kind) {
    case 'integer':
    case 'number': {
      let n: number;
      if (typeof value === 'number') n = value;
      else if (typeof value === 'bigint') n = Number(value);
      else if (fromText && typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value.trim())) n = Number(value);
      else return fail();
      if (type.kind === 'integer' && !Number.isInteger(n)) return fail();
      if (type.min !== undefined && n < type.min) return fail();
      if ('max' in type && type.max !== undefined && n > type.max) return fail();
      return n;
    }
    case 'boolean': {
      if (typeof value === 'boolean') return value;
      if (fromText && typeof value === 'string') {
        const v = value.trim().toLowerCase();
        if (['true', '1', 'yes', 'on'].includes(v)) return true;
        if (['false', '0', 'no', 'off'].includes(v)) return false;
      }
      return fail();
    }
    case 'enum': {
      if (typeof value === 'string' && type.values.includes(value)) return value;
      return fail();
    }
    case 'address': {
      if (typeof value !== 'string') return fail();
      const m = ADDRESS_PATTERN.exec(value);
      if (!m || Number(m[2]) > 65535) return fail();
      return value;
    }
    case 'string': {
      if (typeof value !== 'string') return fail();
      if (type.pattern && !type.pattern.test(value)) return fail();
      return value;
    }
  }
}

/** The items of a comma-separated list option, trimmed, empty ones dropped ('' is the empty list). */
export function splitList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Fills in values that depend on others: absolute paths, the host name, the default database. */
function derive(config: Config, sources: Record<string, ValueSource>, cwd: string): void {
  config.DEFAULT.data_dir = path.resolve(cwd, config.DEFAULT.data_dir);
  for (const { section, key, spec: option } of listOptions()) {
    if (option.path !== 'data_dir') continue;
    const holder = config[section] as Record<string, unknown>;
    holder[key] = option.list
      ? splitList(String(holder[key]))
          .map((item) => path.resolve(config.DEFAULT.data_dir, item))
          .join(',')
      : path.resolve(config.DEFAULT.data_dir, String(holder[key]));
  }
  if (config.DEFAULT.host === '') {
    config.DEFAULT.host = hostname();
    sources['DEFAULT.host'] = 'derived';
  }
  config.conductor.conductor_group = config.conductor.conductor_group.toLowerCase();
  if (config.database.url === '') {
    config.database.url = `sqlite://${path.join(config.DEFAULT.data_dir, 'ironring.db')}`;
    sources['database.url'] = 'derived';
  }
  if (config.api_database.url === '') {
    config.api_database.url = `sqlite://${path.join(config.DEFAULT.data_dir, 'api.db')}`;
    sources['api_database.url'] = 'derived';
  }
  if (config.baremetal.endpoint === '') {
    config.baremetal.endpoint = `http://${config.api.address}`;
    sources['baremetal.endpoint'] = 'derived';
  }
}
