/**
 * The node field table's rows of Ironic's API 1.61–1.82 (`node-fields.ts` spreads them into the
 * table, after `description`): retirement (1.61), the lessee (1.65), static network data (1.66),
 * the boot mode and secure boot state the management interface reports (1.75, read-only: changed
 * through `PUT /v1/nodes/{node}/states/boot_mode|secure_boot`, 1.76) and the shard (1.82).
 */
import { Type } from 'typebox';
import type { NodeRow } from '../db/schema.js';
import type { FieldSpec } from './field-table.js';
import { networkDataProblem } from './network-data.js';
import type { NodeFieldContext } from './node-fields.js';
import { booleanSpelling } from './port-fields.js';

type NodeField = FieldSpec<NodeRow, NodeFieldContext>;

/** Free text of at most 255 characters, or null: set on create and by PATCH (`lessee`, `shard`). */
const text255 = { schema: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]), expected: 'expected a string of at most 255 characters or null', create: true, patch: true } as const;

export const LATER_NODE_FIELD_ROWS: Readonly<Record<string, NodeField>> = {
  // A retired node is not made available again: `provide` is refused and its cleaning ends in
  // `manageable` (`retirement.ts`, checked by the conductor with the reason's rules).
  retired: {
    since: [1, 61], column: 'retired',
    input: { schema: Type.Union([Type.Boolean(), Type.Null()]), expected: 'expected true or false', coerce: booleanSpelling, normalize: (v) => v === true, removed: false, create: true, patch: true },
  },
  retired_reason: {
    since: [1, 61], column: 'retired_reason', sortable: false,
    input: { schema: Type.Union([Type.String({ maxLength: 4096 }), Type.Null()]), expected: 'expected a string of at most 4096 characters or null', create: true, patch: true },
  },
  // Free text, as Ironic keeps it (ironring checks no projects); `?lessee=` and `?project=` filter on it.
  lessee: { since: [1, 65], column: 'lessee', input: text255 },
  // Checked as a whole against the format (`network-data.ts`), also after a patch inside it.
  network_data: {
    since: [1, 66], column: 'network_data',
    input: {
      schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
      expected: (v) => networkDataProblem(v)?.replace(/^network_data(\.|: )/, '') ?? 'expected a JSON object',
      refine: (v) => networkDataProblem(v) === null,
      normalize: (v) => v ?? {},
      create: true, patch: true, json: true,
    },
  },
  // What the node's management interface last reported (null while unknown).
  boot_mode: { since: [1, 75], column: 'boot_mode' },
  secure_boot: { since: [1, 75], column: 'secure_boot' },
  shard: { since: [1, 82], column: 'shard', input: text255 },
};
