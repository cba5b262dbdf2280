/**
 * Validating node input (create bodies), so that bad requests get a 400 naming the field and
 * nothing reaches the database unchecked.
 */
import { InvalidParameter } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { NewNode } from '../../nodes/node-store.js';
import { checkJsonField } from '../json-fields.js';
import type { JsonFieldLimits } from '../json-fields.js';
import type { Microversion } from '../microversions.js';
import { fieldsAt } from '../views/node.js';

/** Node names: RFC 3986 unreserved characters, as Ironic's "logical names". */
export const NODE_NAME_PATTERN = /^[A-Za-z0-9\-._~]{1,255}$/;
const GROUP_PATTERN = /^[a-zA-Z0-9_.-]*$/;

export const INTERFACE_FIELDS = [
  'boot_interface', 'console_interface', 'deploy_interface', 'inspect_interface', 'management_interface',
  'network_interface', 'power_interface', 'rescue_interface', 'vendor_interface',
] as const;

const JSON_FIELDS = ['driver_info', 'properties', 'extra', 'instance_info'] as const;
const CREATABLE = ['uuid', 'name', 'driver', 'resource_class', 'conductor_group', 'instance_uuid', ...JSON_FIELDS, ...INTERFACE_FIELDS] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Checks a node name; throws a 400 naming the rule. */
export function checkNodeName(name: unknown): string | null {
  if (name === null) return null;
  if (typeof name !== 'string' || !NODE_NAME_PATTERN.test(name) || UUID_PATTERN.test(name)) {
    throw new InvalidParameter(`name: ${JSON.stringify(name)} is not a valid node name (letters, digits and - . _ ~, at most 255, not a UUID)`);
  }
  return name;
}

export type NodeCreateInput = Omit<NewNode, 'provision_state'> & { driver: string };

/** Validates a `POST /v1/nodes` body; returns the values to insert (JSON columns as text). */
export function validateNewNode(body: unknown, version: Microversion, limits: JsonFieldLimits): NodeCreateInput {
  if (!isObject(body)) throw new InvalidParameter('request body: expected a JSON object');
  const visible = new Set(fieldsAt(version));
  for (const key of Object.keys(body)) {
    if (!(CREATABLE as readonly string[]).includes(key) || !visible.has(key)) {
      throw new InvalidParameter(`${key}: unknown or read-only field for a new node at API version ${version[0]}.${version[1]}`);
    }
  }
  const { driver } = body;
  if (typeof driver !== 'string' || driver === '') throw new InvalidParameter('driver: required, a hardware type name');
  const out: NodeCreateInput = { driver };
  if (body.uuid !== undefined) {
    if (typeof body.uuid !== 'string' || !UUID_PATTERN.test(body.uuid)) throw new InvalidParameter(`uuid: expected a UUID, got ${JSON.stringify(body.uuid)}`);
    out.uuid = body.uuid.toLowerCase();
  }
  if (body.name !== undefined) out.name = checkNodeName(body.name);
  if (body.instance_uuid !== undefined && body.instance_uuid !== null) {
    if (typeof body.instance_uuid !== 'string' || !UUID_PATTERN.test(body.instance_uuid)) {
      throw new InvalidParameter(`instance_uuid: expected a UUID, got ${JSON.stringify(body.instance_uuid)}`);
    }
    out.instance_uuid = body.instance_uuid.toLowerCase();
  }
  if (body.resource_class !== undefined && body.resource_class !== null) {
    if (typeof body.resource_class !== 'string' || body.resource_class.length > 80) throw new InvalidParameter('resource_class: expected a string of at most 80 characters');
    out.resource_class = body.resource_class;
  }
  if (body.conductor_group !== undefined) {
    if (typeof body.conductor_group !== 'string' || !GROUP_PATTERN.test(body.conductor_group) || body.conductor_group.length > 255) {
      throw new InvalidParameter(`conductor_group: ${JSON.stringify(body.conductor_group)} is invalid; use at most 255 letters, digits, _ . - only`);
    }
    out.conductor_group = body.conductor_group.toLowerCase();
  }
  for (const field of JSON_FIELDS) {
    const value = body[field];
    if (value === undefined) continue;
    if (!isObject(value)) throw new InvalidParameter(`${field}: expected a JSON object`);
    checkJsonField(field, value, limits);
    out[field] = JSON.stringify(value);
  }
  for (const field of INTERFACE_FIELDS) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') throw new InvalidParameter(`${field}: expected an interface name`);
    out[field] = value;
  }
  return out;
}
