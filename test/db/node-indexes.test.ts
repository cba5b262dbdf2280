/**
 * The query plans behind a node list: the default order (created_at, id) is read from its index
 * rather than sorted, a marker page starts inside that index, and the partial indexes (migration
 * 0018: `where … is not null`) still answer lookups by value on both engines.
 */
import { CompiledQuery, sql } from 'kysely';
import type { KyselyPlugin, RawBuilder } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/connect.js';
import { listNodes } from '../../src/nodes/node-store.js';
import type { NodeListQuery } from '../../src/nodes/node-store.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

/** The plan's text for a query: SQLite's EXPLAIN QUERY PLAN details, PostgreSQL's EXPLAIN lines. */
async function plan(store: Store, query: CompiledQuery | RawBuilder<unknown>): Promise<string> {
  const { sql: text, parameters } = 'compile' in query ? query.compile(store.db) : query;
  if (store.engine === 'sqlite') {
    const { rows } = await store.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${text}`, [...parameters]));
    return rows.map((r) => r.detail).join('\n');
  }
  // The test tables are small, and a sequential scan would win on cost: only usability is asked.
  return store.db.connection().execute(async (conn) => {
    await sql`set enable_seqscan = off`.execute(conn);
    await sql`set enable_sort = off`.execute(conn);
    try {
      const { rows } = await conn.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${text}`, [...parameters]));
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      await sql`reset enable_seqscan`.execute(conn);
      await sql`reset enable_sort`.execute(conn);
    }
  });
}

/** The plan of the page query `listNodes` sends for `query` (its SQL caught on the way out, then explained). */
async function listPlan(store: Store, query: NodeListQuery): Promise<string> {
  const caught: CompiledQuery[] = [];
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      const compiled = store.db.getExecutor().compileQuery(args.node, args.queryId);
      if (/order by/i.test(compiled.sql)) caught.push(compiled);
      return args.node;
    },
    transformResult: (args) => Promise.resolve(args.result),
  };
  await listNodes({ ...store, db: store.db.withPlugin(plugin) }, query);
  const page = caught.at(-1)!;
  return plan(store, page);
}

describe.each(engines)('node indexes on %s', (engine) => {
  const db = useMigratedDatabase(engine);

  it.each([
    ['reservation', sql`select id from nodes where reservation = ${'conductor-1'}`],
    ['chassis_id', sql`select id from nodes where chassis_id = ${7}`],
    ['owner', sql`select id from nodes where owner = ${'project-a'}`],
    ['allocation_id', sql`select id from nodes where allocation_id = ${3}`],
    ['lessee', sql`select id from nodes where lessee = ${'project-b'}`],
    ['shard', sql`select id from nodes where shard in (${'s1'}, ${'s2'})`],
  ])('a lookup by %s uses its partial index', async (column, query) => {
    expect(await plan(db.store, query)).toContain(`nodes_${column}_idx`);
  });

  it('the partial indexes hold only rows that have a value', async () => {
    const { store } = db;
    if (store.engine === 'sqlite') {
      const { rows } = await sql<{ sql: string }>`select sql from sqlite_master where name = 'nodes_owner_idx'`.execute(store.db);
      expect(rows[0]!.sql).toMatch(/where "owner" is not null/i);
    } else {
      const { rows } = await sql<{ indexdef: string }>`select indexdef from pg_indexes where indexname = 'nodes_owner_idx' and schemaname = current_schema()`.execute(store.db);
      expect(rows[0]!.indexdef).toMatch(/WHERE \(owner IS NOT NULL\)/);
    }
  });

  it('the default order and its marker pages read the (created_at, id) index instead of sorting', async () => {
    const { store } = db;
    for (let i = 0; i < 3; i++) {
      await store.db.insertInto('nodes').values({ uuid: `00000000-0000-4000-8000-00000000000${i}`, driver: 'fake-hardware', provision_state: 'enroll', created_at: store.sqlNow(), updated_at: store.sqlNow() }).execute();
    }
    for (const sortDir of ['asc', 'desc'] as const) {
      const query = { limit: 1000, sortKey: 'created_at' as const, sortDir, filters: {} };
      const first = await listPlan(store, query);
      expect(first).toContain('nodes_created_at_id_idx');
      expect(first).not.toMatch(/TEMP B-TREE|Sort/);
      const next = await listPlan(store, { ...query, marker: '00000000-0000-4000-8000-000000000001' });
      expect(next).toContain('nodes_created_at_id_idx');
      expect(next).not.toMatch(/TEMP B-TREE|Sort/);
    }
  });
});
