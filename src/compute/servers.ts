/**
 * What the compute API reads and writes across the cells: servers found through their instance
 * mappings, listed and deleted; the service and compute node rows of every cell, with liveness by
 * the database clock. The routes only route; the queries live here, beside the rows they read.
 */
import type { ComputeStores } from '../cells/compute-stores.js';
import { isCell0, listCells } from '../cells/cells.js';
import type { CellMapping } from '../cells/cells.js';
import { deleteInstanceMapping, instanceCell, instanceCellIds } from '../cells/instance-mappings.js';
import { NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { INSTANCES_CHANNEL, serverView } from './instances.js';
import type { InstanceRow, ServerView } from './instances.js';
import { COMPUTE_BINARY, SCHEDULER_BINARY, liveExpression } from './services.js';

/** A server, the cell that holds it and that cell's database. */
export interface FoundServer {
  row: InstanceRow;
  cell: CellMapping;
  store: Store;
}

/** Server `id` (a uuid, any case). Throws `NotFound`. */
export async function findServer(stores: ComputeStores, id: string): Promise<FoundServer> {
  const uuid = id.toLowerCase();
  const cell = await instanceCell(stores.api, uuid);
  if (!cell) throw new NotFound(`server ${uuid} not found`);
  const store = await stores.cells.get(cell);
  const row = await store.db.selectFrom('instances').selectAll().where('uuid', '=', uuid).executeTakeFirst();
  if (!row) throw new NotFound(`server ${uuid} not found`);
  return { row, cell, store };
}

/** Every server of every cell, oldest first within a cell. */
export async function listServers(stores: ComputeStores): Promise<ServerView[]> {
  const mappings = await instanceCellIds(stores.api);
  const servers: ServerView[] = [];
  for (const cell of await listCells(stores.api)) {
    const store = await stores.cells.get(cell);
    const rows = await store.db.selectFrom('instances').selectAll().orderBy('created_at').orderBy('id').execute();
    // Cells that share a database (cell0 may) see the same rows: each shows only its own.
    for (const row of rows) if (mappings.get(row.uuid) === cell.id) servers.push(serverView(row, cell.name));
  }
  return servers;
}

/**
 * Deletes server `id`: at once when it was never placed (null), else marks it `deleting` and wakes
 * its compute service, which undeploys the node and removes it; resolves to the marked server.
 * Throws `NotFound`.
 */
export async function deleteServer(stores: ComputeStores, id: string): Promise<ServerView | null> {
  const { row, cell, store } = await findServer(stores, id);
  if (row.host === null || row.node === null) {
    await store.db.deleteFrom('instances').where('uuid', '=', row.uuid).execute();
    await deleteInstanceMapping(stores.api, row.uuid);
    return null;
  }
  const updated = await store.db
    .updateTable('instances')
    .set({ task_state: 'deleting', updated_at: store.sqlNow() })
    .where('uuid', '=', row.uuid)
    .returningAll()
    .executeTakeFirst();
  if (!updated) throw new NotFound(`server ${row.uuid} not found`);
  await store.notify(INSTANCES_CHANNEL, row.host).catch(() => undefined);
  return serverView(updated, cell.name);
}

/** A compute service or scheduler as the compute API lists it. */
export interface ServiceListing {
  id: number;
  host: string;
  binary: string;
  cell: string;
  state: 'up' | 'down';
  status: 'enabled' | 'disabled';
  forced_down: boolean;
  /** Whether discovery mapped the host to its cell (compute services only). */
  host_mapped: boolean | null;
  /** Compute nodes the service exposes (compute services only). */
  nodes: number | null;
  last_seen_up: string | null;
}

/** The compute services of every cell and the schedulers of cell0; live by the database clock. */
export async function listServiceStates(stores: ComputeStores, downTime: number): Promise<ServiceListing[]> {
  const services: ServiceListing[] = [];
  for (const cell of await listCells(stores.api)) {
    const store = await stores.cells.get(cell);
    const binaries = isCell0(cell) ? [SCHEDULER_BINARY] : [COMPUTE_BINARY];
    const rows = await store.db
      .selectFrom('services')
      .select(['id', 'host', 'binary', 'disabled', 'forced_down', 'mapped', 'last_seen_up'])
      .select(store.sqlFlag(liveExpression(store, downTime)).as('live'))
      .select((eb) => eb.selectFrom('compute_nodes').select(eb.fn.countAll<number>().as('n')).whereRef('compute_nodes.host', '=', 'services.host').as('nodes'))
      .where('binary', 'in', binaries)
      .orderBy('id')
      .execute();
    const hosts = new Set((await stores.api.db.selectFrom('host_mappings').select('host').where('cell_id', '=', cell.id).execute()).map((h) => h.host));
    for (const r of rows) {
      services.push({
        id: r.id,
        host: r.host,
        binary: r.binary,
        cell: cell.name,
        state: r.live ? 'up' : 'down',
        status: r.disabled ? 'disabled' : 'enabled',
        forced_down: r.forced_down,
        host_mapped: r.binary === COMPUTE_BINARY ? hosts.has(r.host) : null,
        nodes: r.binary === COMPUTE_BINARY ? Number(r.nodes ?? 0) : null,
        last_seen_up: r.last_seen_up ? r.last_seen_up.toISOString() : null,
      });
    }
  }
  return services;
}

/** A compute node as the compute API lists it. */
export interface ComputeNodeListing {
  uuid: string;
  host: string;
  cell: string;
  resource_class: string | null;
  mapped: boolean;
  updated_at: string;
}

/** The compute nodes of every cell but cell0, by host and uuid. */
export async function listComputeNodes(stores: ComputeStores): Promise<ComputeNodeListing[]> {
  const out: ComputeNodeListing[] = [];
  for (const cell of await listCells(stores.api)) {
    if (isCell0(cell)) continue;
    const store = await stores.cells.get(cell);
    const rows = await store.db.selectFrom('compute_nodes').select(['uuid', 'host', 'resource_class', 'mapped', 'updated_at']).orderBy('host').orderBy('uuid').execute();
    for (const r of rows) out.push({ uuid: r.uuid, host: r.host, cell: cell.name, resource_class: r.resource_class, mapped: r.mapped, updated_at: r.updated_at.toISOString() });
  }
  return out;
}
