/**
 * Reading and writing node rows: lists with filters, sorting and keyset pagination, lookups by uuid
 * or name, creation with the uniqueness rules turned into `Conflict` errors. Changing an existing
 * node goes through a lock-holding task (`cluster/task.ts`), never through here.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { CompiledQuery, Insertable } from 'kysely';
import { Conflict, InvalidParameter, NodeNotFound } from '../common/errors.js';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Store } from '../db/connect.js';
import { uniqueViolation as engineUniqueViolation } from '../db/errors.js';
import type { NodeRow, NodesTable } from '../db/schema.js';
import { NODE_FIELDS } from './node-fields.js';

export type { NodeRow };

/** Columns a list may be sorted by: every non-JSON column the API shows, as in Ironic. */
export type NodeSortKey = keyof NodeRow & string;
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

/** One page of nodes, in order; `limit` rows at most. */
export async function listNodes(store: Store, query: NodeListQuery): Promise<NodeRow[]> {
  const { filters, sortKey, sortDir } = query;
  let q = query.columns
    ? (store.db.selectFrom('nodes').select(['nodes.id', ...query.columns.map((c) => `nodes.${c}` as const)]) as unknown as ReturnType<typeof allColumns>)
    : allColumns(store);
  if (filters.provision_state !== undefined) q = q.where('provision_state', '=', filters.provision_state);
  if (filters.driver !== undefined) q = q.where('driver', '=', filters.driver);
  if (filters.conductor_group !== undefined) q = q.where('conductor_group', '=', filters.conductor_group.toLowerCase());
  if (filters.resource_class !== undefined) q = q.where('resource_class', '=', filters.resource_class);
  if (filters.maintenance !== undefined) q = q.where('maintenance', '=', filters.maintenance);
  if (filters.instance_uuid !== undefined) q = q.where('instance_uuid', '=', filters.instance_uuid);
  if (filters.associated !== undefined) q = q.where('instance_uuid', filters.associated ? 'is not' : 'is', null);
  if (filters.fault !== undefined) q = q.where(sql<boolean>`1 = 0`);

  // Keyset pagination on (sort key, id): stable under inserts, and an index walk instead of OFFSET.
  // NULLs sort as the lowest value, and the sort expression says so on both engines.
  const key = sql.ref(`nodes.${sortKey}`);
  const sortExpr = sortKey === 'maintenance' ? key : sql`coalesce(${key}, ${nullFill(sortKey)})`;
  if (query.marker !== undefined) {
    const marker = await store.db.selectFrom('nodes').select(['id', sortKey]).where('uuid', '=', query.marker).executeTakeFirst();
    if (!marker) throw new InvalidParameter(`marker: no node with uuid ${query.marker}`);
    const raw = (marker as Record<string, unknown>)[sortKey];
    const value = raw ?? nullFill(sortKey);
    const cmp = sortDir === 'asc' ? sql.raw('>') : sql.raw('<');
    q = q.where(sql<boolean>`(${sortExpr} ${cmp} ${value} or (${sortExpr} = ${value} and nodes.id ${cmp} ${marker.id}))`);
  }
  return q.orderBy(sortExpr, sortDir).orderBy('nodes.id', sortDir).limit(query.limit).execute();
}

function allColumns(store: Store) {
  return store.db.selectFrom('nodes').selectAll();
}

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
    const build = (c: 'uuid' | 'name') => store.db.selectFrom('nodes').selectAll().where(c, '=', '').compile();
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

export type NewNode = Omit<Insertable<NodesTable>, 'id' | 'uuid'> & { uuid?: string };

/** Inserts a node; duplicate uuid, name or instance uuid → `Conflict` naming the value. */
export async function createNode(store: Store, values: NewNode): Promise<NodeRow> {
  const uuid = (values.uuid ?? randomUUID()).toLowerCase();
  try {
    return await store.db
      .insertInto('nodes')
      .values({ ...values, uuid, created_at: store.sqlNow(), updated_at: store.sqlNow() })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
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
