/**
 * Ironic's root device hints: which disk of a machine gets the image.
 *
 * A node's `properties.root_device` (or `instance_info.root_device`, which wins) is an object such
 * as `{"size": ">= 60", "rotational": false}`. The semantics follow Ironic's documentation and the
 * matcher IPA runs (oslo.utils' specs matcher):
 * - a device must satisfy every hint; the first such device, in listing order, is chosen;
 * - a value may start with an operator; without one, `==` for numbers and `s==` for strings;
 * - string values and device attributes are compared after the same normalisation: trimmed,
 *   lower-cased, then URL-quoted (so `"Samsung SSD"` and `"samsung  ssd"` differ but `"SAMSUNG SSD"`
 *   and `"samsung ssd"` do not); `size` is in GiB and compared with the device's exact size in GiB
 *   (a 100 GiB hint does not match a 100.5 GiB disk: use `>=`);
 * - a device whose attribute is unknown (no serial, no WWN) never matches a hint on that attribute.
 * - without hints, the smallest disk of at least 4 GiB (ties broken by name) is chosen, as IPA's
 *   `guess_root_disk` does.
 *
 * Where Ironic is silently lenient this module refuses instead, naming the hint: an unknown
 * operator (Ironic would compare `"<foo> x"` as a literal string), a numeric operator on a string
 * hint or a string operator on `size` (Ironic would then never match, or crash on float()),
 * `<all-in>` (it compares against a Python list literal, which no device attribute is). `<or>` on
 * `size` compares numbers (Ironic compares a float with strings, so it never matches). `name` may
 * be given with or without `/dev/`.
 */
import type { BlockDevice, SkippedDevice } from './block-devices.js';
import { DeviceNotFound, InvalidRootDeviceHints } from './errors.js';

/** Every hint Ironic accepts, with its type. */
export const HINT_TYPES = {
  size: 'number',
  model: 'string',
  wwn: 'string',
  serial: 'string',
  vendor: 'string',
  wwn_with_extension: 'string',
  wwn_vendor_extension: 'string',
  name: 'string',
  rotational: 'boolean',
  hctl: 'string',
  by_path: 'string',
} as const;

export type HintName = keyof typeof HINT_TYPES;
type StringHintName = { [K in HintName]: (typeof HINT_TYPES)[K] extends 'string' ? K : never }[HintName];

export const STRING_OPERATORS = ['s==', 's!=', 's>=', 's>', 's<=', 's<', '<in>', '<or>'] as const;
export type StringOperator = (typeof STRING_OPERATORS)[number];
/** `=` is Ironic's legacy spelling of `>=`. */
export const NUMBER_OPERATORS = ['==', '!=', '>=', '>', '<=', '<', '=', '<or>', '<range-in>'] as const;
export type NumberOperator = (typeof NUMBER_OPERATORS)[number];

/** One hint after parsing: operator explicit, values normalised. */
export type ParsedHint =
  | { hint: StringHintName; type: 'string'; op: StringOperator; values: string[] }
  | {
      hint: 'size';
      type: 'number';
      op: NumberOperator;
      /** GiB; two bounds for `<range-in>`. */
      values: number[];
      /** For `<range-in>`: whether each bound is inclusive (`[`/`]`) or exclusive (`(`/`)`). */
      inclusive?: [boolean, boolean];
    }
  | { hint: 'rotational'; type: 'boolean'; value: boolean };

/** The smallest disk IPA picks without hints. */
export const MIN_ROOT_DEVICE_BYTES = 4 * 2 ** 30;

const GIB = 2 ** 30;

/** Every operator spelling oslo's specs matcher knows. */
const KNOWN_OPERATORS = ['<range-in>', '<all-in>', '<in>', '<or>', 's==', 's!=', 's<=', 's>=', 's<', 's>', '==', '!=', '>=', '<=', '=', '>', '<'];

/** Python's `urllib.parse.quote` with its default safe set (`/` and unreserved characters kept). */
function pythonQuote(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2F/g, '/');
}

/** Ironic's normalisation of one string value: trimmed, lower-cased, URL-quoted. */
export function normaliseValue(text: string): string {
  return pythonQuote(text.trim().toLowerCase());
}

function splitOperator(hint: string, expression: string): { op: string | undefined; rest: string } {
  // The operator is the leading `<word>` or run of `s`, `=`, `!`, `<`, `>`: `>=500` is `>=` then
  // 500, while `<foo>` or `=>` is one unknown operator rather than `<` or `=` followed by a value.
  const token = /^(<[a-z-]+>|s?[=!<>]+)/.exec(expression)?.[0];
  if (token === undefined) return { op: undefined, rest: expression };
  if (!KNOWN_OPERATORS.includes(token)) {
    throw new InvalidRootDeviceHints(
      hint,
      `unknown operator "${token}" (valid: ${[...new Set([...STRING_OPERATORS, ...NUMBER_OPERATORS])].join(', ')})`,
    );
  }
  return { op: token, rest: expression.slice(token.length) };
}

function orValues(hint: string, expression: string): string[] {
  const values = expression
    .split('<or>')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (values.length === 0) throw new InvalidRootDeviceHints(hint, '"<or>" needs at least one value');
  return values;
}

function parseString(hint: StringHintName, raw: unknown): ParsedHint {
  if (typeof raw !== 'string') {
    throw new InvalidRootDeviceHints(hint, `is not a string value (got ${JSON.stringify(raw)})`);
  }
  const expression = raw.trim().toLowerCase();
  if (expression === '') throw new InvalidRootDeviceHints(hint, 'expression is empty');
  const { op = 's==', rest } = splitOperator(hint, expression);
  if (!(STRING_OPERATORS as readonly string[]).includes(op)) {
    throw new InvalidRootDeviceHints(hint, `operator "${op}" does not apply to strings (valid: ${STRING_OPERATORS.join(', ')})`);
  }
  let values: string[];
  if (op === '<or>') values = orValues(hint, expression);
  else {
    const value = rest.trim();
    if (value === '') throw new InvalidRootDeviceHints(hint, `operator "${op}" needs a value`);
    values = [value];
  }
  if (hint === 'name' && op !== '<in>') values = values.map((v) => (v.startsWith('/') ? v : `/dev/${v}`));
  return { hint, type: 'string', op: op as StringOperator, values: values.map(normaliseValue) };
}

function positiveInteger(hint: string, text: string, whole: unknown): number {
  if (!/^\+?\d+$/.test(text)) {
    throw new InvalidRootDeviceHints(hint, `is not an integer value (got ${JSON.stringify(whole)})`);
  }
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new InvalidRootDeviceHints(hint, `should be a positive integer (got ${JSON.stringify(whole)})`);
  }
  return n;
}

function parseSize(raw: unknown): ParsedHint {
  const hint = 'size';
  if (typeof raw === 'number') {
    return { hint, type: 'number', op: '==', values: [positiveInteger(hint, String(raw), raw)] };
  }
  if (typeof raw !== 'string') throw new InvalidRootDeviceHints(hint, `is not an integer value (got ${JSON.stringify(raw)})`);
  const expression = raw.trim().toLowerCase();
  if (expression === '') throw new InvalidRootDeviceHints(hint, 'expression is empty');
  const { op = '==', rest } = splitOperator(hint, expression);
  if (!(NUMBER_OPERATORS as readonly string[]).includes(op)) {
    throw new InvalidRootDeviceHints(hint, `operator "${op}" does not apply to numbers (valid: ${NUMBER_OPERATORS.join(', ')})`);
  }
  if (op === '<or>') {
    return { hint, type: 'number', op, values: orValues(hint, expression).map((v) => positiveInteger(hint, v, raw)) };
  }
  if (op === '<range-in>') {
    const m = /^\s*([[(])\s*(\S+)\s+(\S+)\s*([\])])\s*$/.exec(rest);
    if (!m) throw new InvalidRootDeviceHints(hint, `"<range-in>" takes two bounds in brackets, e.g. "<range-in> [ 10 100 )" (got ${JSON.stringify(raw)})`);
    const lower = positiveInteger(hint, m[2]!, raw);
    const upper = positiveInteger(hint, m[3]!, raw);
    if (lower > upper) throw new InvalidRootDeviceHints(hint, `"<range-in>" lower bound ${lower} is above the upper bound ${upper}`);
    return { hint, type: 'number', op, values: [lower, upper], inclusive: [m[1] === '[', m[4] === ']'] };
  }
  const value = rest.trim();
  if (value === '') throw new InvalidRootDeviceHints(hint, `operator "${op}" needs a value`);
  return { hint, type: 'number', op: op as NumberOperator, values: [positiveInteger(hint, value, raw)] };
}

/** oslo's strict `bool_from_string`, which Ironic applies to `rotational`. */
function parseBoolean(raw: unknown): ParsedHint {
  const hint = 'rotational';
  if (typeof raw === 'boolean') return { hint, type: 'boolean', value: raw };
  const text = typeof raw === 'string' || typeof raw === 'number' ? String(raw).trim().toLowerCase() : undefined;
  if (text !== undefined && ['1', 't', 'true', 'on', 'y', 'yes'].includes(text)) return { hint, type: 'boolean', value: true };
  if (text !== undefined && ['0', 'f', 'false', 'off', 'n', 'no'].includes(text)) return { hint, type: 'boolean', value: false };
  throw new InvalidRootDeviceHints(hint, `is not a Boolean value (got ${JSON.stringify(raw)})`);
}

/**
 * Parses and validates a `root_device` object. Returns an empty list for no hints (null, undefined
 * or `{}`); throws `InvalidRootDeviceHints` naming the first bad hint otherwise.
 */
export function parseHints(rootDevice: unknown): ParsedHint[] {
  if (rootDevice === null || rootDevice === undefined) return [];
  if (typeof rootDevice !== 'object' || Array.isArray(rootDevice)) {
    throw new InvalidRootDeviceHints(undefined, `expected an object such as {"size": ">= 60"}, got ${JSON.stringify(rootDevice)}`);
  }
  const entries = Object.entries(rootDevice as Record<string, unknown>);
  const unknown = entries.map(([k]) => k).filter((k) => !Object.hasOwn(HINT_TYPES, k));
  if (unknown.length > 0) {
    throw new InvalidRootDeviceHints(
      unknown[0],
      `is not a root device hint${unknown.length > 1 ? ` (nor are ${unknown.slice(1).join(', ')})` : ''}; valid hints: ${Object.keys(HINT_TYPES).join(', ')}`,
    );
  }
  return entries.map(([name, raw]) => {
    const hint = name as HintName;
    if (hint === 'size') return parseSize(raw);
    if (hint === 'rotational') return parseBoolean(raw);
    return parseString(hint, raw);
  });
}

function compare(op: string, a: number | string, b: number | string): boolean {
  switch (op) {
    case '==':
    case 's==':
      return a === b;
    case '!=':
    case 's!=':
      return a !== b;
    case '>=':
    case 's>=':
    case '=':
      return a >= b;
    case '>':
    case 's>':
      return a > b;
    case '<=':
    case 's<=':
      return a <= b;
    case '<':
    case 's<':
      return a < b;
    default:
      return false;
  }
}

/** Whether one device satisfies one parsed hint. */
export function matchesHint(device: BlockDevice, hint: ParsedHint): boolean {
  if (hint.type === 'boolean') return device.rotational === hint.value;
  if (hint.type === 'number') {
    const gib = device.size / GIB;
    if (hint.op === '<or>') return hint.values.includes(gib);
    if (hint.op === '<range-in>') {
      const [lower, upper] = hint.values as [number, number];
      const [lowerIn, upperIn] = hint.inclusive ?? [true, true];
      return (lowerIn ? gib >= lower : gib > lower) && (upperIn ? gib <= upper : gib < upper);
    }
    return compare(hint.op, gib, hint.values[0]!);
  }
  const raw = device[hint.hint];
  if (raw === null || raw.trim() === '') return false;
  const value = normaliseValue(raw);
  if (hint.op === '<or>') return hint.values.includes(value);
  if (hint.op === '<in>') return value.includes(hint.values[0]!);
  return compare(hint.op, value, hint.values[0]!);
}

/** Every device, in order, that satisfies all the hints. */
export function findDevicesByHints(devices: readonly BlockDevice[], hints: readonly ParsedHint[]): BlockDevice[] {
  return devices.filter((device) => hints.every((hint) => matchesHint(device, hint)));
}

/** `/dev/sda (100 GiB, model "X", serial "Y", …)`: what an operator needs to write a hint. */
export function describeDevice(device: BlockDevice): string {
  const gib = device.size / GIB;
  const parts = [`${Number.isInteger(gib) ? gib : gib.toFixed(2)} GiB`];
  for (const key of ['model', 'vendor', 'serial', 'wwn', 'hctl', 'by_path'] as const) {
    if (device[key] !== null) parts.push(`${key} ${JSON.stringify(device[key])}`);
  }
  parts.push(`rotational ${device.rotational}`);
  return `${device.name} (${parts.join(', ')})`;
}

function seen(devices: readonly BlockDevice[], skipped: readonly SkippedDevice[]): string {
  const listed = devices.length === 0 ? 'no disks' : devices.map(describeDevice).join('; ');
  const left = skipped.length === 0 ? '' : `; not eligible: ${skipped.map((s) => `${s.name} (${s.reason})`).join(', ')}`;
  return `seen: ${listed}${left}`;
}

/**
 * The disk to write the image to: the first device (in listing order) matching every hint, or,
 * without hints, the smallest device of at least 4 GiB (IPA's default). Throws
 * `InvalidRootDeviceHints` for malformed hints and `DeviceNotFound`, listing every device seen,
 * when nothing qualifies.
 */
export function chooseRootDevice(
  devices: readonly BlockDevice[],
  rootDevice: unknown,
  options: { skipped?: readonly SkippedDevice[] } = {},
): BlockDevice {
  const hints = parseHints(rootDevice);
  const skipped = options.skipped ?? [];
  if (hints.length === 0) {
    const bySize = [...devices].sort((a, b) => a.size - b.size || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const chosen = bySize.find((d) => d.size >= MIN_ROOT_DEVICE_BYTES);
    if (chosen) return chosen;
    throw new DeviceNotFound(
      `no root device hints were given and no disk is at least ${MIN_ROOT_DEVICE_BYTES / GIB} GiB; ${seen(devices, skipped)}`,
    );
  }
  const match = findDevicesByHints(devices, hints)[0];
  if (match) return match;
  throw new DeviceNotFound(`no disk matches the root device hints ${JSON.stringify(rootDevice)}; ${seen(devices, skipped)}`);
}
