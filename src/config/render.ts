/**
 * Printing configuration for people: the commented sample file (`config defaults`) and the
 * effective values with their sources (`config show`).
 */
import { stringify as toToml } from 'smol-toml';
import { MASK, maskUrl } from '../common/mask.js';
import { envName } from './load.js';
import type { LoadedConfig, ValueSource } from './load.js';
import { OPTIONS, describeType, listOptions } from './options.js';
import type { OptionSpec, SectionName } from './options.js';

function tomlValue(value: unknown): string {
  // smol-toml renders a scalar only inside a table; render `{ v = … }` and keep the right-hand side.
  return toToml({ v: value }).trim().replace(/^v = /, '');
}

/** A complete sample config file: every option commented out at its default, with its description. */
export function renderDefaults(): string {
  const lines: string[] = [
    '# ironring configuration (TOML).',
    '# Precedence: this file < IRONRING_<SECTION>_<KEY> environment variables < command-line flags.',
    '# Every option is shown at its default, commented out; uncomment to change it.',
    '',
  ];
  for (const section of Object.keys(OPTIONS) as SectionName[]) {
    if (section !== 'DEFAULT') lines.push(`[${section}]`);
    for (const [key, raw] of Object.entries(OPTIONS[section])) {
      const option = raw as OptionSpec;
      lines.push(`# ${option.description}`);
      lines.push(`# Type: ${describeType(option.type)}. Environment: ${envName(section, key)}.`);
      lines.push(`#${key} = ${tomlValue(option.default)}`);
      lines.push('');
    }
  }
  return lines.join('\n');
}

export interface ShownOption {
  section: string;
  key: string;
  value: unknown;
  source: ValueSource;
}

/** The effective configuration as a flat list, secrets masked. */
export function effectiveOptions(loaded: LoadedConfig): ShownOption[] {
  return listOptions().map(({ section, key, spec }) => {
    const value = (loaded.config[section] as Record<string, unknown>)[key];
    return { section, key, value: spec.secret ? maskSecret(value) : value, source: loaded.sources[`${section}.${key}`] ?? 'default' };
  });
}

function maskSecret(value: unknown): unknown {
  if (typeof value !== 'string' || value === '') return value;
  return value.includes('://') ? maskUrl(value) : MASK;
}

/** The effective configuration as a TOML document (secrets masked), for `config show`. */
export function renderEffective(loaded: LoadedConfig): string {
  const head = [`# Effective ironring configuration${loaded.file ? ` (file: ${loaded.file})` : ' (no config file)'}.`, ''];
  let current = 'DEFAULT';
  const body: string[] = [];
  for (const o of effectiveOptions(loaded)) {
    if (o.section !== current) {
      body.push('', `[${o.section}]`);
      current = o.section;
    }
    const note = o.source === 'default' ? '' : `  # from ${o.source}`;
    body.push(`${o.key} = ${tomlValue(o.value)}${note}`);
  }
  return [...head, ...body].join('\n').trimEnd() + '\n';
}

