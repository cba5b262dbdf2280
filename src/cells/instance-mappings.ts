/**
 * Instance mappings in the API database: which cell holds each instance, so the compute API finds
 * a server without asking every cell. The scheduler writes the mapping with its claim; the
 * instance's removal (by its compute service, or at once for a server never placed) deletes it.
 */
import type { Store } from '../db/connect.js';
import { toCell } from './cells.js';
import type { CellMapping } from './cells.js';

/** The cell that holds instance `uuid`; null when it has no mapping (or its cell is gone). */
export async function instanceCell(api: Store, uuid: string): Promise<CellMapping | null> {
  const row = await api.db
    .selectFrom('instance_mappings')
    .innerJoin('cell_mappings', 'cell_mappings.id', 'instance_mappings.cell_id')
    .selectAll('cell_mappings')
    .where('instance_mappings.instance_uuid', '=', uuid)
    .executeTakeFirst();
  return row ? toCell(row) : null;
}

/** The cell id of each of `uuids` that has a mapping, by instance uuid (one query; none for no uuid). */
export async function instanceCellIds(api: Store, uuids: readonly string[]): Promise<Map<string, number | null>> {
  if (uuids.length === 0) return new Map();
  const rows = await api.db.selectFrom('instance_mappings').select(['instance_uuid', 'cell_id']).where('instance_uuid', 'in', uuids).execute();
  return new Map(rows.map((m) => [m.instance_uuid, m.cell_id]));
}

/** Removes an instance's mapping (the instance itself is gone); a no-op when there is none. */
export async function deleteInstanceMapping(api: Store, uuid: string): Promise<void> {
  await api.db.deleteFrom('instance_mappings').where('instance_uuid', '=', uuid).execute();
}
