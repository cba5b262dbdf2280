/**
 * The chassis field table, in the form of the node and port tables (`node-fields.ts`,
 * `port-fields.ts`): one row per field of a chassis's API shape with the microversion it appeared
 * in (all of them 1.1, as in Ironic), how the view reads it, and what create and PATCH take.
 */
import { Type } from 'typebox';
import type { ChassisRow } from '../db/schema.js';
import { FieldTable, UUID_INPUT } from './field-table.js';
import type { FieldSpec } from './field-table.js';

/** A resource link as the API shows it (`self` and `bookmark`). */
export interface ResourceLink {
  href: string;
  rel: string;
}

/** What the view needs beyond the row: the API's links, which only the API can build. */
export interface ChassisFieldContext {
  /** The `self` and `bookmark` links of `<collection>/<id>`. */
  links: (collection: string, id: string) => ResourceLink[];
}


const CHASSIS_FIELD_ROWS: Readonly<Record<string, FieldSpec<ChassisRow, ChassisFieldContext>>> = {
  uuid: {
    since: [1, 1], column: 'uuid',
    input: UUID_INPUT,
  },
  description: {
    since: [1, 1], column: 'description',
    input: { schema: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]), expected: 'expected a string of at most 255 characters, or null', create: true, patch: true },
  },
  // Ironic's schema takes null too, which its chassis object stores as {}.
  extra: {
    since: [1, 1], column: 'extra',
    input: {
      schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
      expected: 'expected a JSON object', create: true, patch: true, json: true,
      normalize: (v) => v ?? {},
    },
  },
  created_at: { since: [1, 1], column: 'created_at', view: 'time' },
  updated_at: { since: [1, 1], column: 'updated_at', view: 'time' },
  links: { since: [1, 1], view: (c, ctx) => ctx.links('chassis', c.uuid), reads: ['uuid'] },
  // Where the chassis's nodes are listed: `/v1/chassis/{uuid}/nodes`.
  nodes: { since: [1, 1], view: (c, ctx) => ctx.links(`chassis/${c.uuid}`, 'nodes'), reads: ['uuid'] },
};

export const CHASSIS_FIELDS = new FieldTable<ChassisRow, ChassisFieldContext>(CHASSIS_FIELD_ROWS, {
  noun: 'chassis',
  cannotChange: (path) => `${path}: cannot be changed on a chassis`,
});

/** Fields of a list without `detail`, as Ironic (whose views always add `links`). */
export const CHASSIS_LIST_FIELDS = ['uuid', 'description', 'links'] as const;
