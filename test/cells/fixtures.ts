/** Rows and counters for the cell tests. */
import { randomUUID } from 'node:crypto';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { COMPUTE_BINARY } from '../../src/cells/index.js';
import type { Store } from '../../src/db/connect.js';

/** A compute service row (unmapped). */
export async function addService(store: Store, host: string, binary = COMPUTE_BINARY): Promise<void> {
  await store.db.insertInto('services').values({ uuid: randomUUID(), host, binary }).execute();
}

/** A compute node row on `host` (unmapped); returns its uuid. */
export async function addNode(store: Store, host: string): Promise<string> {
  const uuid = randomUUID();
  await store.db.insertInto('compute_nodes').values({ uuid, host, hypervisor_hostname: uuid }).execute();
  return uuid;
}

export async function mappedBits(store: Store, table: 'services' | 'compute_nodes'): Promise<Record<string, boolean[]>> {
  const rows = await store.db.selectFrom(table).select(['host', 'mapped']).orderBy('id').execute();
  const out: Record<string, boolean[]> = {};
  for (const r of rows) (out[r.host] ??= []).push(r.mapped);
  return out;
}

/** Counts the statements a store executes. */
export function countStatements(store: Store): { store: Store; count(): number; reset(): void } {
  let n = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args: PluginTransformQueryArgs): RootOperationNode => args.node,
    transformResult: (args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> => {
      n++;
      return Promise.resolve(args.result);
    },
  };
  return {
    store: { ...store, db: store.db.withPlugin(plugin) },
    count: () => n,
    reset: () => {
      n = 0;
    },
  };
}
