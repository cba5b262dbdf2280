/**
 * Cell mappings in the API database (DESIGN §3, §7): which cells exist and where each one's
 * database is. cell0 (the all-zero uuid) holds only instances that were never scheduled, so it
 * never has hosts and discovery skips it.
 *
 * Creating a cell migrates its database ('cell' set) before the mapping is written, so a mapping
 * never points at a database without the compute tables.
 */
import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { DatabaseUrlError } from '../common/errors.js';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Store } from '../db/connect.js';
import { parseDatabaseUrl } from '../db/connect.js';
import { migrateDatabase } from '../db/migrate.js';
import type { CellMappingsTable } from '../db/schema.js';
import { databaseKey } from './cell-stores.js';
import type { CellStores } from './cell-stores.js';
import { CellExists, CellHasHosts, CellHasInstanceMappings, CellHasInstances, CellNotFound, InvalidCell } from './errors.js';

/** The uuid of cell0, as in Nova. */
export const CELL0_UUID = '00000000-0000-0000-0000-000000000000';
/** The name `mapCell0` gives cell0. */
export const CELL0_NAME = 'cell0';

/** The binary name of a compute service row; discovery by service maps hosts of these. */
export const COMPUTE_BINARY = 'ironring-compute';

/** Cell names as `[compute] cell` accepts them. */
const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,255}$/;

/** A cell: its identity and the URL of its database. */
export interface CellMapping {
  id: number;
  uuid: string;
  name: string;
  /** URL of the cell's database (unmasked: callers mask it before showing it). */
  databaseConnection: string;
  /** A disabled cell gets no new instances; discovery still maps its hosts. */
  disabled: boolean;
}

export function isCell0(cell: Pick<CellMapping, 'uuid'>): boolean {
  return cell.uuid === CELL0_UUID;
}

/** A cell mapping row as a `CellMapping`. */
export function toCell(row: Selectable<CellMappingsTable>): CellMapping {
  return { id: row.id, uuid: row.uuid, name: row.name, databaseConnection: row.database_connection, disabled: row.disabled };
}

/** Every cell, by name (as `nova-manage cell_v2 list_cells` sorts them). */
export async function listCells(api: Store): Promise<CellMapping[]> {
  const rows = await api.db.selectFrom('cell_mappings').selectAll().orderBy('name').execute();
  return rows.map(toCell);
}

/** The cell with this uuid or name (a uuid-shaped value is looked up as a uuid first). Throws `CellNotFound`. */
export async function findCell(api: Store, nameOrUuid: string): Promise<CellMapping> {
  const wanted = nameOrUuid.trim();
  if (wanted === '') throw new CellNotFound(nameOrUuid);
  const rows = await api.db
    .selectFrom('cell_mappings')
    .selectAll()
    .where((eb) => eb.or([eb('uuid', '=', wanted.toLowerCase()), eb('name', '=', wanted)]))
    .execute();
  const byUuid = rows.find((r) => r.uuid === wanted.toLowerCase());
  const row = byUuid ?? rows[0];
  if (!row) throw new CellNotFound(nameOrUuid);
  return toCell(row);
}

function validateUrl(url: string): void {
  try {
    parseDatabaseUrl(url);
  } catch (err) {
    if (err instanceof DatabaseUrlError) throw new InvalidCell(`--database-connection: ${err.message}`);
    throw err;
  }
}

/**
 * Creates a cell: migrates its database ('cell' set), then records the mapping. Throws
 * `CellExists` when the name, the uuid or the database is already a cell's, `InvalidCell` for a bad
 * name, uuid or URL, and `DatabaseUnavailable` when the cell database does not answer.
 */
export async function createCell(
  api: Store,
  cells: CellStores,
  input: { name: string; databaseConnection: string; uuid?: string; disabled?: boolean },
): Promise<CellMapping> {
  const name = input.name.trim();
  if (!NAME_PATTERN.test(name)) throw new InvalidCell(`cell name ${JSON.stringify(input.name)} is invalid: use 1-255 letters, digits, _ . -`);
  if (UUID_PATTERN.test(name)) throw new InvalidCell(`cell name ${JSON.stringify(name)} looks like a uuid; cells are found by name or uuid, so a name must not be one`);
  const uuid = (input.uuid ?? randomUUID()).toLowerCase();
  if (!UUID_PATTERN.test(uuid)) throw new InvalidCell(`--uuid ${JSON.stringify(input.uuid)} is not a uuid`);
  if (uuid === CELL0_UUID || name === CELL0_NAME) {
    throw new InvalidCell(`cell0 (uuid ${CELL0_UUID}) is created by \`ironring manage cell map-cell0\`, not by create`);
  }
  validateUrl(input.databaseConnection);
  await refuseDuplicates(api, { name, uuid, databaseConnection: input.databaseConnection });

  const store = await cells.open(input.databaseConnection, name);
  await migrateDatabase(store, ['cell']);

  const row = await api.db
    .insertInto('cell_mappings')
    .values({ uuid, name, database_connection: input.databaseConnection, disabled: input.disabled ?? false })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) {
    // Another process created a cell with this name or uuid since the check above.
    await refuseDuplicates(api, { name, uuid, databaseConnection: input.databaseConnection });
    throw new CellExists(`a cell named ${JSON.stringify(name)} or with uuid ${uuid} already exists`);
  }
  return toCell(row);
}

async function refuseDuplicates(api: Store, wanted: { name: string; uuid: string; databaseConnection: string }): Promise<void> {
  const existing = await listCells(api);
  const sameName = existing.find((c) => c.name === wanted.name);
  if (sameName) throw new CellExists(`a cell named ${JSON.stringify(wanted.name)} already exists (uuid ${sameName.uuid})`);
  const sameUuid = existing.find((c) => c.uuid === wanted.uuid);
  if (sameUuid) throw new CellExists(`a cell with uuid ${wanted.uuid} already exists (named ${JSON.stringify(sameUuid.name)})`);
  // Two cells on one database would both claim its compute services; cell0 holds no hosts, so
  // sharing its database (the embedded default keeps everything in one file) is harmless.
  const key = databaseKey(wanted.databaseConnection);
  const sameDb = existing.find((c) => !isCell0(c) && safeKey(c.databaseConnection) === key);
  if (sameDb) {
    throw new CellExists(`cell ${JSON.stringify(sameDb.name)} (${sameDb.uuid}) already uses that database; each cell needs its own`);
  }
}

function safeKey(url: string): string | null {
  try {
    return databaseKey(url);
  } catch {
    return null;
  }
}

/**
 * Maps cell0 to `databaseConnection` (migrating it), or returns the existing cell0 unchanged, as
 * `nova-manage cell_v2 map_cell0` does. Safe to run concurrently.
 */
export async function mapCell0(api: Store, cells: CellStores, databaseConnection: string): Promise<CellMapping> {
  const existing = await api.db.selectFrom('cell_mappings').selectAll().where('uuid', '=', CELL0_UUID).executeTakeFirst();
  if (existing) return toCell(existing);
  validateUrl(databaseConnection);
  const named = await api.db.selectFrom('cell_mappings').select('uuid').where('name', '=', CELL0_NAME).executeTakeFirst();
  if (named) throw new CellExists(`a cell named ${JSON.stringify(CELL0_NAME)} already exists with uuid ${named.uuid}; rename or delete it first`);
  const store = await cells.open(databaseConnection, CELL0_NAME);
  await migrateDatabase(store, ['cell']);
  await api.db
    .insertInto('cell_mappings')
    .values({ uuid: CELL0_UUID, name: CELL0_NAME, database_connection: databaseConnection })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const row = await api.db.selectFrom('cell_mappings').selectAll().where('uuid', '=', CELL0_UUID).executeTakeFirst();
  if (!row) throw new CellExists(`a cell named ${JSON.stringify(CELL0_NAME)} was created concurrently with another uuid`);
  return toCell(row);
}

/** The cell a host is mapped to, or null when discovery has not mapped it (yet). */
export async function hostCell(api: Store, host: string): Promise<CellMapping | null> {
  const row = await api.db
    .selectFrom('host_mappings')
    .innerJoin('cell_mappings', 'cell_mappings.id', 'host_mappings.cell_id')
    .selectAll('cell_mappings')
    .where('host_mappings.host', '=', host)
    .executeTakeFirst();
  return row ? toCell(row) : null;
}

export interface DeleteCellResult {
  cell: CellMapping;
  /** Hosts whose mappings were deleted with the cell (only with `force`). */
  hostsDeleted: string[];
  /** Instance mappings of already deleted instances removed with the cell (only with `force`). */
  instanceMappingsDeleted: number;
}

/**
 * Deletes a cell mapping, as `nova-manage cell_v2 delete_cell`: refuses while hosts are mapped to
 * it (`CellHasHosts`) unless `force`, and always while its database holds instances
 * (`CellHasInstances`). With `force`, the host mappings go too and the cell's compute nodes and
 * services are marked unmapped first, so discovery maps them again if the cell comes back.
 */
export async function deleteCell(api: Store, cells: CellStores, nameOrUuid: string, options: { force?: boolean } = {}): Promise<DeleteCellResult> {
  const cell = await findCell(api, nameOrUuid);
  const hosts = (await api.db.selectFrom('host_mappings').select('host').where('cell_id', '=', cell.id).orderBy('host').execute()).map((r) => r.host);
  if (hosts.length > 0 && !options.force) {
    throw new CellHasHosts(
      `there are ${hosts.length} host(s) mapped to cell ${JSON.stringify(cell.name)} (${cell.uuid}); delete them with \`ironring manage cell delete-host\` or pass --force`,
    );
  }
  const mappings = await api.db
    .selectFrom('instance_mappings')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('cell_id', '=', cell.id)
    .executeTakeFirstOrThrow();
  const instanceMappings = Number(mappings.n);
  let cellStore: Store | null = null;
  if (instanceMappings > 0 || hosts.length > 0) cellStore = await cells.get(cell);
  if (instanceMappings > 0 && cellStore) {
    const instances = await cellStore.db.selectFrom('instances').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    if (Number(instances.n) > 0) {
      throw new CellHasInstances(`there are ${Number(instances.n)} instance(s) in cell ${JSON.stringify(cell.name)} (${cell.uuid}); delete them first`);
    }
    if (!options.force) {
      throw new CellHasInstanceMappings(
        `there are ${instanceMappings} instance mapping(s) to cell ${JSON.stringify(cell.name)} (${cell.uuid}) whose instances are gone; pass --force to remove them with the cell`,
      );
    }
  }
  if (cellStore && hosts.length > 0) {
    // Unmark before the mappings go: a crash in between leaves mappings with unmarked rows, which
    // discovery repairs; the other order would leave marked rows that are never mapped again.
    await cellStore.db.updateTable('compute_nodes').set({ mapped: false }).where('mapped', '=', true).execute();
    await cellStore.db.updateTable('services').set({ mapped: false }).where('mapped', '=', true).execute();
  }
  await api.db.transaction().execute(async (tx) => {
    await tx.deleteFrom('instance_mappings').where('cell_id', '=', cell.id).execute();
    await tx.deleteFrom('host_mappings').where('cell_id', '=', cell.id).execute();
    await tx.deleteFrom('cell_mappings').where('id', '=', cell.id).execute();
  });
  return { cell, hostsDeleted: hosts, instanceMappingsDeleted: instanceMappings };
}
