/**
 * Keyset pagination, the way the API's lists page (Ironic's `limit` and `marker`): rows in (sort
 * key, id) order, one direction for both, and the next page starting after the marker row's (sort
 * key, id). Stable under inserts, and an index walk rather than an OFFSET. A nullable sort key
 * sorts NULL as the lowest value, said the same way on both engines. The node list has its own,
 * tuned, form of the same rule (`nodes/node-store.ts`).
 */
import { sql } from 'kysely';
import type { RawBuilder, SqlBool } from 'kysely';
import { InvalidParameter } from '../common/errors.js';
import type { Store } from './connect.js';

export interface KeysetQuery {
  /** The table listed: its rows have an `id` and a `uuid`. */
  table: 'ports' | 'chassis' | 'portgroups' | 'volume_connectors' | 'volume_targets' | 'deploy_templates' | 'allocations';
  /** A column of the table, checked by the caller against its sort keys. */
  sortKey: string;
  sortDir: 'asc' | 'desc';
  /** Uuid of the last row of the previous page. */
  marker?: string;
  /** For a nullable sort key: the value NULL sorts as (one below every stored value). */
  nullAs?: string;
  /** The resource's name in the 400 for a marker that names no row (`port`, `chassis`, `portgroup`). */
  noun: string;
}

export interface KeysetPage {
  /** What to order by, then by `<table>.id` in the same direction. */
  sortExpr: RawBuilder<unknown>;
  /** The condition that starts the page after the marker; null without one. */
  after: RawBuilder<SqlBool> | null;
}

/** The order and the start of one page; 400 naming `marker` when it names no row. */
export async function keysetPage(store: Store, query: KeysetQuery): Promise<KeysetPage> {
  const { table, sortKey, nullAs } = query;
  const sortOf = (alias: string) => {
    const key = sql.ref(`${alias}.${sortKey}`);
    return nullAs === undefined ? key : sql`coalesce(${key}, ${nullAs})`;
  };
  const sortExpr = sortOf(table);
  if (query.marker === undefined) return { sortExpr, after: null };
  const { rows } = await sql<{ id: number }>`select id from ${sql.table(table)} where uuid = ${query.marker}`.execute(store.db);
  const marker = rows[0];
  if (!marker) throw new InvalidParameter(`marker: no ${query.noun} with uuid ${query.marker}`);
  // The marker's sort value is read by the query itself, as stored: a PostgreSQL timestamp holds
  // microseconds, which a round trip through a JavaScript Date would cut to milliseconds.
  const value = sql`(select ${sortOf('marker')} from ${sql.table(table)} as marker where marker.id = ${marker.id})`;
  const cmp = sql.raw(query.sortDir === 'asc' ? '>' : '<');
  const id = sql.ref(`${table}.id`);
  return { sortExpr, after: sql<SqlBool>`(${sortExpr} ${cmp} ${value} or (${sortExpr} = ${value} and ${id} ${cmp} ${marker.id}))` };
}
