/**
 * The port field table: every field of a port's API shape, one row each, in the form of the node
 * table (`node-fields.ts`): the microversion it appeared in, how the view reads it, and for the
 * fields a client writes their schema and whether create and PATCH take them.
 */
import { Type } from 'typebox';
import { InvalidParameter } from '../common/errors.js';
import { UUID_SCHEMA_PATTERN } from '../common/uuid.js';
import { FieldTable } from './field-table.js';
import type { FieldSpec } from './field-table.js';
import type { PortRow } from './port-store.js';

/** The keys Ironic accepts in a port's `local_link_connection` (LLDP data of the switch port). */
export const LOCAL_LINK_CONNECTION_KEYS = ['switch_id', 'port_id', 'switch_info', 'hostname', 'network_type'] as const;
/** Since when `local_link_connection.network_type` may be sent (Ironic's 1.64; 406 before). */
export const NETWORK_TYPE_SINCE = [1, 64] as const;
const NETWORK_TYPES = ['managed', 'unmanaged'];

/** One `local_link_connection` entry: a known key with a string value; 400 naming where otherwise. */
function checkLocalLinkEntry(where: string, key: string, value: unknown): void {
  if (!(LOCAL_LINK_CONNECTION_KEYS as readonly string[]).includes(key)) {
    throw new InvalidParameter(`${where}: unknown local_link_connection key ${JSON.stringify(key)}; valid keys: ${LOCAL_LINK_CONNECTION_KEYS.join(', ')}`);
  }
  if (typeof value !== 'string') throw new InvalidParameter(`${where}: expected a string`);
  if (key === 'network_type' && !NETWORK_TYPES.includes(value)) throw new InvalidParameter(`${where}: expected one of ${NETWORK_TYPES.join(', ')}, got ${JSON.stringify(value)}`);
}

/** The stock client sends `--pxe-enabled false` as the string "false"; Ironic's boolean type takes both. */
export function booleanSpelling(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const v = value.toLowerCase();
  if (['true', '1', 'yes', 'on', 'y', 't'].includes(v)) return true;
  if (['false', '0', 'no', 'off', 'n', 'f'].includes(v)) return false;
  return value;
}

const jsonObject = Type.Record(Type.String(), Type.Unknown());

const PORT_FIELD_ROWS: Readonly<Record<string, FieldSpec<PortRow, unknown>>> = {
  uuid: {
    since: [1, 1], column: 'uuid',
    input: { schema: Type.Union([Type.String({ pattern: UUID_SCHEMA_PATTERN }), Type.Null()]), expected: (v) => `expected a UUID, got ${JSON.stringify(v)}`, create: true },
  },
  // Any MAC spelling; the port store checks and normalises it (aa:bb:cc:dd:ee:ff).
  address: { since: [1, 1], column: 'address', input: { schema: Type.String(), expected: 'expected a MAC address', create: { required: "required, the port's MAC address" }, patch: true } },
  // The node's uuid only (never its name), as Ironic's `args.uuid`.
  node_uuid: {
    since: [1, 1], column: 'node_uuid',
    input: {
      schema: Type.String({ pattern: UUID_SCHEMA_PATTERN }),
      expected: (v) => `expected the UUID of a node, got ${JSON.stringify(typeof v === 'string' ? v.slice(0, 300) : v)}`,
      create: { required: "required, the uuid of the port's node" },
      normalize: (v) => (v as string).toLowerCase(),
    },
  },
  extra: { since: [1, 1], column: 'extra', input: { schema: jsonObject, expected: 'expected a JSON object', create: true, patch: true, json: true } },
  created_at: { since: [1, 1], column: 'created_at', view: 'time' },
  updated_at: { since: [1, 1], column: 'updated_at', view: 'time' },
  // Conductor-private data: the attached VIF (`tenant_vif_port_id`), as Ironic's. Read-only.
  internal_info: { since: [1, 18], column: 'internal_info' },
  local_link_connection: {
    since: [1, 19], column: 'local_link_connection',
    input: { schema: jsonObject, expected: 'expected a JSON object', create: true, patch: true, json: true, entry: checkLocalLinkEntry },
  },
  pxe_enabled: {
    since: [1, 19], column: 'pxe_enabled',
    input: { schema: Type.Boolean(), expected: 'expected true or false', coerce: booleanSpelling, create: true, patch: true },
  },
  // The port group (of the same node) the port belongs to, by uuid; null for none.
  portgroup_uuid: {
    since: [1, 24], column: 'portgroup_uuid',
    input: {
      schema: Type.Union([Type.String({ pattern: UUID_SCHEMA_PATTERN }), Type.Null()]),
      expected: (v) => `expected the UUID of a port group or null, got ${JSON.stringify(typeof v === 'string' ? v.slice(0, 300) : v)}`,
      create: true, patch: true,
      normalize: (v) => (typeof v === 'string' ? v.toLowerCase() : v),
    },
    // A join, not a column of ports: lists are sorted by it nowhere, as in Ironic.
    sortable: false,
  },
  // A Smart NIC port: its local_link_connection must name port_id and hostname (checked by the route).
  is_smartnic: {
    since: [1, 53], column: 'is_smartnic',
    input: { schema: Type.Boolean(), expected: 'expected true or false', coerce: booleanSpelling, create: true, patch: true },
  },
  physical_network: {
    since: [1, 34], column: 'physical_network',
    input: { schema: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]), expected: 'expected a string of at most 64 characters', create: true, patch: true },
  },
};

export const PORT_FIELDS = new FieldTable<PortRow, unknown>(PORT_FIELD_ROWS, {
  noun: 'port',
  cannotChange: (path) => `${path}: cannot be changed on a port`,
});

/** Fields of a list without `detail`, as Ironic. */
export const PORT_LIST_FIELDS = ['uuid', 'address'] as const;
