/**
 * What the compute API reads and writes across the cells: servers found through their instance
 * mappings, listed a page at a time (keyset, merged across the cells) and deleted; the service and
 * compute node rows of every cell, with liveness by the database clock. The routes only route; the
 * queries live here, beside the rows they read.
 */
import { sql } from 'kysely';
import type { RawBuilder, SqlBool } from 'kysely';
import type { ComputeStores } from '../cells/compute-stores.js';
import { isCell0, listCells } from '../cells/cells.js';
import type { CellMapping } from '../cells/cells.js';
import { deleteInstanceMapping, instanceCell, instanceCellIds } from '../cells/instance-mappings.js';
import { InvalidParameter, NotFound } from '../common/errors.js';
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

/** Thrown for a page marker that names no server (Nova's 400 "marker [<id>] not found"). */
export class MarkerNotFound extends InvalidParameter {
  constructor(
    /** The marker as it was given. */
    readonly marker: string,
  ) {
    super(`marker [${marker}] not found`);
  }
}

/** What `listServersPage` lists. */
export interface ServerPageQuery {
  /** Most servers on the page: a whole number, at least 1 (the caller bounds it). */
  limit: number;
  /** Uuid of the last server of the previous page (any case); the page starts right after it. */
  marker?: string;
}

/** One page of servers, oldest first. */
export interface ServerPage {
  servers: ServerView[];
  /** The marker of the next page (the uuid of this page's last server); null when none follows. */
  next: string | null;
}

/**
 * A position in the listing order: `created_at` as fixed-width UTC text to the microsecond
 * (`2026-01-01T00:00:00.123456Z`), then uuid. Text, because a PostgreSQL timestamp holds
 * microseconds that a JavaScript Date would cut to milliseconds — the marker must name exactly
 * the instant stored, or rows of the marker's millisecond would be shown twice or never.
 */
interface Position {
  created: string;
  uuid: string;
}

/** A cell database and the cells kept in it (cell0 may share one with another cell). */
interface CellDatabase {
  store: Store;
  cells: Map<number, CellMapping>;
}

/** `instances.created_at` as a `Position`'s `created` text, on either engine. */
function createdText(store: Store): RawBuilder<string> {
  return store.engine === 'postgres'
    ? sql<string>`to_char(instances.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
    : // SQLite stores `YYYY-MM-DDTHH:MM:SS.sssZ` (SQLITE_TIME_FORMAT): to the millisecond.
      sql<string>`substr(instances.created_at, 1, 23) || '000Z'`;
}

/**
 * The rows after `from`, as a row-value comparison on (created_at, uuid): a range of the index
 * `instances_created_at_uuid_idx` on both engines.
 */
function after(store: Store, from: Position): RawBuilder<SqlBool> {
  if (store.engine === 'postgres') return sql<SqlBool>`(instances.created_at, instances.uuid) > (cast(${from.created} as timestamptz), ${from.uuid})`;
  const millis = `${from.created.slice(0, 23)}Z`;
  // A position with sub-millisecond digits (from a PostgreSQL cell) lies between two SQLite values.
  return from.created.slice(23, 26) === '000'
    ? sql<SqlBool>`(instances.created_at, instances.uuid) > (${millis}, ${from.uuid})`
    : sql<SqlBool>`instances.created_at > ${millis}`;
}

/** Each database of the cells once, with the cells it holds. */
async function cellDatabases(stores: ComputeStores): Promise<CellDatabase[]> {
  const databases = new Map<Store, CellDatabase>();
  for (const cell of await listCells(stores.api)) {
    const store = await stores.cells.get(cell);
    const entry = databases.get(store) ?? { store, cells: new Map<number, CellMapping>() };
    entry.cells.set(cell.id, cell);
    databases.set(store, entry);
  }
  return [...databases.values()];
}

/** Where the marker server sits in the order. Throws `MarkerNotFound`. */
async function markerPosition(stores: ComputeStores, marker: string): Promise<Position> {
  const uuid = marker.toLowerCase();
  const cell = await instanceCell(stores.api, uuid);
  if (cell) {
    const store = await stores.cells.get(cell);
    const row = await store.db.selectFrom('instances').select(createdText(store).as('created')).where('uuid', '=', uuid).executeTakeFirst();
    if (row) return { created: row.created, uuid };
  }
  throw new MarkerNotFound(marker);
}

interface Listed {
  at: Position;
  row: InstanceRow;
  cell: CellMapping;
}

/**
 * Up to `want` servers of one database after `from`, in order. A database shared by cells holds
 * the rows of each (and rows not mapped yet): a row is listed under the cell its instance mapping
 * names, when that cell is kept here, else skipped — and the next rows are read in its place.
 */
async function databasePage(api: Store, database: CellDatabase, from: Position | null, want: number): Promise<Listed[]> {
  const listed: Listed[] = [];
  let start = from;
  for (;;) {
    let query = database.store.db.selectFrom('instances').selectAll('instances').select(createdText(database.store).as('created'));
    if (start) query = query.where(after(database.store, start));
    const rows = await query.orderBy('instances.created_at').orderBy('instances.uuid').limit(want).execute();
    const owners = await instanceCellIds(api, rows.map((r) => r.uuid));
    for (const { created, ...row } of rows) {
      const owner = owners.get(row.uuid);
      const cell = owner === undefined || owner === null ? undefined : database.cells.get(owner);
      if (cell) listed.push({ at: { created, uuid: row.uuid }, row, cell });
    }
    const last = rows.at(-1);
    if (listed.length >= want || rows.length < want || !last) return listed.slice(0, want);
    start = { created: last.created, uuid: last.uuid };
  }
}

function byPosition(a: Listed, b: Listed): number {
  if (a.at.created !== b.at.created) return a.at.created < b.at.created ? -1 : 1;
  return a.at.uuid < b.at.uuid ? -1 : a.at.uuid > b.at.uuid ? 1 : 0;
}

/**
 * One page of the servers of every cell, in (created_at, uuid) order, as Nova's cross-cell listing
 * pages: each cell database reads at most `limit + 1` rows after the marker (an index range), the
 * pages are merged and cut to `limit`; the extra row says whether a next page exists. Throws
 * `InvalidParameter` for a bad `limit` and `MarkerNotFound` for a marker that is no server.
 */
export async function listServersPage(stores: ComputeStores, query: ServerPageQuery): Promise<ServerPage> {
  if (!Number.isSafeInteger(query.limit) || query.limit < 1) throw new InvalidParameter(`limit: expected a whole number of at least 1, got ${String(query.limit)}`);
  const from = query.marker === undefined ? null : await markerPosition(stores, query.marker);
  const databases = await cellDatabases(stores);
  const want = query.limit + 1;
  const merged = (await Promise.all(databases.map((d) => databasePage(stores.api, d, from, want)))).flat().sort(byPosition);
  const page = merged.slice(0, query.limit);
  return { servers: page.map((l) => serverView(l.row, l.cell.name)), next: merged.length > query.limit ? page[page.length - 1]!.row.uuid : null };
}

/**
 * How many servers the cells hold, for a heading: one `count(*)` per cell database, reading no
 * rows. It counts every row of the database, so it also counts an instance in the moment between
 * its insert and its mapping's (the listing shows it once mapped).
 */
export async function countServers(stores: ComputeStores): Promise<number> {
  const counts = await Promise.all(
    (await cellDatabases(stores)).map((d) => d.store.db.selectFrom('instances').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()),
  );
  return counts.reduce((sum, c) => sum + Number(c.n), 0);
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
