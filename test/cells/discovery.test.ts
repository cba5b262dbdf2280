import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CellNotFound, CellStores, createCell, discoverHosts, listHosts, mapCell0 } from '../../src/cells/index.js';
import type { CellMapping } from '../../src/cells/index.js';
import { createTestDatabase, testEngines, useMigratedDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { addNode, addService, countStatements, mappedBits } from './fixtures.js';

const engines = await testEngines();

for (const engine of engines) {
  describe(`host discovery on ${engine}`, () => {
    const db = useMigratedDatabase(engine);
    let cells: CellStores;
    let cell1: CellMapping;
    const extraDbs: TestDatabase[] = [];
    beforeEach(async () => {
      cells = new CellStores();
      cells.share(db.url, db.store);
      await mapCell0(db.store, cells, db.url);
      cell1 = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
    });
    afterEach(async () => {
      await cells.close();
      await Promise.all(extraDbs.splice(0).map((d) => d.drop()));
    });
    const secondCell = async (name = 'cell2') => {
      const d = await createTestDatabase(engine);
      extraDbs.push(d);
      const cell = await createCell(db.store, cells, { name, databaseConnection: d.url });
      return { cell, store: await cells.get(cell) };
    };
    const hosts = async () => (await listHosts(db.store)).map((h) => `${h.host}@${h.cellName}`);

    it('maps the hosts of unmapped compute nodes and marks every node of those hosts', async () => {
      await addNode(db.store, 'c1');
      await addNode(db.store, 'c1');
      await addNode(db.store, 'c2');
      await addService(db.store, 'c3');
      const result = await discoverHosts(db.store, cells, { byService: false });
      expect(result.mapped).toEqual([
        { host: 'c1', cellUuid: cell1.uuid, cellName: 'cell1' },
        { host: 'c2', cellUuid: cell1.uuid, cellName: 'cell1' },
      ]);
      expect(result.cellsChecked).toBe(1);
      expect(result.conflicts).toEqual([]);
      expect(await hosts()).toEqual(['c1@cell1', 'c2@cell1']);
      expect(await mappedBits(db.store, 'compute_nodes')).toEqual({ c1: [true, true], c2: [true] });
      // Without --by-service a service with no nodes stays unmapped, as in Nova.
      expect(await mappedBits(db.store, 'services')).toEqual({ c3: [false] });
    });

    it('by service maps every compute service, even one with zero nodes, and only compute services', async () => {
      await addService(db.store, 'c1');
      await addService(db.store, 'c2');
      await addService(db.store, 'c3');
      await addService(db.store, 'sched1', 'ironring-scheduler');
      const result = await discoverHosts(db.store, cells, { byService: true });
      expect(result.mapped.map((m) => m.host)).toEqual(['c1', 'c2', 'c3']);
      expect(await mappedBits(db.store, 'services')).toEqual({ c1: [true], c2: [true], c3: [true], sched1: [false] });
    });

    it('day zero: services mapped before any node exists keep every later node reachable, wherever the ring puts it', async () => {
      for (const h of ['c1', 'c2', 'c3']) await addService(db.store, h);
      await discoverHosts(db.store, cells, { byService: true });
      // Nodes enrolled later, and one that a rebalance moved to another service with `mapped` still
      // set (Nova's race): every host that holds a node already has its mapping.
      const uuid = await addNode(db.store, 'c1');
      await db.store.db.updateTable('compute_nodes').set({ mapped: true }).where('uuid', '=', uuid).execute();
      await db.store.db.updateTable('compute_nodes').set({ host: 'c3' }).where('uuid', '=', uuid).execute();
      await addNode(db.store, 'c2');
      const nodes = await db.store.db.selectFrom('compute_nodes').select('host').execute();
      for (const n of nodes) expect(await hosts()).toContain(`${n.host}@cell1`);
    });

    it('costs one query per cell when nothing is new (plus the cell list)', async () => {
      await addService(db.store, 'c1');
      await addNode(db.store, 'c1');
      await addNode(db.store, 'c2');
      await discoverHosts(db.store, cells, { byService: true });

      const api = countStatements(db.store);
      const cellStore = countStatements(db.store);
      const counting = new CellStores();
      counting.share(db.url, cellStore.store);
      try {
        for (const byService of [true, false]) {
          api.reset();
          cellStore.reset();
          const again = await discoverHosts(api.store, counting, { byService });
          expect(again.mapped).toEqual([]);
          expect(cellStore.count()).toBe(1);
          expect(api.count()).toBe(1);
        }
      } finally {
        await counting.close();
      }
    });

    it('uses a fixed number of statements whatever the number of hosts (set-based, no per-host round trips)', async () => {
      const api = countStatements(db.store);
      const cellStore = countStatements(db.store);
      const counting = new CellStores();
      counting.share(db.url, cellStore.store);
      try {
        await db.store.db
          .insertInto('services')
          .values(Array.from({ length: 300 }, (_, i) => ({ uuid: `s-${i}`, host: `h${String(i).padStart(3, '0')}`, binary: 'ironring-compute' })))
          .execute();
        await db.store.db
          .insertInto('compute_nodes')
          .values(Array.from({ length: 900 }, (_, i) => ({ uuid: `n-${i}`, host: `h${String(i % 300).padStart(3, '0')}`, hypervisor_hostname: `n-${i}` })))
          .execute();
        const result = await discoverHosts(api.store, counting, { byService: true });
        expect(result.mapped).toHaveLength(300);
        expect(api.count()).toBeLessThanOrEqual(3);
        expect(cellStore.count()).toBeLessThanOrEqual(3);
        expect(await db.store.db.selectFrom('compute_nodes').select('id').where('mapped', '=', false).execute()).toEqual([]);
      } finally {
        await counting.close();
      }
    });

    it('skips cell0 and searches only the named cell with `cell`', async () => {
      const { cell: cell2, store: store2 } = await secondCell();
      await addService(db.store, 'a1');
      await addService(store2, 'b1');
      const lines: string[] = [];
      const only2 = await discoverHosts(db.store, cells, { byService: true, cell: cell2.name, onStatus: (l) => lines.push(l) });
      expect(only2.mapped).toEqual([{ host: 'b1', cellUuid: cell2.uuid, cellName: 'cell2' }]);
      expect(only2.cellsChecked).toBe(1);
      const all = await discoverHosts(db.store, cells, { byService: true, onStatus: (l) => lines.push(l) });
      expect(all.mapped.map((m) => m.host)).toEqual(['a1']);
      expect(all.cellsChecked).toBe(2);
      expect(lines).toContain('Found 3 cell mappings.');
      expect(lines).toContain('Skipping cell0 since it does not contain hosts.');
      expect(lines).toContain(`Getting computes from cell 'cell1': ${cell1.uuid}`);
      expect(lines).toContain(`Creating host mapping for service host 'a1': ${cell1.uuid}`);
      expect(lines).toContain(`Found 1 unmapped computes in cell: ${cell1.uuid}`);
      await expect(discoverHosts(db.store, cells, { byService: true, cell: 'nope' })).rejects.toBeInstanceOf(CellNotFound);
    });

    it('treats a mapping another run created meanwhile as done: no error, not reported as new, rows marked', async () => {
      await addService(db.store, 'c1');
      await addNode(db.store, 'c1');
      await addService(db.store, 'c2');
      await db.store.db.insertInto('host_mappings').values({ cell_id: cell1.id, host: 'c1' }).execute();
      const result = await discoverHosts(db.store, cells, { byService: true });
      expect(result.mapped.map((m) => m.host)).toEqual(['c2']);
      expect(result.conflicts).toEqual([]);
      expect(await mappedBits(db.store, 'services')).toEqual({ c1: [true], c2: [true] });
      expect(await mappedBits(db.store, 'compute_nodes')).toEqual({ c1: [true] });
    });

    it('reports a host already mapped to another cell, naming both, and still maps the other hosts', async () => {
      const { cell: cell2, store: store2 } = await secondCell();
      await addService(store2, 'dup');
      await discoverHosts(db.store, cells, { byService: true, cell: 'cell2' });
      await addService(db.store, 'dup');
      await addNode(db.store, 'dup');
      await addService(db.store, 'fine');
      const result = await discoverHosts(db.store, cells, { byService: true });
      expect(result.mapped.map((m) => m.host)).toEqual(['fine']);
      expect(result.conflicts).toEqual([
        { host: 'dup', cellUuid: cell1.uuid, cellName: 'cell1', mappedCellUuid: cell2.uuid, mappedCellName: 'cell2' },
      ]);
      expect(await hosts()).toEqual(['dup@cell2', 'fine@cell1']);
      // Left unmarked in cell1, so it is reported again until an operator resolves it.
      expect(await mappedBits(db.store, 'services')).toEqual({ dup: [false], fine: [true] });
      expect((await discoverHosts(db.store, cells, { byService: true })).conflicts).toHaveLength(1);
    });

    it('reports a cell whose database does not answer and still searches the others', async () => {
      await db.store.db
        .insertInto('cell_mappings')
        .values({ uuid: '11111111-1111-4111-8111-111111111111', name: 'broken', database_connection: 'sqlite:///nonexistent-dir/x.db' })
        .execute();
      await addService(db.store, 'c1');
      const result = await discoverHosts(db.store, cells, { byService: true });
      expect(result.mapped.map((m) => m.host)).toEqual(['c1']);
      expect(result.failedCells).toEqual([{ cellUuid: '11111111-1111-4111-8111-111111111111', cellName: 'broken', message: expect.stringContaining('does not exist') }]);
    });

    it('maps each host exactly once when five discoveries run at once', async () => {
      for (let i = 0; i < 40; i++) {
        await addService(db.store, `c${String(i).padStart(2, '0')}`);
        if (i % 2 === 0) await addNode(db.store, `c${String(i).padStart(2, '0')}`);
      }
      const runs = await Promise.all(
        Array.from({ length: 5 }, async () => {
          const api = await db.other();
          const own = new CellStores();
          try {
            return await discoverHosts(api, own, { byService: true });
          } finally {
            await own.close();
          }
        }),
      );
      const created = runs.flatMap((r) => r.mapped.map((m) => m.host)).sort();
      expect(created).toHaveLength(40);
      expect(new Set(created).size).toBe(40);
      for (const r of runs) expect(r.conflicts).toEqual([]);
      expect(await listHosts(db.store)).toHaveLength(40);
      expect(await db.store.db.selectFrom('services').select('id').where('mapped', '=', false).execute()).toEqual([]);
    });
  });
}
