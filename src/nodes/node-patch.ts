/**
 * JSON Patch (RFC 6902) for nodes, as the Ironic API accepts it: `add`, `replace` and `remove` on the
 * node's writable fields and inside its JSON fields (`/driver_info/ipmi_address`). Pure: it takes
 * the node's current values and returns the columns to write, or throws a 400 naming the path.
 */
import { InvalidParameter } from '../common/errors.js';
import { cloneJson, isForbiddenKey, stringProblem } from '../common/json-safety.js';
import type { NodeRow } from './node-store.js';

export const NODE_NAME_PATTERN = /^[A-Za-z0-9\-._~]{1,255}$/;
import { UUID_PATTERN } from '../common/uuid.js';
const GROUP_PATTERN = /^[a-zA-Z0-9_.-]*$/;

export const PATCH_JSON_FIELDS = ['driver_info', 'properties', 'extra', 'instance_info'] as const;
export const PATCH_INTERFACE_FIELDS = [
  'boot_interface', 'console_interface', 'deploy_interface', 'inspect_interface', 'management_interface',
  'network_interface', 'power_interface', 'rescue_interface', 'vendor_interface',
] as const;
export const PATCH_SCALAR_FIELDS = ['name', 'driver', 'instance_uuid', 'resource_class', 'conductor_group', ...PATCH_INTERFACE_FIELDS] as const;

type JsonField = (typeof PATCH_JSON_FIELDS)[number];
type ScalarField = (typeof PATCH_SCALAR_FIELDS)[number];

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
}

/** The columns a patch changes: JSON fields as objects, scalars as strings or null. */
export type NodeChanges = Partial<Record<JsonField, Record<string, unknown>>> & Partial<Record<ScalarField, string | null>>;

/** Checks a patch document's shape; returns the operations. */
export function parsePatch(body: unknown): PatchOperation[] {
  if (!Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON Patch document (an array of operations)');
  if (body.length === 0) throw new InvalidParameter('request body: the patch has no operations');
  return body.map((raw, i) => {
    if (typeof raw !== 'object' || raw === null) throw new InvalidParameter(`patch[${i}]: expected an object with op and path`);
    const { op, path, value } = raw as Record<string, unknown>;
    if (op !== 'add' && op !== 'replace' && op !== 'remove') {
      throw new InvalidParameter(`patch[${i}].op: ${JSON.stringify(op)} is not supported; use add, replace or remove`);
    }
    if (typeof path !== 'string' || !path.startsWith('/')) throw new InvalidParameter(`patch[${i}].path: expected a JSON pointer such as /name`);
    checkPathTokens(path, i);
    if (op !== 'remove' && value === undefined) throw new InvalidParameter(`patch[${i}].value: required for ${op}`);
    return op === 'remove' ? { op, path } : { op, path, value };
  });
}

function unescape(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/**
 * The tokens of a patch path, unescaped. A token that names a prototype (`/extra/__proto__/x`)
 * would make the walk below write into `Object.prototype` of the whole process: refused, like
 * strings a database cannot store.
 */
export function pathTokens(path: string): string[] {
  return path.slice(1).split('/').map(unescape);
}

function checkPathTokens(path: string, index: number): void {
  for (const token of pathTokens(path)) {
    if (isForbiddenKey(token)) throw new InvalidParameter(`patch[${index}].path: ${JSON.stringify(path)} names the key ${JSON.stringify(token)}, which is not accepted`);
    const problem = stringProblem(token);
    if (problem !== null) throw new InvalidParameter(`patch[${index}].path: ${problem}`);
  }
}

/** Applies the operations to the node's current values; returns only what changed. */
export function applyNodePatch(node: NodeRow, ops: readonly PatchOperation[]): NodeChanges {
  const json: Partial<Record<JsonField, Record<string, unknown>>> = {};
  const scalars: Partial<Record<ScalarField, string | null>> = {};
  for (const op of ops) {
    const tokens = pathTokens(op.path);
    const field = tokens[0]!;
    if ((PATCH_JSON_FIELDS as readonly string[]).includes(field)) {
      const f = field as JsonField;
      // Copies without prototypes: the user's keys are data, never properties of Object.
      const current = (json[f] ??= cloneJson(node[f]));
      if (tokens.length === 1) {
        if (op.op === 'remove') json[f] = {};
        else if (typeof op.value !== 'object' || op.value === null || Array.isArray(op.value)) throw new InvalidParameter(`${op.path}: expected a JSON object`);
        else json[f] = cloneJson(op.value as Record<string, unknown>);
        continue;
      }
      applyInside(current, tokens.slice(1), op);
      continue;
    }
    if (!(PATCH_SCALAR_FIELDS as readonly string[]).includes(field) || tokens.length > 1) {
      throw new InvalidParameter(`${op.path}: cannot be changed${READ_ONLY.has(field) ? ' (read-only)' : ' (no such field)'}`);
    }
    const f = field as ScalarField;
    const value = op.op === 'remove' ? null : op.value;
    scalars[f] = checkScalar(f, value, op.path);
  }
  return { ...json, ...scalars };
}

const READ_ONLY = new Set([
  'uuid', 'provision_state', 'target_provision_state', 'power_state', 'target_power_state', 'reservation', 'created_at',
  'updated_at', 'provision_updated_at', 'last_error', 'maintenance', 'maintenance_reason', 'conductor', 'driver_internal_info',
]);

/** True when `key` is the object's own property (never one inherited from a prototype). */
const has = (o: object, key: string): boolean => Object.hasOwn(o, key);

function applyInside(target: Record<string, unknown>, tokens: string[], op: PatchOperation): void {
  let cursor: Record<string, unknown> = target;
  for (const token of tokens.slice(0, -1)) {
    // parsePatch refused prototype names; this is the second lock on the same door.
    if (isForbiddenKey(token)) throw new InvalidParameter(`${op.path}: the key ${JSON.stringify(token)} is not accepted`);
    const next = has(cursor, token) ? cursor[token] : undefined;
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      if (op.op === 'remove') throw new InvalidParameter(`${op.path}: no such key to remove`);
      cursor[token] = Object.create(null) as Record<string, unknown>;
    }
    cursor = cursor[token] as Record<string, unknown>;
  }
  const last = tokens[tokens.length - 1]!;
  if (isForbiddenKey(last)) throw new InvalidParameter(`${op.path}: the key ${JSON.stringify(last)} is not accepted`);
  if (op.op === 'remove') {
    if (!has(cursor, last)) throw new InvalidParameter(`${op.path}: no such key to remove`);
    delete cursor[last];
  } else {
    if (op.op === 'replace' && !has(cursor, last)) throw new InvalidParameter(`${op.path}: no such key to replace (use add)`);
    cursor[last] = cloneJson(op.value);
  }
}

function checkScalar(field: ScalarField, value: unknown, path: string): string | null {
  if (field === 'driver' && (typeof value !== 'string' || value === '')) throw new InvalidParameter(`${path}: a node needs a driver`);
  // Removing the group puts the node back in the default group (the column holds no null), as Ironic.
  if (field === 'conductor_group' && value === null) return '';
  if (value === null) return null;
  if (typeof value !== 'string') throw new InvalidParameter(`${path}: expected a string or null`);
  if (field === 'name' && (!NODE_NAME_PATTERN.test(value) || UUID_PATTERN.test(value))) {
    throw new InvalidParameter(`${path}: ${JSON.stringify(value)} is not a valid node name (letters, digits and - . _ ~, at most 255, not a UUID)`);
  }
  if (field === 'instance_uuid' && !UUID_PATTERN.test(value)) throw new InvalidParameter(`${path}: expected a UUID`);
  if (field === 'resource_class' && value.length > 80) throw new InvalidParameter(`${path}: expected a string of at most 80 characters`);
  if (field === 'conductor_group') {
    if (!GROUP_PATTERN.test(value) || value.length > 255) throw new InvalidParameter(`${path}: ${JSON.stringify(value.slice(0, 300))} is invalid; use at most 255 letters, digits, _ . - only`);
    return value.toLowerCase();
  }
  return field === 'instance_uuid' ? value.toLowerCase() : value;
}
