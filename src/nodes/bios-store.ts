/**
 * A node's cached BIOS settings (`bios_settings`, Ironic's `BIOSSetting`): what its BIOS interface
 * last read from the firmware, one row per setting name. No built-in BIOS interface reads firmware
 * yet, so every node has none; the reads below answer as Ironic's do all the same.
 *
 * Ironic also keeps each setting's registry (type, bounds, allowed values…, API 1.74), when the
 * BIOS interface reports one. No interface here reports a registry and the table keeps none, so
 * every registry field reads as unknown (`null`; `allowable_values` `[]`, Ironic's empty list).
 */
import { NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';

/** What a BIOS setting's registry says of it (Ironic 1.74); null where unknown. */
export interface BiosRegistry {
  attribute_type: string | null;
  allowable_values: string[];
  lower_bound: number | null;
  max_length: number | null;
  min_length: number | null;
  read_only: boolean | null;
  reset_required: boolean | null;
  unique: boolean | null;
  upper_bound: number | null;
}

/** The registry fields, in Ironic's order. */
export const BIOS_REGISTRY_FIELDS = [
  'attribute_type', 'allowable_values', 'lower_bound', 'max_length', 'min_length', 'read_only', 'reset_required', 'unique', 'upper_bound',
] as const satisfies ReadonlyArray<keyof BiosRegistry>;

/** One cached setting, with its registry. */
export interface BiosSetting extends BiosRegistry {
  name: string;
  value: string | null;
  created_at: Date;
  updated_at: Date;
}

type BiosRow = Pick<BiosSetting, 'name' | 'value' | 'created_at' | 'updated_at'>;

/** A stored setting with its registry: none is kept, so all unknown. */
const withRegistry = (row: BiosRow): BiosSetting => ({
  ...row,
  attribute_type: null,
  allowable_values: [],
  lower_bound: null,
  max_length: null,
  min_length: null,
  read_only: null,
  reset_required: null,
  unique: null,
  upper_bound: null,
});

/** The node's settings, by name. */
export async function listBiosSettings(store: Store, nodeId: number): Promise<BiosSetting[]> {
  const rows = await store.db.selectFrom('bios_settings').select(['name', 'value', 'created_at', 'updated_at']).where('node_id', '=', nodeId).orderBy('name').execute();
  return rows.map(withRegistry);
}

/** One setting of the node; `NotFound` in Ironic's words when the node has none of that name. */
export async function getBiosSetting(store: Store, node: { id: number; uuid: string }, name: string): Promise<BiosSetting> {
  const row = await store.db.selectFrom('bios_settings').select(['name', 'value', 'created_at', 'updated_at']).where('node_id', '=', node.id).where('name', '=', name).executeTakeFirst();
  if (row === undefined) throw new NotFound(`Node ${node.uuid} doesn't have a BIOS setting '${name}'`);
  return withRegistry(row);
}
