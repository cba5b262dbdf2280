/**
 * The node field table: every field of a node's API shape, one row each — the microversion it
 * appeared in, how the view reads it, and for the fields a client writes their schema and whether
 * create and PATCH take them. Create checks (`api/routes/node-input.ts`), JSON Patch
 * (`node-patch.ts`, on the API and again on the conductor), views (`api/views/node.ts`), `fields`
 * and sort keys all come from here: a new field is a new row.
 */
import { Type } from 'typebox';
import { isDiscoveryUuid } from '../boot/discovery.js';
import { UUID_PATTERN, UUID_SCHEMA_PATTERN } from '../common/uuid.js';
import type { NodeRow } from '../db/schema.js';
import { FieldTable, shownValue } from './field-table.js';
import { booleanSpelling } from './port-fields.js';
import type { FieldInput, FieldSpec } from './field-table.js';
import { LATER_NODE_FIELD_ROWS } from './node-fields-later.js';

/** Node names: RFC 3986 unreserved characters, as Ironic's "logical names" (and never a UUID). */
export const NODE_NAME_PATTERN = /^[A-Za-z0-9\-._~]{1,255}$/;
const GROUP_PATTERN = '^[a-zA-Z0-9_.-]{0,255}$';

/** What the view needs beyond the row: where the ring places the node. */
export interface NodeFieldContext {
  /** The conductor the ring gives the node to, for `conductor`. */
  conductorOf: (node: NodeRow) => string | null;
  /** The replica conductors after the owner, for `conductor_replicas`. */
  replicasOf?: (node: NodeRow) => string[];
  /** Hostname of a conductor row id, for `conductor_affinity`. */
  conductorName?: (id: number | null) => string | null;
  /** The microversion asked for, where a field's value depends on it (`provision_state` below 1.2). */
  version?: readonly [number, number];
}

type NodeField = FieldSpec<NodeRow, NodeFieldContext>;

const lower = (v: unknown): unknown => (typeof v === 'string' ? v.toLowerCase() : v);

/** A JSON object a client sets on create and edits key by key with PATCH. */
const jsonInput: FieldInput = { schema: Type.Record(Type.String(), Type.Unknown()), expected: 'expected a JSON object', create: true, patch: true, json: true };

/** A `*_interface` field: a name the node's hardware type offers (checked against the driver registry). */
const interfaceInput: FieldInput = { schema: Type.Union([Type.String(), Type.Null()]), expected: 'expected an interface name or null', create: true, patch: true };

/** A flag a client sets by PATCH: true or false (or a spelling of one); null or `remove` means false, as Ironic's. */
const flagInput: FieldInput = { schema: Type.Union([Type.Boolean(), Type.Null()]), expected: 'expected true or false', coerce: booleanSpelling, normalize: (v) => v === true, removed: false, patch: true };

/** A field ironring does not model yet, shown with the value Ironic shows for it (a fresh one each time). */
const fixed = (since: readonly [number, number], make: () => unknown): NodeField => ({ since, view: () => make(), reads: [] });

/** `driver_internal_info.clean_step` (or `deploy_step`) when it is an object, else {} (Ironic's value when no step runs). */
function stepOf(info: Readonly<Record<string, unknown>>, key: 'clean_step' | 'deploy_step'): unknown {
  const step = info[key];
  return typeof step === 'object' && step !== null && !Array.isArray(step) ? step : {};
}

const NODE_FIELD_ROWS: Readonly<Record<string, NodeField>> = {
  uuid: {
    since: [1, 1], column: 'uuid',
    input: {
      schema: Type.Union([Type.String({ pattern: UUID_SCHEMA_PATTERN }), Type.Null()]),
      // The discovery boot entries' uuids name directories in the boot roots: no node may have one.
      expected: (v) => (typeof v === 'string' && isDiscoveryUuid(v) ? `${shownValue(v)} is reserved for the auto-discovery boot entries` : `expected a UUID, got ${shownValue(v)}`),
      refine: (v) => typeof v !== 'string' || !isDiscoveryUuid(v),
      create: true,
      normalize: lower,
    },
  },
  name: {
    since: [1, 5], column: 'name',
    input: {
      schema: Type.Union([Type.String({ pattern: NODE_NAME_PATTERN.source }), Type.Null()]),
      // Nodes are found by UUID or name, so a name must not read as a UUID.
      refine: (v) => !UUID_PATTERN.test(v as string),
      expected: (v) => `${shownValue(v)} is not a valid node name (letters, digits and - . _ ~, at most 255, not a UUID)`,
      create: true, patch: true,
    },
  },
  // Stored as the chassis's row id (`chassis_id`); the node store's reads for views join the uuid
  // in, and its writes turn a uuid back into the id (an unknown chassis is a 400 naming the field).
  chassis_uuid: {
    since: [1, 1], column: 'chassis_uuid', view: (n) => n.chassis_uuid ?? null, reads: ['chassis_uuid'],
    input: {
      schema: Type.Union([Type.String({ pattern: UUID_SCHEMA_PATTERN }), Type.Null()]),
      expected: (v) => `expected the UUID of a chassis or null, got ${shownValue(v)}`,
      create: true, patch: true, normalize: lower, clearSince: [1, 25],
    },
  },
  driver: {
    since: [1, 1], column: 'driver',
    input: { schema: Type.String({ minLength: 1 }), expected: 'a node needs a driver (a hardware type name)', create: { required: 'required, a hardware type name' }, patch: true },
  },
  driver_info: { since: [1, 1], column: 'driver_info', view: 'masked', input: jsonInput },
  // Conductor-private JSON, shown but never written by clients, and no sort key (a JSON column).
  // Ironic shows it from 1.3, as here.
  driver_internal_info: { since: [1, 3], column: 'driver_internal_info', sortable: false },
  extra: { since: [1, 1], column: 'extra', input: jsonInput },
  instance_info: { since: [1, 1], column: 'instance_info', view: 'masked', input: jsonInput },
  instance_uuid: {
    since: [1, 1], column: 'instance_uuid',
    input: { schema: Type.Union([Type.String({ pattern: UUID_SCHEMA_PATTERN }), Type.Null()]), expected: (v) => `expected a UUID, got ${shownValue(v)}`, create: true, patch: true, normalize: lower },
  },
  properties: { since: [1, 1], column: 'properties', input: jsonInput },
  // Below 1.2 Ironic shows `available` as null (the state had no name yet).
  provision_state: {
    since: [1, 1], column: 'provision_state', reads: ['provision_state'], sortable: true,
    view: (n, ctx) => (n.provision_state === 'available' && ctx.version !== undefined && ctx.version[0] === 1 && ctx.version[1] < 2 ? null : n.provision_state),
  },
  target_provision_state: { since: [1, 1], column: 'target_provision_state' },
  provision_updated_at: { since: [1, 1], column: 'provision_updated_at', view: 'time' },
  power_state: { since: [1, 1], column: 'power_state' },
  target_power_state: { since: [1, 1], column: 'target_power_state' },
  // Settable by PATCH as in Ironic (the conductor clears the reason when maintenance ends).
  maintenance: { since: [1, 1], column: 'maintenance', input: flagInput },
  maintenance_reason: { since: [1, 1], column: 'maintenance_reason', input: { schema: Type.Union([Type.String({ maxLength: 4096 }), Type.Null()]), expected: 'expected a string of at most 4096 characters or null', patch: true } },
  last_error: { since: [1, 1], column: 'last_error' },
  reservation: { since: [1, 1], column: 'reservation' },
  // Changed through /v1/nodes/{node}/states/console only, as Ironic's.
  console_enabled: { since: [1, 1], column: 'console_enabled' },
  created_at: { since: [1, 1], column: 'created_at', view: 'time' },
  updated_at: { since: [1, 1], column: 'updated_at', view: 'time' },
  inspection_started_at: fixed([1, 6], () => null),
  inspection_finished_at: fixed([1, 6], () => null),
  // The step a clean is running now ({} otherwise), which the conductor keeps in driver_internal_info.
  clean_step: { since: [1, 7], view: (n) => stepOf(n.driver_internal_info, 'clean_step'), reads: ['driver_internal_info'] },
  // target_raid_config changes through /v1/nodes/{node}/states/raid only; raid_config is what a RAID step built.
  raid_config: { since: [1, 12], column: 'raid_config', sortable: false },
  target_raid_config: { since: [1, 12], column: 'target_raid_config', sortable: false },
  network_interface: { since: [1, 20], column: 'network_interface', input: interfaceInput },
  resource_class: {
    since: [1, 21], column: 'resource_class',
    input: { schema: Type.Union([Type.String({ maxLength: 80 }), Type.Null()]), expected: 'expected a string of at most 80 characters', create: true, patch: true },
  },
  boot_interface: { since: [1, 31], column: 'boot_interface', input: interfaceInput },
  console_interface: { since: [1, 31], column: 'console_interface', input: interfaceInput },
  deploy_interface: { since: [1, 31], column: 'deploy_interface', input: interfaceInput },
  inspect_interface: { since: [1, 31], column: 'inspect_interface', input: interfaceInput },
  management_interface: { since: [1, 31], column: 'management_interface', input: interfaceInput },
  power_interface: { since: [1, 31], column: 'power_interface', input: interfaceInput },
  raid_interface: { since: [1, 31], column: 'raid_interface', input: interfaceInput },
  vendor_interface: { since: [1, 31], column: 'vendor_interface', input: interfaceInput },
  // `noop` attaches no volume (ironring attaches none yet); shown, created and patched from 1.33.
  storage_interface: { since: [1, 33], column: 'storage_interface', input: interfaceInput },
  rescue_interface: { since: [1, 38], column: 'rescue_interface', input: interfaceInput },
  bios_interface: { since: [1, 40], column: 'bios_interface', input: interfaceInput },
  fault: fixed([1, 42], () => null),
  // The deploy step running now ({} otherwise), kept in driver_internal_info like clean_step.
  deploy_step: { since: [1, 44], view: (n) => stepOf(n.driver_internal_info, 'deploy_step'), reads: ['driver_internal_info'] },
  conductor_group: {
    since: [1, 46], column: 'conductor_group',
    input: {
      // The column holds no null: removing the group (or sending null) means the default group, as Ironic.
      schema: Type.Union([Type.String({ pattern: GROUP_PATTERN }), Type.Null()]),
      expected: (v) => `${shownValue(v)} is invalid; use at most 255 letters, digits, _ . - only`,
      create: true, patch: true, removed: '', empty: '',
      normalize: (v) => (v === null ? '' : lower(v)),
    },
  },
  // Null follows `[conductor] automated_clean`; true or false overrides it for this node
  // (conductor/cleaning.ts). Unlike a flag, null and `remove` leave it null, as Ironic's.
  automated_clean: {
    since: [1, 47], column: 'automated_clean',
    input: { schema: Type.Union([Type.Boolean(), Type.Null()]), expected: 'expected true, false or null', coerce: booleanSpelling, create: true, patch: true },
  },
  // Changed through /v1/nodes/{node}/traits only, as Ironic's.
  traits: { since: [1, 37], column: 'traits', sortable: false },
  // Only an active or rescued node may be protected; the conductor checks that and clears the
  // reason when protection ends (conductor/node-protection.ts).
  protected: { since: [1, 48], column: 'protected', input: flagInput },
  protected_reason: {
    since: [1, 48], column: 'protected_reason',
    input: { schema: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]), expected: 'expected a string of at most 255 characters or null', patch: true },
  },
  conductor: { since: [1, 49], view: (n, ctx) => ctx.conductorOf(n), reads: ['uuid', 'conductor_group'] },
  // Free text, as Ironic keeps them: the owning project (ironring checks no projects) and a description.
  owner: {
    since: [1, 50], column: 'owner',
    input: { schema: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]), expected: 'expected a string of at most 255 characters or null', create: true, patch: true },
  },
  description: {
    since: [1, 51], column: 'description', sortable: false,
    input: { schema: Type.Union([Type.String({ maxLength: 4096 }), Type.Null()]), expected: 'expected a string of at most 4096 characters or null', create: true, patch: true },
  },
  // 1.61–1.82 (`node-fields-later.ts`): retired, lessee, network_data, boot_mode, secure_boot, shard.
  ...LATER_NODE_FIELD_ROWS,
  // The allocation holding the node (read-only; `nodes/allocation-store.ts`): stored as its row id,
  // joined in as a uuid by the node store's reads for views, like chassis_uuid.
  allocation_uuid: { since: [1, 52], column: 'allocation_uuid', view: (n) => n.allocation_uuid ?? null, reads: ['allocation_uuid'] },
  // ironring extensions: where the ring places the node and which conductor's boot files are current.
  conductor_replicas: { since: [1, 49], view: (n, ctx) => ctx.replicasOf?.(n) ?? [], reads: ['uuid', 'conductor_group'] },
  conductor_affinity: { since: [1, 49], column: 'conductor_affinity', view: (n, ctx) => ctx.conductorName?.(n.conductor_affinity) ?? null, reads: ['conductor_affinity'] },
};

export const NODE_FIELDS = new FieldTable<NodeRow, NodeFieldContext>(NODE_FIELD_ROWS, {
  noun: 'node',
  cannotChange: (path, readOnly) => `${path}: cannot be changed${readOnly ? ' (read-only)' : ' (no such field)'}`,
});

/** The `*_interface` fields, which a node's hardware type fills in and checks. */
export const NODE_INTERFACE_FIELDS = Object.keys(NODE_FIELD_ROWS).filter((f) => f.endsWith('_interface'));

/** Fields of a list without `detail`, as Ironic. */
export const NODE_LIST_FIELDS = ['uuid', 'name', 'instance_uuid', 'power_state', 'provision_state', 'maintenance'] as const;
