/**
 * A node's cached BIOS settings (`bios_settings`, Ironic's `BIOSSetting`): what its BIOS interface
 * last read from the firmware, one row per setting name. No built-in BIOS interface reads firmware
 * yet, so every node has none; the reads below answer as Ironic's do all the same.
 */
import { NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';

/** One cached setting. */
export interface BiosSetting {
  name: string;
  value: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The node's settings, by name. */
export async function listBiosSettings(store: Store, nodeId: number): Promise<BiosSetting[]> {
  return store.db.selectFrom('bios_settings').select(['name', 'value', 'created_at', 'updated_at']).where('node_id', '=', nodeId).orderBy('name').execute();
}

/** One setting of the node; `NotFound` in Ironic's words when the node has none of that name. */
export async function getBiosSetting(store: Store, node: { id: number; uuid: string }, name: string): Promise<BiosSetting> {
  const row = await store.db.selectFrom('bios_settings').select(['name', 'value', 'created_at', 'updated_at']).where('node_id', '=', node.id).where('name', '=', name).executeTakeFirst();
  if (row === undefined) throw new NotFound(`Node ${node.uuid} doesn't have a BIOS setting '${name}'`);
  return row;
}
