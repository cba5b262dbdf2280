/** The shards nodes are in (Ironic's API 1.82 `GET /v1/shards`): each shard with its number of nodes. */
import type { Store } from '../db/connect.js';

/** One shard and how many nodes it has; `name` null for the nodes without a shard. */
export interface ShardCount {
  name: string | null;
  count: number;
}

/** Every shard with its node count, most nodes first (then by name). One grouped query on the shard index. */
export async function listShards(store: Store): Promise<ShardCount[]> {
  const rows = await store.db
    .selectFrom('nodes')
    .select((eb) => ['shard', eb.fn.countAll<number | string | bigint>().as('count')])
    .groupBy('shard')
    .execute();
  return rows
    .map((r) => ({ name: r.shard, count: Number(r.count) }))
    .sort((a, b) => b.count - a.count || (a.name ?? '').localeCompare(b.name ?? ''));
}
