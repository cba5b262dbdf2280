/**
 * The port group field table, in the form of the chassis and port tables: one row per field of a
 * port group's API shape with the microversion it appeared in, how the view reads it, and what
 * create and PATCH take. Every field dates from the resource (1.23): Ironic's views show `mode` and
 * `properties` at every version, and only writing them or asking for them by `fields` needs 1.26
 * (`MODE_PROPERTIES_SINCE`, checked by the API).
 */
import { Type } from 'typebox';
import { UUID_PATTERN, UUID_SCHEMA_PATTERN } from '../common/uuid.js';
import type { PortgroupsTable } from '../db/schema.js';
import type { Selectable } from 'kysely';
import type { ChassisFieldContext } from './chassis-fields.js';
import { FieldTable, shownValue, UUID_INPUT } from './field-table.js';
import type { FieldSpec } from './field-table.js';
import { NODE_NAME_PATTERN } from './node-fields.js';
import { booleanSpelling } from './port-fields.js';
import { isMacAddress, normalizeMac } from './port-store.js';

/** A port group as the views read it: its row and its node's uuid. */
export type PortgroupRow = Selectable<PortgroupsTable> & { node_uuid: string };

/** What the view needs beyond the row: the API's links (as for chassis). */
export type PortgroupFieldContext = ChassisFieldContext;

const jsonObject = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]);

const PORTGROUP_FIELD_ROWS: Readonly<Record<string, FieldSpec<PortgroupRow, PortgroupFieldContext>>> = {
  uuid: {
    since: [1, 23], column: 'uuid',
    input: UUID_INPUT,
  },
  // Any MAC spelling, stored as aa:bb:cc:dd:ee:ff; null for none.
  address: {
    since: [1, 23], column: 'address',
    input: {
      schema: Type.Union([Type.String(), Type.Null()]),
      expected: (v) => `${shownValue(v)} is not a valid MAC address`,
      refine: isMacAddress, create: true, patch: true,
      normalize: (v) => (v === null ? null : normalizeMac(v)),
    },
  },
  // A logical name, as a node's: found by it like by the uuid, so never a UUID itself.
  name: {
    since: [1, 23], column: 'name',
    input: {
      schema: Type.Union([Type.String({ pattern: NODE_NAME_PATTERN.source }), Type.Null()]),
      expected: (v) => `${shownValue(v)} is not a valid port group name (letters, digits and - . _ ~, at most 255, not a UUID)`,
      refine: (v) => !UUID_PATTERN.test(v as string), create: true, patch: true,
    },
  },
  // The node's uuid only (never its name), as Ironic's `args.uuid`; the store resolves it.
  node_uuid: {
    since: [1, 23], column: 'node_uuid',
    input: {
      schema: Type.String({ pattern: UUID_SCHEMA_PATTERN }),
      expected: (v) => `expected the UUID of a node, got ${shownValue(v)}`,
      create: { required: "required, the uuid of the port group's node" }, patch: true,
      normalize: (v) => (v as string).toLowerCase(),
    },
  },
  standalone_ports_supported: {
    since: [1, 23], column: 'standalone_ports_supported',
    input: {
      schema: Type.Union([Type.Boolean(), Type.Null()]), expected: 'expected true or false',
      coerce: booleanSpelling, create: true, patch: true, removed: true,
      normalize: (v) => v ?? true,
    },
  },
  extra: { since: [1, 23], column: 'extra', input: { schema: jsonObject, expected: 'expected a JSON object', create: true, patch: true, json: true, normalize: (v) => v ?? {} } },
  // Conductor-private data: read-only.
  internal_info: { since: [1, 23], column: 'internal_info' },
  // The bonding mode; a create without one gets `[DEFAULT] default_portgroup_mode` (the store's).
  mode: {
    since: [1, 23], column: 'mode',
    input: { schema: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]), expected: 'expected a string of at most 255 characters', create: true, patch: true },
  },
  properties: { since: [1, 23], column: 'properties', input: { schema: jsonObject, expected: 'expected a JSON object', create: true, patch: true, json: true, normalize: (v) => v ?? {} } },
  created_at: { since: [1, 23], column: 'created_at', view: 'time' },
  updated_at: { since: [1, 23], column: 'updated_at', view: 'time' },
  links: { since: [1, 23], view: (g, ctx) => ctx.links('portgroups', g.uuid), reads: ['uuid'] },
  // Where the group's ports are listed: `/v1/portgroups/{uuid}/ports`.
  ports: { since: [1, 23], view: (g, ctx) => ctx.links(`portgroups/${g.uuid}`, 'ports'), reads: ['uuid'] },
};

/** Writing `mode` and `properties`, or naming them in `fields`, needs this version (Ironic's 1.26). */
export const MODE_PROPERTIES_SINCE = [1, 26] as const;
export const MODE_PROPERTIES = ['mode', 'properties'] as const;

export const PORTGROUP_FIELDS = new FieldTable<PortgroupRow, PortgroupFieldContext>(PORTGROUP_FIELD_ROWS, {
  noun: 'portgroup',
  cannotChange: (path) => `${path}: cannot be changed on a port group`,
});

/** Fields of a list without `detail`, as Ironic (whose views always add `links`). */
export const PORTGROUP_LIST_FIELDS = ['uuid', 'address', 'name', 'links'] as const;
