/**
 * Reading and writing node rows: lists with filters, sorting and keyset pagination, lookups by uuid
 * or name, creation with the uniqueness rules turned into `Conflict` errors. Changing an existing
 * node goes through a lock-holding task (`cluster/task.ts`), never through here.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { CompiledQuery, ExpressionBuilder, Insertable } from 'kysely';
import { Conflict, InvalidParameter, NodeNotFound } from '../common/errors.js';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Store } from '../db/connect.js';
import { isForeignKeyViolation, uniqueViolation as engineUniqueViolation } from '../db/errors.js';
import { COLUMN_KINDS } from '../db/schema.js';
import type { Database, NodeRow, NodesTable } from '../db/schema.js';
import { chassisIdForNode, unknownChassisOfNode } from './chassis-store.js';
import { NODE_FIELDS } from './node-fields.js';

export type { NodeRow };

/** Columns a list may be sorted by: every non-JSON column the API shows, as in Ironic. */
export type NodeSortKey = keyof NodesTable & string;
export const NODE_SORT_KEYS = NODE_FIELDS.sortKeys() as readonly NodeSortKey[];

export interface NodeFilters {
  provision_state?: string;
  driver?: string;
  conductor_group?: string;
  resource_class?: string;
  maintenance?: boolean;
  /** True: nodes with an instance; false: nodes without. */
  associated?: boolean;
  instance_uuid?: string;
  /** A node fault (Ironic 1.42). ironring records no faults, so this matches no node. */
  fault?: string;
  /** Row id of a chassis: its nodes only (Ironic's `chassis_uuid` filter, resolved by the caller). */
  chassis_id?: number;
  /** Nodes of this owner (Ironic 1.50). */
  owner?: string;
  /** Nodes whose description contains this text, literally (Ironic 1.51). */
  description_contains?: string;
  /** Retired nodes (true) or the others (false) (Ironic 1.61). */
  retired?: boolean;
  /** Nodes of this lessee (Ironic 1.65). */
  lessee?: string;
  /** Nodes whose owner or lessee is this project (Ironic's `project`). */
  project?: string;
  /** Nodes in one of these shards, given in lower case and compared so (Ironic 1.82, as on its MySQL). */
  shard?: readonly string[];
  /** Nodes with a shard (true) or without (false) (Ironic 1.82). */
  sharded?: boolean;
}

export interface NodeListQuery {
  limit: number;
  /** Uuid of the last node of the previous page. */
  marker?: string;
  sortKey: NodeSortKey;
  sortDir: 'asc' | 'desc';
  filters: NodeFilters;
  /** Only these columns (plus `id`); all when absent. Rows then hold just these. */
  columns?: ReadonlyArray<keyof NodeRow>;
}

/**
 * One page of nodes, in order; `limit` rows at most. The chassis is read only when the rows are to
 * carry `chassis_uuid` (every column, or a list of columns naming it): a plain list reads the nodes
 * table alone.
 */
export async function listNodes(store: Store, query: NodeListQuery): Promise<NodeRow[]> {
  const { filters, sortKey, sortDir } = query;
  const from = store.db.selectFrom('nodes');
  const picked = query.columns
    ? from.select(['nodes.id', ...(query.columns.filter((c) => c !== 'chassis_uuid' && c !== 'allocation_uuid') as Array<keyof NodesTable>).map((c) => `nodes.${c}` as const)])
    : from.selectAll('nodes');
  const withChassis = query.columns === undefined || query.columns.includes('chassis_uuid');
  const withAllocation = query.columns === undefined || query.columns.includes('allocation_uuid');
  const joined = withChassis ? picked.select(chassisUuid) : picked;
  let q = (withAllocation ? joined.select(allocationUuid) : joined) as unknown as ReturnType<typeof allColumns>;
  if (filters.provision_state !== undefined) q = q.where('provision_state', '=', filters.provision_state);
  if (filters.driver !== undefined) q = q.where('driver', '=', filters.driver);
  if (filters.conductor_group !== undefined) q = q.where('conductor_group', '=', filters.conductor_group.toLowerCase());
  if (filters.resource_class !== undefined) q = q.where('resource_class', '=', filters.resource_class);
  if (filters.maintenance !== undefined) q = q.where('maintenance', '=', filters.maintenance);
  if (filters.instance_uuid !== undefined) q = q.where('instance_uuid', '=', filters.instance_uuid);
  if (filters.associated !== undefined) q = q.where('instance_uuid', filters.associated ? 'is not' : 'is', null);
  if (filters.fault !== undefined) q = q.where(sql<boolean>`1 = 0`);
  if (filters.chassis_id !== undefined) q = q.where('nodes.chassis_id', '=', filters.chassis_id);
  if (filters.owner !== undefined) q = q.where('owner', '=', filters.owner);
  if (filters.retired !== undefined) q = q.where('retired', '=', filters.retired);
  if (filters.lessee !== undefined) q = q.where('lessee', '=', filters.lessee);
  if (filters.project !== undefined) {
    const project = filters.project;
    q = q.where((eb) => eb.or([eb('owner', '=', project), eb('lessee', '=', project)]));
  }
  if (filters.shard !== undefined) q = filters.shard.length === 0 ? q.where(sql<boolean>`1 = 0`) : q.where(sql<string>`lower(shard)`, 'in', filters.shard);
  if (filters.sharded !== undefined) q = q.where('shard', filters.sharded ? 'is not' : 'is', null);
  if (filters.description_contains !== undefined) {
    // Literally: LIKE's wildcards in the text match themselves.
    const pattern = `%${filters.description_contains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where(sql<boolean>`description like ${pattern} escape '\\'`);
  }

  // Keyset pagination on (sort key, id): stable under inserts, and an index walk instead of OFFSET.
  // NULLs sort as the lowest value, and the sort expression says so on both engines.
  const sortOf = (table: string) => {
    const key = sql.ref(`${table}.${sortKey}`);
    // A column that is never NULL sorts as itself, so an index on it (created_at, id: the default
    // order) serves the ORDER BY and a page reads `limit` rows instead of sorting them all.
    if (sortKey === 'maintenance' || NOT_NULL_SORT_KEYS.has(sortKey)) return key;
    // Other flags sort as 0/1 on both engines (PostgreSQL's boolean takes no text fill), NULL
    // (`automated_clean` unset) below both.
    if (FLAG_COLUMNS.has(sortKey)) return sql`coalesce(cast(${key} as integer), -1)`;
    return sql`coalesce(${key}, ${nullFill(sortKey)})`;
  };
  const sortExpr = sortOf('nodes');
  if (query.marker !== undefined) {
    const marker = await store.db.selectFrom('nodes').select('id').where('uuid', '=', query.marker).executeTakeFirst();
    if (!marker) throw new InvalidParameter(`marker: no node with uuid ${query.marker}`);
    // The marker's sort value is read by the query itself: a PostgreSQL timestamp holds
    // microseconds, which a round trip through a JavaScript Date would cut to milliseconds.
    const value = sql`(select ${sortOf('marker')} from nodes as marker where marker.id = ${marker.id})`;
    const cmp = sortDir === 'asc' ? sql.raw('>') : sql.raw('<');
    // A row-value comparison, which both engines read as a range of the (sort key, id) index.
    q = q.where(sql<boolean>`(${sortExpr}, nodes.id) ${cmp} (${value}, ${marker.id})`);
  }
  return q.orderBy(sortExpr, sortDir).orderBy('nodes.id', sortDir).limit(query.limit).execute();
}

/**
 * The uuid of the node's chassis (null for none), joined in as a scalar subquery on the chassis's
 * primary key: on PostgreSQL it costs a node's show half what a LEFT JOIN does (the planner's share),
 * and on SQLite the same.
 */
function chassisUuid(eb: ExpressionBuilder<Database, 'nodes'>) {
  return eb.selectFrom('chassis').select('chassis.uuid').whereRef('chassis.id', '=', 'nodes.chassis_id').as('chassis_uuid');
}

/** The uuid of the allocation holding the node (null for none), joined in as the chassis's uuid is. */
function allocationUuid(eb: ExpressionBuilder<Database, 'nodes'>) {
  return eb.selectFrom('allocations').select('allocations.uuid').whereRef('allocations.id', '=', 'nodes.allocation_id').as('allocation_uuid');
}

/** Every column of a node, and the uuids of its chassis and allocation. */
function allColumns(store: Store) {
  return store.db.selectFrom('nodes').selectAll('nodes').select(chassisUuid).select(allocationUuid);
}

/** Sort keys whose columns are NOT NULL (the timestamps every row gets on insert, the uuid). */
const NOT_NULL_SORT_KEYS: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'uuid']);

/** The node columns that hold flags. */
const FLAG_COLUMNS: ReadonlySet<string> = new Set(Object.entries(COLUMN_KINDS.nodes).filter(([, kind]) => kind === 'flag').map(([column]) => column));

function nullFill(key: NodeSortKey): string {
  return key === 'created_at' || key === 'updated_at' || key === 'provision_updated_at' ? '0001-01-01T00:00:00.000Z' : '';
}

/**
 * `getNode`'s two queries, built and compiled once per store: showing one node is the API's
 * commonest request, and building the query cost more than running it on SQLite. Each has one
 * parameter, the value looked for.
 */
const showQueries = new WeakMap<Store, Record<'uuid' | 'name', CompiledQuery<NodeRow>>>();

function showQuery(store: Store, column: 'uuid' | 'name'): CompiledQuery<NodeRow> {
  let queries = showQueries.get(store);
  if (queries === undefined) {
    const build = (c: 'uuid' | 'name') => allColumns(store).where(`nodes.${c}`, '=', '').compile();
    queries = { uuid: build('uuid'), name: build('name') };
    if (queries.uuid.parameters.length !== 1 || queries.name.parameters.length !== 1) throw new Error('getNode: a show query must have exactly one parameter');
    showQueries.set(store, queries);
  }
  return queries[column];
}

/** The node with this uuid or name. Throws `NodeNotFound`. */
export async function getNode(store: Store, ident: string): Promise<NodeRow> {
  const column = UUID_PATTERN.test(ident) ? 'uuid' : 'name';
  const query = showQuery(store, column);
  const { rows } = await store.db.executeQuery<NodeRow>({ ...query, parameters: [column === 'uuid' ? ident.toLowerCase() : ident] });
  const row = rows[0];
  if (!row) throw new NodeNotFound(ident);
  return row;
}

/** A new node's values: its columns, and its chassis by uuid (as the API names it) rather than by id. */
export type NewNode = Omit<Insertable<NodesTable>, 'id' | 'uuid' | 'chassis_id'> & { uuid?: string; chassis_uuid?: string | null };

/**
 * The columns for node field values that are stored under another name: `chassis_uuid` becomes the
 * chassis's row id (`chassis_id`), a 400 naming the field when no chassis has that uuid. The other
 * values pass through. Creates and the conductor's patches both write through it.
 */
export async function nodeColumns<T extends { chassis_uuid?: string | null }>(store: Store, values: T): Promise<Omit<T, 'chassis_uuid'> & { chassis_id?: number | null }> {
  const { chassis_uuid: chassisUuid, ...rest } = values;
  if (chassisUuid === undefined) return rest;
  return { ...rest, chassis_id: await chassisIdForNode(store, chassisUuid) };
}

/**
 * Inserts a node; duplicate uuid, name or instance uuid → `Conflict` naming the value, a chassis
 * that is not there (or went meanwhile) → 400 naming `chassis_uuid`.
 */
export async function createNode(store: Store, values: NewNode): Promise<NodeRow> {
  const uuid = (values.uuid ?? randomUUID()).toLowerCase();
  const columns = await nodeColumns(store, values);
  try {
    const row: NodeRow = await store.db
      .insertInto('nodes')
      .values({ ...columns, uuid, created_at: store.sqlNow(), updated_at: store.sqlNow() })
      .returningAll()
      .executeTakeFirstOrThrow();
    row.chassis_uuid = values.chassis_uuid?.toLowerCase() ?? null;
    return row;
  } catch (err) {
    if (isForeignKeyViolation(err) && values.chassis_uuid) throw unknownChassisOfNode(values.chassis_uuid);
    throw uniqueViolation(err, [
      ['name', `a node named ${JSON.stringify(values.name)} already exists`],
      ['instance_uuid', `a node with instance_uuid ${values.instance_uuid} already exists`],
      ['uuid', `a node with uuid ${uuid} already exists`],
    ]);
  }
}

/**
 * Maps a unique violation of either engine to a `Conflict` with the message of the first column it
 * names; other errors pass through unchanged.
 */
export function uniqueViolation(err: unknown, columns: ReadonlyArray<readonly [string, string]>): unknown {
  const violation = engineUniqueViolation(err);
  if (!violation) return err;
  for (const [column, text] of columns) {
    if (violation.columns.includes(column)) return new Conflict(text);
  }
  return new Conflict(columns[0]?.[1] ?? 'duplicate value');
}
