/**
 * Switching the active label of a rendered config in place, as Ironic does: rewrite the one line
 * that selects it (`default …`, `goto …`, `set default=…`) and leave the rest byte for byte.
 */
import { InvalidBootInput } from '../errors.js';
import type { BootLabel, ConfigFormat } from '../types.js';

// Anchored at a line start and not global: only the selector line, never `|| goto deploy`.
// `entry` is the line that starts a label's definition: a config holds only the labels it has images for.
const SELECTORS: Record<ConfigFormat, { pattern: RegExp; line: (label: BootLabel) => string; entry: (label: BootLabel) => string }> = {
  pxelinux: { pattern: /^default .*$/m, line: (l) => `default ${l}`, entry: (l) => `label ${l}` },
  ipxe: { pattern: /^goto .*$/m, line: (l) => `goto ${l}`, entry: (l) => `:${l}` },
  grub: { pattern: /^set default=.*$/m, line: (l) => `set default=${l}`, entry: (l) => `menuentry "${l}" {` },
};

/** Returns `config` with its selector line pointing at `label`, which the config must define. */
export function switchBootLabel(config: string, format: ConfigFormat, label: BootLabel): string {
  const selector = SELECTORS[format];
  if (!selector.pattern.test(config)) throw new InvalidBootInput('config', `has no ${format} label selector line`);
  if (!config.split('\n').includes(selector.entry(label))) throw new InvalidBootInput('label', `${label} is not defined in this ${format} config`);
  return config.replace(selector.pattern, selector.line(label));
}

/** The label a config currently selects, or null when it has no selector line. */
export function activeBootLabel(config: string, format: ConfigFormat): string | null {
  const match = SELECTORS[format].pattern.exec(config);
  if (match === null) return null;
  return match[0].replace(/^(default |goto |set default=)/, '').trim();
}
