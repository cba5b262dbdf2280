/**
 * The field tables of volume connectors and volume targets (Ironic's `/v1/volume/connectors` and
 * `/v1/volume/targets`, API 1.32), in the form of the chassis and port tables: one row per field
 * of the API shape with the microversion it appeared in (1.32 for all, as in Ironic), how the view
 * reads it, and what create and PATCH take. Sizes are the columns' (Ironic's model), so a value
 * too long is a 400 naming the field rather than a database error.
 */
import { Type } from 'typebox';
import { UUID_SCHEMA_PATTERN } from '../common/uuid.js';
import type { ResourceLink } from './chassis-fields.js';
import { FieldTable, shownValue, UUID_INPUT } from './field-table.js';
import type { FieldInput, FieldSpec } from './field-table.js';
import type { VolumeConnectorRow, VolumeTargetRow } from './volume-store.js';

/** The microversion that added volume connectors and targets (Ironic's `MINOR_32_VOLUME`). */
export const VOLUME_SINCE = [1, 32] as const;

/** Connector types Ironic documents: an initiator's iSCSI name, IP or MAC, FC names, or a (group of) port(s). */
export const CONNECTOR_TYPES = ['iqn', 'ip', 'mac', 'wwnn', 'wwpn', 'port', 'portgroup'] as const;
export type ConnectorType = (typeof CONNECTOR_TYPES)[number];

/** What the views need beyond the row: the API's links, which only the API can build. */
export interface VolumeFieldContext {
  /** The `self` and `bookmark` links of `<collection>/<id>`. */
  links: (collection: string, id: string) => ResourceLink[];
}

const string = (max: number, required?: string): FieldInput => ({
  schema: Type.String({ maxLength: max }),
  expected: (v) => `expected a string of at most ${max} characters, got ${shownValue(v)}`,
  create: required === undefined ? true : { required },
  patch: true,
});
// Ironic's schema takes null too, which its objects store as {}.
const jsonObject = (): FieldInput => ({
  schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  expected: 'expected a JSON object', create: true, patch: true, json: true,
  normalize: (v) => v ?? {},
});
// The node's uuid (Ironic takes a uuid only here, not a name); PATCH moves the resource to another node.
const nodeUuidInput = (noun: string): FieldInput => ({
  schema: Type.String({ pattern: UUID_SCHEMA_PATTERN }),
  expected: (v) => `expected the uuid of the ${noun}'s node, got ${shownValue(v)}`,
  create: { required: `required, the uuid of the ${noun}'s node` },
  patch: true,
  normalize: (v) => (v as string).toLowerCase(),
});

function commonRows<Row extends { uuid: string }>(collection: string, noun: string): Record<string, FieldSpec<Row, VolumeFieldContext>> {
  return {
    node_uuid: { since: VOLUME_SINCE, column: 'node_uuid' as keyof Row & string, sortable: false, input: nodeUuidInput(noun) },
    extra: { since: VOLUME_SINCE, column: 'extra' as keyof Row & string, input: jsonObject() },
    created_at: { since: VOLUME_SINCE, column: 'created_at' as keyof Row & string, view: 'time' },
    updated_at: { since: VOLUME_SINCE, column: 'updated_at' as keyof Row & string, view: 'time' },
    links: { since: VOLUME_SINCE, view: (row, ctx) => ctx.links(collection, row.uuid), reads: ['uuid' as keyof Row & string] },
  };
}

export const VOLUME_CONNECTOR_FIELDS = new FieldTable<VolumeConnectorRow, VolumeFieldContext>(
  {
    uuid: { since: VOLUME_SINCE, column: 'uuid', input: UUID_INPUT },
    type: {
      since: VOLUME_SINCE, column: 'type',
      input: {
        schema: Type.Union(CONNECTOR_TYPES.map((t) => Type.Literal(t))),
        expected: (v) => `expected one of ${CONNECTOR_TYPES.join(', ')}, got ${shownValue(v)}`,
        create: { required: `required, one of ${CONNECTOR_TYPES.join(', ')}` },
        patch: true,
      },
    },
    connector_id: { since: VOLUME_SINCE, column: 'connector_id', input: string(255, 'required, the id of the connector (an IQN, a WWPN…)') },
    ...commonRows<VolumeConnectorRow>('volume/connectors', 'volume connector'),
  },
  { noun: 'volume connector', cannotChange: (path) => `${path}: cannot be changed on a volume connector` },
);

export const VOLUME_TARGET_FIELDS = new FieldTable<VolumeTargetRow, VolumeFieldContext>(
  {
    uuid: { since: VOLUME_SINCE, column: 'uuid', input: UUID_INPUT },
    volume_type: { since: VOLUME_SINCE, column: 'volume_type', input: string(64, 'required, the type of the volume (iscsi, fibre_channel…)') },
    // Shown with secrets masked, as Ironic's view does (auth_password and the like).
    properties: { since: VOLUME_SINCE, column: 'properties', view: 'masked', input: jsonObject() },
    boot_index: {
      since: VOLUME_SINCE, column: 'boot_index',
      input: {
        schema: Type.Integer({ minimum: -2147483648, maximum: 2147483647 }),
        expected: (v) => `expected an integer, got ${shownValue(v)}`,
        create: { required: 'required, an integer (0 for the boot volume)' },
        patch: true,
      },
    },
    volume_id: { since: VOLUME_SINCE, column: 'volume_id', input: string(36, 'required, the id of the volume in the storage service') },
    ...commonRows<VolumeTargetRow>('volume/targets', 'volume target'),
  },
  { noun: 'volume target', cannotChange: (path) => `${path}: cannot be changed on a volume target` },
);

/** Fields of a list without `detail` or `fields`, as Ironic's (whose views always add `links`). */
export const VOLUME_CONNECTOR_LIST_FIELDS = ['uuid', 'node_uuid', 'type', 'connector_id', 'links'] as const;
export const VOLUME_TARGET_LIST_FIELDS = ['uuid', 'node_uuid', 'volume_type', 'boot_index', 'volume_id', 'links'] as const;
