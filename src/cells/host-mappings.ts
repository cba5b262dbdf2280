/**
 * Host mappings in the API database: which cell each compute host belongs to. A host is in one
 * cell at most (`host_mappings.host` is unique); discovery creates the mappings, operators list and
 * delete them.
 */
import type { Store } from '../db/connect.js';
import type { CellStores } from './cell-stores.js';
import { findCell } from './cells.js';
import type { CellMapping } from './cells.js';
import { HostHasInstances, HostInOtherCell, HostMappingNotFound } from './errors.js';

export interface HostMapping {
  host: string;
  cellUuid: string;
  cellName: string;
}

/** Every host mapping, or those of one cell (by name or uuid; `CellNotFound` if none), sorted by host. */
export async function listHosts(api: Store, options: { cell?: string } = {}): Promise<HostMapping[]> {
  let query = api.db
    .selectFrom('host_mappings')
    .innerJoin('cell_mappings', 'cell_mappings.id', 'host_mappings.cell_id')
    .select(['host_mappings.host as host', 'cell_mappings.uuid as cellUuid', 'cell_mappings.name as cellName'])
    .orderBy('host_mappings.host');
  if (options.cell !== undefined) {
    const cell = await findCell(api, options.cell);
    query = query.where('host_mappings.cell_id', '=', cell.id);
  }
  return query.execute();
}

/**
 * Deletes a host's mapping, as `nova-manage cell_v2 delete_host`: `CellNotFound` (exit 1),
 * `HostMappingNotFound` (2), `HostInOtherCell` (3), `HostHasInstances` (4). The host's compute
 * nodes and services are marked unmapped first, so discovery maps the host again while its
 * service still runs.
 */
export async function deleteHost(api: Store, cells: CellStores, input: { cell: string; host: string }): Promise<{ host: string; cell: CellMapping }> {
  const cell = await findCell(api, input.cell);
  const mapping = await api.db
    .selectFrom('host_mappings')
    .innerJoin('cell_mappings', 'cell_mappings.id', 'host_mappings.cell_id')
    .select(['host_mappings.id as id', 'cell_mappings.id as cellId', 'cell_mappings.uuid as cellUuid', 'cell_mappings.name as cellName'])
    .where('host_mappings.host', '=', input.host)
    .executeTakeFirst();
  if (!mapping) throw new HostMappingNotFound(input.host);
  if (mapping.cellId !== cell.id) {
    throw new HostInOtherCell(
      `host ${JSON.stringify(input.host)} is not in cell ${JSON.stringify(cell.name)} (${cell.uuid}) but in cell ${JSON.stringify(mapping.cellName)} (${mapping.cellUuid})`,
    );
  }
  const store = await cells.get(cell);
  const instances = await store.db
    .selectFrom('instances')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('host', '=', input.host)
    .executeTakeFirstOrThrow();
  if (Number(instances.n) > 0) {
    throw new HostHasInstances(`there are ${Number(instances.n)} instance(s) on host ${JSON.stringify(input.host)}; delete or move them first`);
  }
  await store.db.updateTable('compute_nodes').set({ mapped: false }).where('host', '=', input.host).where('mapped', '=', true).execute();
  await store.db.updateTable('services').set({ mapped: false }).where('host', '=', input.host).where('mapped', '=', true).execute();
  await api.db.deleteFrom('host_mappings').where('id', '=', mapping.id).execute();
  return { host: input.host, cell };
}
