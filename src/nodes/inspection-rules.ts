/**
 * Inspection rules (Ironic's API 1.96 resource, a subset): conditions on what an inspection found,
 * and actions on the node when they all hold, run by the node's owner after the built-in hooks
 * (`conductor/inspection.ts`), highest `priority` first. What ironring takes of Ironic's format:
 *
 * - A rule: `description`, `priority` (0–9999, default 0), `phase` (`main`), `sensitive` (its
 *   conditions and actions are not shown), `conditions` (all must hold; none: always), `actions`.
 * - Conditions `{"op", "args"}`, `op` prefixed with `!` to invert: `eq`, `lt`, `gt` (`values`: every
 *   neighbour pair compares), `is-empty`, `is-none`, `is-true`, `is-false` (`value`), `one-of`
 *   (`value`, `values`), `matches` (the whole value), `contains` (`value`, `regex`).
 * - Actions `{"op", "args"}`: `fail` (`msg`: the inspection fails with it), `set-attribute`,
 *   `extend-attribute` (`path`, `value`, `unique`), `del-attribute` (`path`) on `/properties/…`,
 *   `/extra/…`, `/driver_info/…` and `/resource_class`; `set-capability` (`name`, `value`),
 *   `unset-capability` (`name`); `add-trait`, `remove-trait` (`name`, a valid trait: `nodes/traits.ts`);
 *   `set-plugin-data` (`path` dotted, `value`); `log` (`msg`, `level`).
 * - `args` as an object, or a list in the order above. Strings are interpolated as Python's
 *   `str.format` would with `inventory`, `plugin_data` and `node`: `{inventory[cpu][count]}`,
 *   `{node.properties[cpus]}`; a string that is one reference alone keeps the value's type (so
 *   `lt` compares numbers), where Ironic gives its text.
 * Not taken: loops (`loop`, `multiple`), `in-net`, port actions, `api-call`. Rules are refused (400) when they use them.
 */
import { InvalidParameter } from '../common/errors.js';
import { checkTrait } from './traits.js';
import { isForbiddenKey } from '../common/json-safety.js';

export interface RuleOperation {
  op: string;
  args: Record<string, unknown> | unknown[];
}

export interface InspectionRule {
  uuid: string;
  description: string | null;
  priority: number;
  phase: string;
  sensitive: boolean;
  conditions: RuleOperation[];
  actions: RuleOperation[];
}

/** Each operation's arguments: required, then optional (the order a list of args is read in). */
const CONDITIONS: Readonly<Record<string, readonly [readonly string[], readonly string[]]>> = {
  eq: [['values'], []],
  lt: [['values'], []],
  gt: [['values'], []],
  'is-empty': [['value'], []],
  'is-none': [['value'], []],
  'is-true': [['value'], []],
  'is-false': [['value'], []],
  'one-of': [['value'], ['values']],
  matches: [['value', 'regex'], []],
  contains: [['value', 'regex'], []],
};

const ACTIONS: Readonly<Record<string, readonly [readonly string[], readonly string[]]>> = {
  fail: [['msg'], []],
  'set-attribute': [['path', 'value'], []],
  'extend-attribute': [['path', 'value'], ['unique']],
  'del-attribute': [['path'], []],
  'set-capability': [['name', 'value'], []],
  'unset-capability': [['name'], []],
  'add-trait': [['name'], []],
  'remove-trait': [['name'], []],
  'set-plugin-data': [['path', 'value'], []],
  log: [['msg'], ['level']],
};

/** Arguments never interpolated: they name things rather than carry values. */
const LITERAL_ARGS = new Set(['path', 'name', 'regex', 'level', 'unique']);
/** Node fields the attribute actions may change. */
const ATTRIBUTE_ROOTS = ['properties', 'extra', 'driver_info', 'resource_class'] as const;
const MAX_OPERATIONS = 50;
const MAX_REGEX = 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `args` as an object of the operation's argument names; `InvalidParameter` naming `where`. */
function namedArgs(where: string, signature: readonly [readonly string[], readonly string[]], args: unknown): Record<string, unknown> {
  const [required, optional] = signature;
  let named: Record<string, unknown>;
  if (Array.isArray(args)) {
    if (args.length < required.length) throw new InvalidParameter(`${where}.args: missing required argument(s): ${required.slice(args.length).join(', ')}`);
    if (args.length > required.length + optional.length) throw new InvalidParameter(`${where}.args: at most ${required.length + optional.length} arguments`);
    named = Object.fromEntries([...required, ...optional].slice(0, args.length).map((name, i) => [name, args[i]]));
  } else if (isObject(args)) {
    named = args;
  } else {
    throw new InvalidParameter(`${where}.args: args must be either a list or dictionary`);
  }
  const missing = required.filter((n) => !Object.hasOwn(named, n));
  const unexpected = Object.keys(named).filter((n) => !required.includes(n) && !optional.includes(n));
  const problems = [missing.length > 0 ? `missing required argument(s): ${missing.join(', ')}` : '', unexpected.length > 0 ? `unexpected argument(s): ${unexpected.join(', ')}` : ''].filter((p) => p !== '');
  if (problems.length > 0) throw new InvalidParameter(`${where}.args: ${problems.join('; ')}`);
  return named;
}

/** The attribute path of an action, as its root and keys (`/properties/a/b` → properties, [a, b]). */
export function attributePath(path: unknown, where = 'path'): { root: (typeof ATTRIBUTE_ROOTS)[number]; keys: string[] } {
  if (typeof path !== 'string') throw new InvalidParameter(`${where}: expected a string such as /properties/cpus`);
  const parts = path.replace(/^\//, '').split('/');
  const root = parts[0] as (typeof ATTRIBUTE_ROOTS)[number];
  if (!(ATTRIBUTE_ROOTS as readonly string[]).includes(root)) throw new InvalidParameter(`${where}: ${JSON.stringify(path)} is not a node field rules may change (${ATTRIBUTE_ROOTS.map((r) => `/${r}`).join(', ')})`);
  const keys = parts.slice(1);
  if (root === 'resource_class' ? keys.length > 0 : keys.length === 0 || keys.some((k) => k === '' || isForbiddenKey(k))) {
    throw new InvalidParameter(`${where}: ${JSON.stringify(path)} must name ${root === 'resource_class' ? 'the field alone' : `a key under /${root}`}`);
  }
  return { root, keys };
}

function checkOperations(where: string, list: unknown, table: typeof CONDITIONS, kind: string, required: boolean): RuleOperation[] {
  if (list === undefined || list === null) {
    if (required) throw new InvalidParameter(`${where}: at least one ${kind} is required`);
    return [];
  }
  if (!Array.isArray(list)) throw new InvalidParameter(`${where}: expected a list`);
  if (required && list.length === 0) throw new InvalidParameter(`${where}: at least one ${kind} is required`);
  if (list.length > MAX_OPERATIONS) throw new InvalidParameter(`${where}: at most ${MAX_OPERATIONS}`);
  return list.map((raw, i) => {
    const at = `${where}[${i}]`;
    if (!isObject(raw) || typeof raw.op !== 'string') throw new InvalidParameter(`${at}.op: required, a string`);
    const extra = Object.keys(raw).filter((k) => k !== 'op' && k !== 'args');
    if (extra.length > 0) throw new InvalidParameter(`${at}: ${extra.join(', ')} not supported by ironring's inspection rules (no loops)`);
    const name = kind === 'condition' ? raw.op.replace(/^!/, '') : raw.op;
    const signature = table[name];
    if (signature === undefined) throw new InvalidParameter(`${at}.op: unsupported ${kind} ${JSON.stringify(raw.op)}; one of ${Object.keys(table).join(', ')}${kind === 'condition' ? ' (! in front inverts)' : ''}`);
    const args = namedArgs(at, signature, raw.args ?? {});
    if (typeof args.regex === 'string') {
      if (args.regex.length > MAX_REGEX) throw new InvalidParameter(`${at}.args.regex: at most ${MAX_REGEX} characters`);
      try {
        new RegExp(args.regex);
      } catch (err) {
        throw new InvalidParameter(`${at}.args.regex: invalid regular expression: ${(err as Error).message}`);
      }
    } else if (Object.hasOwn(args, 'regex')) throw new InvalidParameter(`${at}.args.regex: expected a string`);
    if (['set-attribute', 'extend-attribute', 'del-attribute'].includes(name)) attributePath(args.path, `${at}.args.path`);
    if (name === 'set-plugin-data' && (typeof args.path !== 'string' || args.path === '' || args.path.split('.').some((k) => k === '' || isForbiddenKey(k)))) throw new InvalidParameter(`${at}.args.path: expected a dotted path such as extra.rack`);
    if (['set-capability', 'unset-capability'].includes(name) && (typeof args.name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(args.name))) throw new InvalidParameter(`${at}.args.name: a capability name (letters, digits, _ . -)`);
    if (['add-trait', 'remove-trait'].includes(name)) checkTrait(args.name, `${at}.args.name`);
    if (name === 'log' && args.level !== undefined && !['debug', 'info', 'warning', 'error', 'critical'].includes(String(args.level))) throw new InvalidParameter(`${at}.args.level: one of debug, info, warning, error, critical`);
    return { op: raw.op, args: raw.args as RuleOperation['args'] ?? {} };
  });
}

/** A rule as the API receives it, checked; `InvalidParameter` naming the field otherwise. */
export function parseInspectionRule(body: unknown): Omit<InspectionRule, 'uuid'> & { uuid?: string } {
  if (!isObject(body)) throw new InvalidParameter('request body: expected a JSON object');
  const known = ['uuid', 'description', 'priority', 'phase', 'sensitive', 'conditions', 'actions'];
  const unknown = Object.keys(body).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw new InvalidParameter(`${unknown.join(', ')}: not a field of an inspection rule (${known.join(', ')})`);
  const { uuid, description, priority, phase, sensitive } = body;
  if (uuid !== undefined && (typeof uuid !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(uuid))) throw new InvalidParameter('uuid: expected a UUID');
  if (description !== undefined && description !== null && (typeof description !== 'string' || description.length > 255)) throw new InvalidParameter('description: a string of at most 255 characters');
  if (priority !== undefined && (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 0 || priority > 9999)) throw new InvalidParameter('priority: an integer from 0 to 9999');
  if (phase !== undefined && phase !== 'main') throw new InvalidParameter('phase: only "main" (rules run once the inventory is in)');
  if (sensitive !== undefined && typeof sensitive !== 'boolean') throw new InvalidParameter('sensitive: true or false');
  return {
    ...(typeof uuid === 'string' ? { uuid: uuid.toLowerCase() } : {}),
    description: typeof description === 'string' ? description : null,
    priority: typeof priority === 'number' ? priority : 0,
    phase: 'main',
    sensitive: sensitive === true,
    conditions: checkOperations('conditions', body.conditions, CONDITIONS, 'condition', false),
    actions: checkOperations('actions', body.actions, ACTIONS, 'action', true),
  };
}

/** What the rules may read. */
export interface RuleContext {
  inventory: Record<string, unknown>;
  plugin_data: Record<string, unknown>;
  node: Record<string, unknown>;
}

/** The node fields the rules changed, and what they failed with. */
export interface RuleOutcome {
  changes: { properties?: Record<string, unknown>; extra?: Record<string, unknown>; driver_info?: Record<string, unknown>; resource_class?: unknown };
  /** Rules whose conditions held, in the order they ran. */
  applied: string[];
  log: string[];
  /** Traits to add and to remove (`add-trait`, `remove-trait`; the last word on a trait wins). */
  traits: { add: string[]; remove: string[] };
}

/** `{inventory[cpu][count]}`, `{node.uuid}`: a value of `ctx`, or undefined. */
function lookup(reference: string, ctx: RuleContext): unknown {
  const m = /^([a-z_]+)((?:\[[^\]]*\]|\.[A-Za-z0-9_]+)*)$/.exec(reference);
  if (m === null || !['inventory', 'plugin_data', 'node'].includes(m[1]!)) return undefined;
  let value: unknown = ctx[m[1] as keyof RuleContext];
  for (const [, bracket, dot] of m[2]!.matchAll(/\[([^\]]*)\]|\.([A-Za-z0-9_]+)/g)) {
    const key = bracket ?? dot!;
    if (isForbiddenKey(key)) return undefined;
    if (Array.isArray(value) && /^\d+$/.test(key)) value = value[Number(key)];
    else if (isObject(value) && Object.hasOwn(value, key)) value = value[key];
    else return undefined;
  }
  return value;
}

/** Interpolates one argument: a lone reference keeps its type; otherwise each reference becomes text. */
export function interpolate(value: unknown, ctx: RuleContext): unknown {
  if (Array.isArray(value)) return value.map((v) => interpolate(v, ctx));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, ctx)]));
  if (typeof value !== 'string') return value;
  const alone = /^\{([^{}]+)\}$/.exec(value);
  if (alone !== null) {
    const found = lookup(alone[1]!, ctx);
    return found === undefined ? value : found;
  }
  return value.replace(/\{([^{}]+)\}/g, (whole, ref: string) => {
    const found = lookup(ref, ctx);
    if (found === undefined) return whole;
    return typeof found === 'object' ? JSON.stringify(found) : String(found);
  });
}

function argsOf(operation: RuleOperation, signature: readonly [readonly string[], readonly string[]], ctx: RuleContext): Record<string, unknown> {
  const named = namedArgs(operation.op, signature, operation.args);
  return Object.fromEntries(Object.entries(named).map(([k, v]) => [k, LITERAL_ARGS.has(k) ? v : interpolate(v, ctx)]));
}

const text = (v: unknown) => (v === null || v === undefined ? 'None' : typeof v === 'object' ? JSON.stringify(v) : String(v));

function compare(a: unknown, b: unknown): number | null {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return null;
}

function holds(condition: RuleOperation, ctx: RuleContext): boolean {
  const inverted = condition.op.startsWith('!');
  const name = condition.op.replace(/^!/, '');
  const a = argsOf(condition, CONDITIONS[name]!, ctx);
  let result: boolean;
  switch (name) {
    case 'eq':
    case 'lt':
    case 'gt': {
      const values = Array.isArray(a.values) ? a.values : [];
      result = values.every((v, i) => {
        if (i === 0) return true;
        if (name === 'eq') return JSON.stringify(values[i - 1]) === JSON.stringify(v);
        const c = compare(values[i - 1], v);
        return c !== null && (name === 'lt' ? c < 0 : c > 0);
      });
      break;
    }
    case 'is-empty':
      result = ['', 'None', '[]', '{}'].includes(text(a.value)) || (Array.isArray(a.value) && a.value.length === 0) || (isObject(a.value) && Object.keys(a.value).length === 0);
      break;
    case 'is-none':
      result = a.value === null || a.value === undefined;
      break;
    case 'is-true':
      result = a.value === true || (typeof a.value === 'number' && a.value !== 0) || (typeof a.value === 'string' && ['yes', 'true'].includes(a.value.toLowerCase()));
      break;
    case 'is-false':
      result = a.value === false || a.value === null || (typeof a.value === 'number' && a.value === 0) || (typeof a.value === 'string' && ['no', 'false'].includes(a.value.toLowerCase()));
      break;
    case 'one-of':
      result = Array.isArray(a.values) && a.values.some((v) => JSON.stringify(v) === JSON.stringify(a.value));
      break;
    case 'matches':
      result = new RegExp(`^(?:${String(a.regex)})$`).test(text(a.value));
      break;
    default:
      result = new RegExp(String(a.regex)).test(text(a.value));
  }
  return inverted ? !result : result;
}

/** The rule failed the inspection (`fail`), or an action could not be applied. */
export class RuleFailed extends Error {}

function setIn(target: Record<string, unknown>, keys: readonly string[], value: unknown, mode: 'set' | 'extend' | 'delete', unique = false): void {
  let current = target;
  for (const key of keys.slice(0, -1)) {
    const next = current[key];
    if (!isObject(next)) {
      if (mode === 'delete') return;
      current[key] = {};
    }
    current = current[key] as Record<string, unknown>;
  }
  const last = keys[keys.length - 1]!;
  if (mode === 'delete') delete current[last];
  else if (mode === 'set') current[last] = value;
  else {
    const list = current[last] ?? [];
    if (!Array.isArray(list)) throw new RuleFailed(`cannot extend ${keys.join('/')}: it is not a list`);
    if (!unique || !list.some((v) => JSON.stringify(v) === JSON.stringify(value))) list.push(value);
    current[last] = list;
  }
}

/**
 * Runs `rules` (highest priority first, then as given) against an inspection's findings; returns
 * the node fields they changed. `RuleFailed` when a rule's `fail` action runs or an action cannot
 * apply: the inspection fails with its message.
 */
export function runInspectionRules(rules: readonly InspectionRule[], ctx: RuleContext): RuleOutcome {
  const node = structuredClone(ctx.node);
  const outcome: RuleOutcome = { changes: {}, applied: [], log: [], traits: { add: [], remove: [] } };
  const ordered = [...rules].sort((a, b) => b.priority - a.priority);
  for (const rule of ordered) {
    const view: RuleContext = { inventory: ctx.inventory, plugin_data: ctx.plugin_data, node };
    if (!rule.conditions.every((c) => holds(c, view))) continue;
    outcome.applied.push(rule.uuid);
    for (const action of rule.actions) {
      const a = argsOf(action, ACTIONS[action.op]!, view);
      switch (action.op) {
        case 'fail':
          throw new RuleFailed(`inspection rule ${rule.description ?? rule.uuid}: ${text(a.msg)}`);
        case 'log':
          outcome.log.push(`${rule.description ?? rule.uuid}: ${text(a.msg)}`);
          break;
        case 'set-plugin-data':
          setIn(ctx.plugin_data, String(a.path).split('.'), a.value, 'set');
          break;
        case 'add-trait':
        case 'remove-trait': {
          const trait = String(a.name);
          const [to, from] = action.op === 'add-trait' ? [outcome.traits.add, outcome.traits.remove] : [outcome.traits.remove, outcome.traits.add];
          if (from.includes(trait)) from.splice(from.indexOf(trait), 1);
          if (!to.includes(trait)) to.push(trait);
          break;
        }
        case 'set-capability':
        case 'unset-capability': {
          const props = (node.properties = isObject(node.properties) ? node.properties : {});
          const parts = typeof props.capabilities === 'string' && props.capabilities !== '' ? props.capabilities.split(',').filter((p) => p.split(':')[0] !== a.name) : [];
          if (action.op === 'set-capability') parts.push(`${String(a.name)}:${text(a.value)}`);
          props.capabilities = parts.join(',');
          outcome.changes.properties = props;
          break;
        }
        default: {
          const { root, keys } = attributePath(a.path);
          const mode = action.op === 'set-attribute' ? 'set' : action.op === 'extend-attribute' ? 'extend' : 'delete';
          if (root === 'resource_class') {
            if (mode === 'extend') throw new RuleFailed('cannot extend /resource_class: it is not a list');
            if (mode === 'set' && (typeof a.value !== 'string' || a.value.length > 80)) throw new RuleFailed('/resource_class: a string of at most 80 characters');
            node.resource_class = mode === 'set' ? a.value : null;
            outcome.changes.resource_class = node.resource_class;
            break;
          }
          const field = (node[root] = isObject(node[root]) ? node[root] : {}) as Record<string, unknown>;
          setIn(field, keys, a.value, mode, a.unique === true);
          outcome.changes[root] = field;
        }
      }
    }
  }
  return outcome;
}
