/**
 * Cell migration 0003: on PostgreSQL no index mentions `mapped` and the tables keep room on each
 * page, so discovery sets the bits in place (HOT updates); on SQLite nothing changes. Applied to a
 * cell database that already holds rows, it keeps them and discovery goes on working.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CellStores, createCell, discoverHosts } from '../../src/cells/index.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { cellMappedHotUpdates } from '../../src/db/migrations/cell-0003-mapped-hot-updates.js';
import { cellServiceInstanceToken } from '../../src/db/migrations/cell-0004-service-instance-token.js';
import { cellInstanceOrder } from '../../src/db/migrations/cell-0005-instance-order.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { addNode, addService, mappedBits } from './fixtures.js';

const engines = await testEngines();

/** Definitions of the indexes on a table. */
async function indexesOf(store: Store, table: string): Promise<string[]> {
  if (store.engine === 'sqlite') {
    const rows = await sql<{ sql: string | null }>`select sql from sqlite_master where type = 'index' and tbl_name = ${table}`.execute(store.db);
    return rows.rows.map((r) => r.sql ?? '(automatic)');
  }
  const rows = await sql<{ indexdef: string }>`select indexdef from pg_indexes where schemaname = current_schema() and tablename = ${table}`.execute(store.db);
  return rows.rows.map((r) => r.indexdef);
}

async function fillfactor(store: Store, table: string): Promise<string | null> {
  const rows = await sql<{ options: string[] | null }>`select reloptions as options from pg_class where oid = cast(${table} as regclass)`.execute(store.db);
  return rows.rows[0]?.options?.find((o) => o.startsWith('fillfactor='))?.slice('fillfactor='.length) ?? null;
}

for (const engine of engines) {
  describe(`cell migration 0003_mapped_hot_updates on ${engine}`, () => {
    const db = useMigratedDatabase(engine);
    let cells: CellStores;
    beforeEach(async () => {
      cells = new CellStores();
      cells.share(db.url, db.store);
      await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
    });
    afterEach(async () => {
      await cells.close();
    });

    const mentionsMapped = async (table: string) => (await indexesOf(db.store, table)).filter((d) => d.includes('mapped'));

    it(engine === 'postgres' ? 'leaves no index on `mapped` and half of each page free' : 'keeps the `mapped` indexes', async () => {
      if (engine === 'postgres') {
        expect(await mentionsMapped('compute_nodes')).toEqual([]);
        expect(await mentionsMapped('services')).toEqual([]);
        expect(await fillfactor(db.store, 'compute_nodes')).toBe('50');
        expect(await fillfactor(db.store, 'services')).toBe('50');
      } else {
        expect(await mentionsMapped('compute_nodes')).toHaveLength(1);
        expect(await mentionsMapped('services')).toHaveLength(1);
      }
    });

    it('applies to a cell database that holds rows, keeps them, and discovery still maps and marks', async () => {
      // Back to the schema of 0002, with rows in it, as an existing deployment would be (the later
      // migrations are undone first, newest first, as a downgrade would).
      await cellInstanceOrder().down!(db.store.db);
      await cellServiceInstanceToken().down!(db.store.db);
      await cellMappedHotUpdates(engine).down!(db.store.db);
      await sql`delete from ironring_migrations_cell where name in (${'0003_mapped_hot_updates'}, ${'0004_service_instance_token'}, ${'0005_instance_order'})`.execute(db.store.db);
      for (const host of ['c1', 'c2']) await addService(db.store, host);
      for (const host of ['c1', 'c1', 'c2', 'c3']) await addNode(db.store, host);
      await db.store.db.updateTable('compute_nodes').set({ mapped: true }).where('host', '=', 'c3').execute();
      if (engine === 'postgres') expect(await mentionsMapped('compute_nodes')).toHaveLength(1);

      const reports = await migrateDatabase(db.store, ['cell']);
      expect(reports).toEqual([{ set: 'cell', applied: ['0003_mapped_hot_updates', '0004_service_instance_token', '0005_instance_order'] }]);
      expect(await mappedBits(db.store, 'compute_nodes')).toEqual({ c1: [false, false], c2: [false], c3: [true] });
      expect(await mappedBits(db.store, 'services')).toEqual({ c1: [false], c2: [false] });

      const result = await discoverHosts(db.store, cells, { byService: true });
      expect(result.mapped.map((m) => m.host)).toEqual(['c1', 'c2']);
      expect(await mappedBits(db.store, 'compute_nodes')).toEqual({ c1: [true, true], c2: [true], c3: [true] });
      expect(await mappedBits(db.store, 'services')).toEqual({ c1: [true], c2: [true] });
      const again = await discoverHosts(db.store, cells, { byService: true });
      expect(again.mapped).toEqual([]);
    });

    if (engine === 'postgres') {
      it('sets the bits in place: every marked row stays on its page', async () => {
        const hosts = Array.from({ length: 30 }, (_, i) => `h${String(i).padStart(2, '0')}`);
        await db.store.db.insertInto('services').values(hosts.map((host, i) => ({ uuid: `s-${i}`, host, binary: 'ironring-compute' }))).execute();
        await db.store.db
          .insertInto('compute_nodes')
          .values(Array.from({ length: 600 }, (_, i) => ({ uuid: `n-${i}`, host: hosts[i % hosts.length]!, hypervisor_hostname: `n-${i}` })))
          .execute();
        // With no index on `mapped`, a new row version on the same page is a HOT update.
        const pages = async (table: string) =>
          (await sql<{ uuid: string; page: string }>`select uuid, split_part(trim(both '()' from ctid::text), ',', 1) as page from ${sql.table(table)} order by uuid`.execute(db.store.db))
            .rows;
        const before = { nodes: await pages('compute_nodes'), services: await pages('services') };
        expect(new Set(before.nodes.map((r) => r.page)).size).toBeGreaterThan(1);

        const result = await discoverHosts(db.store, cells, { byService: true });
        expect(result.mapped).toHaveLength(30);
        expect(await pages('compute_nodes')).toEqual(before.nodes);
        expect(await pages('services')).toEqual(before.services);
        expect(await db.store.db.selectFrom('compute_nodes').select('id').where('mapped', '=', false).execute()).toEqual([]);
      });
    }
  });
}
