/**
 * Host discovery (DESIGN §1 invariant 4, §7): maps the hosts of a cell's compute nodes and — by
 * service — of its compute services to the cell, so the scheduler can reach them.
 *
 * Nova's semantics, with its defects removed:
 * - Compute nodes *and services* carry a `mapped` bit. A run with nothing new is one query per cell
 *   ("which rows are unmapped?"), so the scheduler can run discovery by service periodically; Nova
 *   re-reads every service on every run. SQLite answers it from the `mapped` indexes; PostgreSQL
 *   scans the tables (~10 ms for 100,000 nodes), because an index on `mapped` would forbid setting
 *   the bits in place (cell migration 0003), which is most of the cost of a first run.
 * - Set-based: one SELECT of the distinct unmapped hosts, one INSERT of all their mappings, one
 *   UPDATE per table of the `mapped` bits, whatever the number of hosts. Nova makes round trips
 *   per node and per service.
 * - Concurrent runs never fail: the INSERT skips hosts someone else mapped meanwhile
 *   (`ON CONFLICT DO NOTHING`), so each mapping is created exactly once and every run succeeds.
 * - A host already mapped to another cell is reported (naming both cells) and left alone; the other
 *   hosts are still mapped. A cell whose database does not answer is reported; the others are
 *   still discovered.
 *
 * Order of writes: mappings first, bits second. A crash in between leaves unmarked rows whose
 * hosts are mapped; the next run finds the mapping in the same cell and marks them.
 */
import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import type { CellStores } from './cell-stores.js';
import { COMPUTE_BINARY, findCell, isCell0, listCells } from './cells.js';
import type { CellMapping } from './cells.js';

export interface DiscoveryResult {
  /** Host mappings this run created (a host mapped concurrently by another run is not listed). */
  mapped: Array<{ host: string; cellUuid: string; cellName: string }>;
  /** Cells searched (cell0 is never searched: it holds no hosts). */
  cellsChecked: number;
  /** Hosts found in a cell but already mapped to another one; left unmapped there. */
  conflicts: Array<{ host: string; cellUuid: string; cellName: string; mappedCellUuid: string; mappedCellName: string }>;
  /** Cells that could not be searched (database unreachable…), with the reason. */
  failedCells: Array<{ cellUuid: string; cellName: string; message: string }>;
}

export interface DiscoveryOptions {
  /** Only this cell (name or uuid); `CellNotFound` if there is none. Default: every cell but cell0. */
  cell?: string;
  /** Also map hosts of compute services (binary `ironring-compute`), even those with no nodes. */
  byService: boolean;
  logger?: Logger;
  /** Progress lines as `nova-manage cell_v2 discover_hosts --verbose` prints them. */
  onStatus?: (message: string) => void;
}

type Kind = 'compute' | 'service';

/** Searches the cells and maps every unmapped host found. See the module comment for the semantics. */
export async function discoverHosts(api: Store, cells: CellStores, options: DiscoveryOptions): Promise<DiscoveryResult> {
  const status = options.onStatus ?? (() => undefined);
  let targets: CellMapping[];
  if (options.cell !== undefined) {
    targets = [await findCell(api, options.cell)];
  } else {
    targets = await listCells(api);
    status(`Found ${targets.length} cell mappings.`);
  }
  const result: DiscoveryResult = { mapped: [], cellsChecked: 0, conflicts: [], failedCells: [] };
  for (const cell of targets) {
    if (isCell0(cell)) {
      status('Skipping cell0 since it does not contain hosts.');
      continue;
    }
    result.cellsChecked++;
    status(`Getting computes from cell '${cell.name}': ${cell.uuid}`);
    try {
      const store = await cells.get(cell);
      await discoverInCell(api, store, cell, options.byService, result, status, options.logger);
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      result.failedCells.push({ cellUuid: cell.uuid, cellName: cell.name, message });
      status(`Cannot search cell '${cell.name}': ${cell.uuid}: ${message}`);
      options.logger?.error({ cell: cell.name, cellUuid: cell.uuid, err }, 'host discovery failed in cell');
    }
  }
  return result;
}

async function discoverInCell(
  api: Store,
  store: Store,
  cell: CellMapping,
  byService: boolean,
  result: DiscoveryResult,
  status: (message: string) => void,
  logger: Logger | undefined,
): Promise<void> {
  // The one query a run with nothing new costs.
  const found = await retrying(() => selectUnmapped(store, byService));
  const kinds = new Map<string, Set<Kind>>();
  for (const row of found) {
    const set = kinds.get(row.host) ?? new Set<Kind>();
    set.add(row.kind);
    kinds.set(row.host, set);
  }
  // Printed as soon as they are read, before any mapping is made, with the number read (Nova's
  // discover_hosts does the same): the moment a concurrent run would collide with this one.
  status(`Found ${kinds.size} unmapped computes in cell: ${cell.uuid}`);
  if (kinds.size === 0) return;
  // Sorted, so concurrent inserters take the unique-index locks in one order (no deadlocks).
  const hosts = [...kinds.keys()].sort();
  const created = new Set(await retrying(() => insertMappings(api, cell.id, hosts)));
  const inCell = new Set(created);

  const others = hosts.filter((h) => !created.has(h));
  if (others.length > 0) {
    for (const m of await retrying(() => selectMappings(api, others))) {
      if (m.cellId === cell.id) {
        inCell.add(m.host);
        continue;
      }
      result.conflicts.push({ host: m.host, cellUuid: cell.uuid, cellName: cell.name, mappedCellUuid: m.cellUuid, mappedCellName: m.cellName });
      status(`Host '${m.host}' is already mapped to cell '${m.cellName}': ${m.cellUuid}; not mapping it to cell '${cell.name}': ${cell.uuid}`);
      logger?.error(
        { host: m.host, cell: cell.name, cellUuid: cell.uuid, mappedCell: m.cellName, mappedCellUuid: m.cellUuid },
        'host found in one cell is mapped to another',
      );
    }
    // A host missing from both lists lost its mapping between the two statements (delete-host);
    // its rows stay unmarked and the next run maps it.
  }

  for (const host of hosts) {
    if (!created.has(host)) continue;
    const kind: Kind = kinds.get(host)!.has('service') ? 'service' : 'compute';
    status(`Creating host mapping for ${kind} host '${host}': ${cell.uuid}`);
    result.mapped.push({ host, cellUuid: cell.uuid, cellName: cell.name });
  }

  const computeHosts = hosts.filter((h) => inCell.has(h) && kinds.get(h)!.has('compute'));
  const serviceHosts = hosts.filter((h) => inCell.has(h) && kinds.get(h)!.has('service'));
  await Promise.all([
    ...chunks(store, computeHosts).map((part) => retrying(() => markMapped(store, 'compute_nodes', part))),
    ...chunks(store, serviceHosts).map((part) => retrying(() => markMapped(store, 'services', part))),
  ]);
  if (created.size > 0) logger?.info({ cell: cell.name, cellUuid: cell.uuid, hosts: created.size }, 'mapped hosts to cell');
}

/** The distinct hosts of unmapped compute nodes (and services), each with where it was found. */
async function selectUnmapped(store: Store, byService: boolean): Promise<Array<{ host: string; kind: Kind }>> {
  // SQLite plans by its statistics too; an ANALYZE taken while every row was unmapped would make
  // it scan the whole table. The `mapped` indexes are what keeps this query cheap, so name them.
  // PostgreSQL has no such index (cell migration 0003): it scans the tables.
  const sqlite = store.engine === 'sqlite';
  const nodesFrom = sqlite ? sql`compute_nodes indexed by compute_nodes_mapped_idx` : sql`compute_nodes`;
  const servicesFrom = sqlite ? sql`services indexed by services_mapped_idx` : sql`services`;
  const nodes = sql`select distinct host, 'compute' as kind from ${nodesFrom} where mapped = ${false}`;
  const query = byService
    ? sql<{ host: string; kind: Kind }>`${nodes} union all select distinct host, 'service' as kind from ${servicesFrom} where mapped = ${false} and "binary" = ${COMPUTE_BINARY}`
    : sql<{ host: string; kind: Kind }>`${nodes}`;
  return (await query.execute(store.db)).rows;
}

/** A set of host names as one parameter (a text[] on PostgreSQL, a JSON array on SQLite): a subquery of `host`. */
function hostSet(store: Store, hosts: readonly string[]): RawBuilder<unknown> {
  return store.engine === 'postgres'
    ? sql`(select unnest(cast(${hosts} as text[])) as host)`
    : sql`(select value as host from json_each(${JSON.stringify(hosts)}))`;
}

/** Inserts the mappings missing for `hosts` (sorted); returns the hosts this statement mapped. */
async function insertMappings(api: Store, cellId: number, hosts: readonly string[]): Promise<string[]> {
  // SQLite needs the WHERE to tell the upsert clause from a join constraint.
  const rows = await sql<{ host: string }>`
    insert into host_mappings (cell_id, host)
    select ${cellId}, h.host from ${hostSet(api, hosts)} as h where true order by h.host
    on conflict (host) do nothing
    returning host`.execute(api.db);
  return rows.rows.map((r) => r.host);
}

async function selectMappings(api: Store, hosts: readonly string[]): Promise<Array<{ host: string; cellId: number; cellUuid: string; cellName: string }>> {
  const rows = await sql<{ host: string; cell_id: number; uuid: string; name: string }>`
    select hm.host, hm.cell_id, cm.uuid, cm.name
    from host_mappings hm join cell_mappings cm on cm.id = hm.cell_id
    where hm.host in ${hostSet(api, hosts)}`.execute(api.db);
  return rows.rows.map((r) => ({ host: r.host, cellId: Number(r.cell_id), cellUuid: r.uuid, cellName: r.name }));
}

/**
 * Splits a large host set so PostgreSQL marks it from several connections at once (each statement
 * is one backend; marking 100,000 rows is still the largest part of a first run). SQLite has one
 * writer.
 */
function chunks(store: Store, hosts: readonly string[]): string[][] {
  if (hosts.length === 0) return [];
  const parts = store.engine === 'postgres' ? Math.min(MARK_PARALLELISM, Math.ceil(hosts.length / 1000)) : 1;
  const size = Math.ceil(hosts.length / parts);
  const out: string[][] = [];
  for (let i = 0; i < hosts.length; i += size) out.push(hosts.slice(i, i + size));
  return out;
}

/** Concurrent UPDATE statements per table on PostgreSQL. */
const MARK_PARALLELISM = 2;

async function markMapped(store: Store, table: 'compute_nodes' | 'services', hosts: readonly string[]): Promise<void> {
  const binary = table === 'services' ? sql` and "binary" = ${COMPUTE_BINARY}` : sql``;
  // On PostgreSQL `= any(array)` lets the planner choose: for a few hosts the host index; for
  // thousands a sequential scan probing a hash of the array, in the table's order — half the CPU
  // of `in (select unnest(…))`, which it plans as one host-index lookup per host.
  const inHosts = store.engine === 'postgres' ? sql`host = any(cast(${hosts} as text[]))` : sql`host in ${hostSet(store, hosts)}`;
  await sql`update ${sql.table(table)} set mapped = ${true} where mapped = ${false}${binary} and ${inHosts}`.execute(store.db);
}

/**
 * Runs a statement again when PostgreSQL aborted it for a deadlock or a serialization failure:
 * every statement here is idempotent, so a retry is always safe.
 */
async function retrying<T>(work: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= attempts || (code !== '40P01' && code !== '40001')) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10 * i));
    }
  }
}
