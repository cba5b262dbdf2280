/**
 * The allocation field table (Ironic's allocations, API 1.52), in the form of the chassis and port
 * group tables: one row per field of an allocation's API shape with the microversion it appeared
 * in, how the view reads it, and what create and PATCH take. PATCH changes `name` and `extra` only
 * (1.57, as Ironic's `PATCH_ALLOWED_FIELDS`); `owner` appeared in 1.60 and is set on create only.
 * A create's `node` (backfilling, 1.58) is no field of the view: the API reads it first.
 */
import { Type } from 'typebox';
import { UUID_PATTERN } from '../common/uuid.js';
import type { AllocationRow } from '../db/schema.js';
import type { ChassisFieldContext } from './chassis-fields.js';
import { FieldTable, shownValue, UUID_INPUT } from './field-table.js';
import type { ApiVersion, FieldSpec } from './field-table.js';
import { NODE_NAME_PATTERN } from './node-fields.js';
import { MAX_TRAITS_PER_NODE, checkTrait } from './traits.js';

/** An allocation as the views read it: its row and its node's uuid (null while it has none). */
export type AllocationView = AllocationRow & { node_uuid: string | null };

/** What the view needs beyond the row: the API's links (as for chassis). */
export type AllocationFieldContext = ChassisFieldContext;

/** The allocation states (Ironic's `ALLOCATING`, `ACTIVE`, `ERROR`). */
export const ALLOCATION_STATES = ['allocating', 'active', 'error'] as const;
export type AllocationState = (typeof ALLOCATION_STATES)[number];

/** The resource (Ironic's `allow_allocations`), PATCH (`allow_allocation_update`), backfilling and `owner`. */
export const ALLOCATIONS_SINCE: ApiVersion = [1, 52];
export const ALLOCATION_PATCH_SINCE: ApiVersion = [1, 57];
export const ALLOCATION_BACKFILL_SINCE: ApiVersion = [1, 58];
export const ALLOCATION_OWNER_SINCE: ApiVersion = [1, 60];

/** The fields a PATCH may change, as Ironic's. */
export const ALLOCATION_PATCH_FIELDS = ['name', 'extra'] as const;

/** At most this many candidate nodes (a bound on the request, far above any rack). */
export const MAX_CANDIDATE_NODES = 1000;


/** A node's logical name or uuid, as `candidate_nodes` names nodes. */
export function isNodeIdent(value: unknown): value is string {
  return typeof value === 'string' && (UUID_PATTERN.test(value) || NODE_NAME_PATTERN.test(value));
}

/** Whether every entry is a valid trait (the message comes from `traitsProblem`). */
function traitsProblem(value: unknown): string | null {
  if (!Array.isArray(value)) return `expected a list of traits, got ${shownValue(value)}`;
  if (value.length > MAX_TRAITS_PER_NODE) return `${value.length} traits; at most ${MAX_TRAITS_PER_NODE} are allowed`;
  for (const [i, t] of value.entries()) {
    try {
      checkTrait(t, `traits[${i}]`);
    } catch (err) {
      return (err as Error).message.replace(/^traits\[\d+\]: /, `entry ${i}: `);
    }
  }
  return null;
}

const ALLOCATION_FIELD_ROWS: Readonly<Record<string, FieldSpec<AllocationView, AllocationFieldContext>>> = {
  uuid: {
    since: [1, 52], column: 'uuid',
    input: UUID_INPUT,
  },
  // A logical name, as a node's: allocations are found by it like by the uuid, so never a UUID.
  name: {
    since: [1, 52], column: 'name',
    input: {
      schema: Type.Union([Type.String({ pattern: NODE_NAME_PATTERN.source }), Type.Null()]),
      expected: (v) => `${shownValue(v)} is not a valid allocation name (letters, digits and - . _ ~, at most 255, not a UUID)`,
      refine: (v) => !UUID_PATTERN.test(v as string), create: true, patch: true,
    },
  },
  node_uuid: { since: [1, 52], column: 'node_uuid', view: (a) => a.node_uuid ?? null, reads: ['node_uuid'] },
  state: { since: [1, 52], column: 'state' },
  last_error: { since: [1, 52], column: 'last_error' },
  resource_class: {
    since: [1, 52], column: 'resource_class',
    input: { schema: Type.Union([Type.String({ maxLength: 80 }), Type.Null()]), expected: 'expected a string of at most 80 characters', create: true },
  },
  traits: {
    since: [1, 52], column: 'traits', sortable: false,
    input: {
      schema: Type.Union([Type.Array(Type.Unknown()), Type.Null()]),
      refine: (v) => traitsProblem(v) === null,
      expected: (v) => traitsProblem(v) ?? 'expected a list of traits',
      create: true,
      normalize: (v) => [...new Set((v as string[] | null) ?? [])],
    },
  },
  // Names or uuids on create; stored (and shown) as uuids, in the order given.
  candidate_nodes: {
    since: [1, 52], column: 'candidate_nodes', sortable: false,
    input: {
      schema: Type.Union([Type.Array(Type.Unknown(), { maxItems: MAX_CANDIDATE_NODES }), Type.Null()]),
      refine: (v) => (v as unknown[]).every(isNodeIdent),
      expected: (v) => {
        if (!Array.isArray(v)) return `expected a list of node names or uuids, got ${shownValue(v)}`;
        if (v.length > MAX_CANDIDATE_NODES) return `${v.length} nodes; at most ${MAX_CANDIDATE_NODES} are allowed`;
        return `${shownValue(v.find((n) => !isNodeIdent(n)))} is not a node name or uuid`;
      },
      create: true,
      normalize: (v) => (v as string[] | null) ?? [],
    },
  },
  // Ironic's schema takes null, stored as {}.
  extra: {
    since: [1, 52], column: 'extra',
    input: {
      schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
      expected: 'expected a JSON object', create: true, patch: true, json: true,
      normalize: (v) => v ?? {},
    },
  },
  // The owning project, free text; ironring checks no projects.
  owner: {
    since: [1, 60], column: 'owner',
    input: { schema: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]), expected: 'expected a string of at most 255 characters or null', create: true },
  },
  created_at: { since: [1, 52], column: 'created_at', view: 'time' },
  updated_at: { since: [1, 52], column: 'updated_at', view: 'time' },
  links: { since: [1, 52], view: (a, ctx) => ctx.links('allocations', a.uuid), reads: ['uuid'] },
};

export const ALLOCATION_FIELDS = new FieldTable<AllocationView, AllocationFieldContext>(ALLOCATION_FIELD_ROWS, {
  noun: 'allocation',
  cannotChange: (path) => `${path}: cannot be changed on an allocation; only the following can be updated: ${ALLOCATION_PATCH_FIELDS.join(', ')}`,
});
