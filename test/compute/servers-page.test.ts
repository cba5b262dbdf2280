/**
 * `listServersPage` and `countServers` on both engines, with three cells: cell0 and cell1 share the
 * API database (as the embedded default keeps them), cell2 has its own. Servers interleaved by
 * created_at across the cells come back merged in (created_at, uuid) order, a page continues
 * exactly after its marker, equal times are broken by uuid, and a shared database shows each server
 * under its own cell only.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CellStores, createCell, mapCell0 } from '../../src/cells/index.js';
import type { CellMapping } from '../../src/cells/index.js';
import type { ComputeStores } from '../../src/cells/compute-stores.js';
import { InvalidParameter } from '../../src/common/errors.js';
import { MarkerNotFound, countServers, listServersPage } from '../../src/compute/servers.js';
import type { Store } from '../../src/db/connect.js';
import { createTestDatabase, testEngines, useMigratedDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();

for (const engine of engines) {
  describe(`servers paged across cells on ${engine}`, () => {
    const db = useMigratedDatabase(engine);
    let other: TestDatabase;
    let cells: CellStores;
    let stores: ComputeStores;
    let cell0: CellMapping;
    let cell1: CellMapping;
    let cell2: CellMapping;
    let cell2Store: Store;

    beforeEach(async () => {
      other = await createTestDatabase(engine);
      cells = new CellStores();
      cells.share(db.url, db.store);
      cell0 = await mapCell0(db.store, cells, db.url);
      cell1 = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
      cell2 = await createCell(db.store, cells, { name: 'cell2', databaseConnection: other.url });
      cell2Store = await cells.get(cell2);
      stores = { api: db.store, cells };
    });
    afterEach(async () => {
      await cells.close();
      await other.drop();
    });

    /** An instance row in `cell`'s database, mapped to `cell` (or to `mappedTo`, or to none). */
    async function addServer(cell: CellMapping, id: string, created: string, mappedTo: CellMapping | null = cell): Promise<void> {
      const store = cell === cell2 ? cell2Store : db.store;
      await store.db.insertInto('instances').values({ uuid: id, display_name: `srv-${id.slice(-4)}`, vm_state: 'active', created_at: created }).execute();
      if (mappedTo !== null) await db.store.db.insertInto('instance_mappings').values({ instance_uuid: id, cell_id: mappedTo.id }).execute();
    }

    /** Every page of `limit` servers, following `next`: the uuids of each page (a loop fails). */
    async function walk(limit: number): Promise<string[][]> {
      const pages: string[][] = [];
      let marker: string | undefined;
      while (pages.length < 20) {
        const page = await listServersPage(stores, { limit, ...(marker !== undefined ? { marker } : {}) });
        pages.push(page.servers.map((s) => s.id));
        if (page.next === null) return pages;
        expect(page.next).toBe(page.servers.at(-1)!.id);
        marker = page.next;
      }
      throw new Error(`no last page after 20: ${JSON.stringify(pages.slice(0, 5))}…`);
    }

    it('merges the cells oldest first, cuts each page to the limit and says whether another follows', async () => {
      // cell1 holds the even seconds, cell2 the odd ones; uuids run against time, so the order is time's.
      for (let i = 0; i < 7; i++) await addServer(i % 2 === 0 ? cell1 : cell2, uuid(100 - i), at(i));
      const inOrder = Array.from({ length: 7 }, (_, i) => uuid(100 - i));

      const all = await listServersPage(stores, { limit: 7 });
      expect(all.servers.map((s) => s.id)).toEqual(inOrder);
      expect(all.servers.map((s) => s.cell)).toEqual(['cell1', 'cell2', 'cell1', 'cell2', 'cell1', 'cell2', 'cell1']);
      expect(all.servers[1]).toMatchObject({ name: 'srv-0063', status: 'ACTIVE', created_at: at(1) });
      expect(all.next).toBeNull();
      expect((await listServersPage(stores, { limit: 6 })).next).toBe(inOrder[5]);

      expect(await walk(2)).toEqual([inOrder.slice(0, 2), inOrder.slice(2, 4), inOrder.slice(4, 6), inOrder.slice(6)]);
      expect(await walk(3)).toEqual([inOrder.slice(0, 3), inOrder.slice(3, 6), inOrder.slice(6)]);
      expect(await countServers(stores)).toBe(7);
    });

    it('continues exactly after the marker, whichever cell holds it', async () => {
      for (let i = 0; i < 7; i++) await addServer(i % 2 === 0 ? cell1 : cell2, uuid(100 - i), at(i));
      // The marker in cell2 (second 3), then in cell1 (second 4); upper case is the same server.
      expect((await listServersPage(stores, { limit: 2, marker: uuid(97) })).servers.map((s) => s.id)).toEqual([uuid(96), uuid(95)]);
      expect((await listServersPage(stores, { limit: 2, marker: uuid(96).toUpperCase() })).servers.map((s) => s.id)).toEqual([uuid(95), uuid(94)]);
      // Servers created since, before and after the marker: only the later ones join the next pages.
      await addServer(cell2, uuid(1), at(2));
      await addServer(cell1, uuid(2), at(30));
      const after = await listServersPage(stores, { limit: 10, marker: uuid(96) });
      expect(after.servers.map((s) => s.id)).toEqual([uuid(95), uuid(94), uuid(2)]);
      expect(after.next).toBeNull();
      // The last server as marker: an empty page, no next.
      expect(await listServersPage(stores, { limit: 10, marker: uuid(2) })).toEqual({ servers: [], next: null });
    });

    it('breaks equal created_at by uuid, across the cells', async () => {
      const same = at(5);
      await addServer(cell2, uuid(3), same);
      await addServer(cell1, uuid(4), same);
      await addServer(cell2, uuid(1), same);
      await addServer(cell1, uuid(2), same);
      await addServer(cell1, uuid(9), at(4));
      await addServer(cell2, uuid(0), at(6));
      const order = [uuid(9), uuid(1), uuid(2), uuid(3), uuid(4), uuid(0)];
      expect(await walk(1)).toEqual(order.map((id) => [id]));
      expect(await walk(4)).toEqual([order.slice(0, 4), order.slice(4)]);
      expect((await listServersPage(stores, { limit: 2, marker: uuid(2) })).servers.map((s) => s.id)).toEqual([uuid(3), uuid(4)]);
    });

    if (engine === 'postgres') {
      it('keeps PostgreSQL\'s microseconds: servers within one millisecond page in their order, none twice', async () => {
        await addServer(cell1, uuid(7), '2026-01-01T00:00:00.000200Z');
        await addServer(cell2, uuid(8), '2026-01-01T00:00:00.000100Z');
        await addServer(cell1, uuid(6), '2026-01-01T00:00:00.000300Z');
        await addServer(cell2, uuid(5), '2026-01-01T00:00:00.000300Z');
        expect(await walk(1)).toEqual([[uuid(8)], [uuid(7)], [uuid(5)], [uuid(6)]]);
      });
    }

    it('shows a server of a shared database under its own cell only, and counts each database once', async () => {
      // cell0 (failed builds) and cell1 keep their rows in one database; rows not mapped (yet) are
      // shown by no cell, and the page is filled from the rows after them.
      await addServer(cell0, uuid(10), at(1));
      for (let i = 0; i < 5; i++) await addServer(cell1, uuid(20 + i), at(2), null);
      await addServer(cell1, uuid(11), at(3));
      await addServer(cell2, uuid(12), at(4));
      await addServer(cell1, uuid(13), at(5));

      const page = await listServersPage(stores, { limit: 2 });
      expect(page.servers.map((s) => [s.id, s.cell])).toEqual([[uuid(10), 'cell0'], [uuid(11), 'cell1']]);
      expect(page.next).toBe(uuid(11));
      const rest = await listServersPage(stores, { limit: 2, marker: page.next! });
      expect(rest.servers.map((s) => [s.id, s.cell])).toEqual([[uuid(12), 'cell2'], [uuid(13), 'cell1']]);
      expect(rest.next).toBeNull();
      // One count(*) per database: the shared one is not counted twice (the unmapped rows count).
      expect(await countServers(stores)).toBe(4 + 5);
    });

    it('refuses a marker that is no server and a limit below 1', async () => {
      await addServer(cell1, uuid(1), at(1));
      // Not mapped: the listing does not show it, so it is no marker either.
      await addServer(cell1, uuid(2), at(2), null);
      for (const marker of [uuid(404), uuid(2), 'not-a-uuid']) {
        const refused = listServersPage(stores, { limit: 1, marker });
        await expect(refused).rejects.toThrow(MarkerNotFound);
        await expect(refused).rejects.toThrow(`marker [${marker}] not found`);
      }
      await expect(listServersPage(stores, { limit: 0 })).rejects.toThrow(InvalidParameter);
      await expect(listServersPage(stores, { limit: 1.5 })).rejects.toThrow(/^limit: /);
    });
  });
}
