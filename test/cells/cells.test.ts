import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CELL0_UUID,
  CellExists,
  CellHasHosts,
  CellHasInstanceMappings,
  CellHasInstances,
  CellNotFound,
  CellStores,
  HostHasInstances,
  HostInOtherCell,
  HostMappingNotFound,
  InvalidCell,
  createCell,
  deleteCell,
  deleteHost,
  discoverHosts,
  findCell,
  hostCell,
  listCells,
  listHosts,
  mapCell0,
} from '../../src/cells/index.js';
import { DatabaseUnavailable } from '../../src/common/errors.js';
import { openDatabase } from '../../src/db/connect.js';
import { requireSchema } from '../../src/db/migrate.js';
import { createTestDatabase, testEngines, useMigratedDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { addNode, addService, mappedBits } from './fixtures.js';

const engines = await testEngines();

for (const engine of engines) {
  describe(`cells on ${engine}`, () => {
    const db = useMigratedDatabase(engine);
    let cells: CellStores;
    const extraDbs: TestDatabase[] = [];
    beforeEach(() => {
      cells = new CellStores();
      cells.share(db.url, db.store);
    });
    afterEach(async () => {
      await cells.close();
      await Promise.all(extraDbs.splice(0).map((d) => d.drop()));
    });
    const freshDatabase = async () => {
      const d = await createTestDatabase(engine);
      extraDbs.push(d);
      return d.url;
    };

    it('maps cell0 with the all-zero uuid, and a second map-cell0 returns it unchanged', async () => {
      const first = await mapCell0(db.store, cells, db.url);
      expect(first).toMatchObject({ uuid: CELL0_UUID, name: 'cell0', databaseConnection: db.url, disabled: false });
      const again = await mapCell0(db.store, cells, await freshDatabase());
      expect(again).toEqual(first);
      expect(await listCells(db.store)).toHaveLength(1);
    });

    it('creates a cell after migrating its own database, and lists cells by name', async () => {
      const url = await freshDatabase();
      const zeta = await createCell(db.store, cells, { name: 'zeta', databaseConnection: url });
      const alpha = await createCell(db.store, cells, { name: 'alpha', databaseConnection: db.url, uuid: 'AAAAAAAA-0000-4000-8000-000000000001' });
      expect(alpha.uuid).toBe('aaaaaaaa-0000-4000-8000-000000000001');
      const check = await openDatabase(url);
      try {
        await expect(requireSchema(check, ['cell'])).resolves.toBeUndefined();
      } finally {
        await check.close();
      }
      expect((await listCells(db.store)).map((c) => c.name)).toEqual(['alpha', 'zeta']);
      expect(await findCell(db.store, 'zeta')).toEqual(zeta);
      expect(await findCell(db.store, zeta.uuid.toUpperCase())).toEqual(zeta);
    });

    it('refuses a duplicate name, uuid or database with CellExists (exit 2), but lets cell0 share a database', async () => {
      await mapCell0(db.store, cells, db.url);
      const one = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
      const other = await freshDatabase();
      const dupName = createCell(db.store, cells, { name: 'cell1', databaseConnection: other });
      await expect(dupName).rejects.toBeInstanceOf(CellExists);
      await expect(dupName).rejects.toMatchObject({ exitCode: 2 });
      await expect(createCell(db.store, cells, { name: 'cell2', databaseConnection: other, uuid: one.uuid })).rejects.toThrow(/already exists/);
      await expect(createCell(db.store, cells, { name: 'cell2', databaseConnection: db.url })).rejects.toThrow(/already uses that database/);
      expect(await listCells(db.store)).toHaveLength(2);
    });

    it('rejects bad names, uuids, URLs and a second cell0 with one-line errors', async () => {
      await expect(createCell(db.store, cells, { name: 'bad name', databaseConnection: db.url })).rejects.toBeInstanceOf(InvalidCell);
      await expect(createCell(db.store, cells, { name: 'c', databaseConnection: db.url, uuid: 'nope' })).rejects.toThrow(/not a uuid/);
      await expect(createCell(db.store, cells, { name: 'c', databaseConnection: 'mysql://x/y' })).rejects.toThrow(/unsupported database/);
      await expect(createCell(db.store, cells, { name: 'c', databaseConnection: db.url, uuid: CELL0_UUID })).rejects.toThrow(/map-cell0/);
      await expect(createCell(db.store, cells, { name: '2a1f0c3e-1111-4111-8111-111111111111', databaseConnection: db.url })).rejects.toThrow(/looks like a uuid/);
      expect(await listCells(db.store)).toEqual([]);
    });

    it('does not record a cell whose database does not answer', async () => {
      const missing = engine === 'sqlite' ? 'sqlite:///nonexistent-dir/cell.db' : 'postgres://postgres@127.0.0.1:1/nothing';
      await expect(createCell(db.store, cells, { name: 'gone', databaseConnection: missing })).rejects.toBeInstanceOf(DatabaseUnavailable);
      expect(await listCells(db.store)).toEqual([]);
    });

    it('finds nothing for an unknown cell and says which (CellNotFound, exit 1)', async () => {
      const err = await findCell(db.store, 'nowhere').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CellNotFound);
      expect(err).toMatchObject({ exitCode: 1, message: expect.stringContaining('"nowhere"') });
    });

    it('tells which cell a host is in once discovery mapped it', async () => {
      const cell = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
      await addService(db.store, 'c1');
      expect(await hostCell(db.store, 'c1')).toBeNull();
      await discoverHosts(db.store, cells, { byService: true });
      expect(await hostCell(db.store, 'c1')).toEqual(cell);
    });

    it('lists host mappings by host, for all cells or one', async () => {
      const other = await freshDatabase();
      const a = await createCell(db.store, cells, { name: 'a', databaseConnection: db.url });
      const b = await createCell(db.store, cells, { name: 'b', databaseConnection: other });
      await addService(db.store, 'h2');
      await addService(db.store, 'h1');
      await addService(await cells.get(b), 'h3');
      await discoverHosts(db.store, cells, { byService: true });
      expect(await listHosts(db.store)).toEqual([
        { host: 'h1', cellUuid: a.uuid, cellName: 'a' },
        { host: 'h2', cellUuid: a.uuid, cellName: 'a' },
        { host: 'h3', cellUuid: b.uuid, cellName: 'b' },
      ]);
      expect((await listHosts(db.store, { cell: b.uuid })).map((h) => h.host)).toEqual(['h3']);
      await expect(listHosts(db.store, { cell: 'c' })).rejects.toBeInstanceOf(CellNotFound);
    });

    describe('delete', () => {
      it('refuses a cell with mapped hosts (exit 2); --force deletes the mappings and unmarks the rows', async () => {
        const cell = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
        await addService(db.store, 'c1');
        await addNode(db.store, 'c1');
        await discoverHosts(db.store, cells, { byService: true });
        const refused = deleteCell(db.store, cells, 'cell1');
        await expect(refused).rejects.toBeInstanceOf(CellHasHosts);
        await expect(refused).rejects.toMatchObject({ exitCode: 2 });
        expect(await listCells(db.store)).toHaveLength(1);

        const out = await deleteCell(db.store, cells, cell.uuid, { force: true });
        expect(out.hostsDeleted).toEqual(['c1']);
        expect(await listCells(db.store)).toEqual([]);
        expect(await listHosts(db.store)).toEqual([]);
        expect(await mappedBits(db.store, 'services')).toEqual({ c1: [false] });
        expect(await mappedBits(db.store, 'compute_nodes')).toEqual({ c1: [false] });
      });

      it('refuses a cell with instances even with --force (exit 3)', async () => {
        const cell = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
        await db.store.db.insertInto('instance_mappings').values({ instance_uuid: 'i-1', cell_id: cell.id }).execute();
        await db.store.db.insertInto('instances').values({ uuid: 'i-1', vm_state: 'active', host: 'c1' }).execute();
        await expect(deleteCell(db.store, cells, 'cell1', { force: true })).rejects.toBeInstanceOf(CellHasInstances);
        await expect(deleteCell(db.store, cells, 'cell1', { force: true })).rejects.toMatchObject({ exitCode: 3 });
      });

      it('refuses leftover instance mappings without --force (exit 4) and removes them with it', async () => {
        const cell = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
        await db.store.db.insertInto('instance_mappings').values({ instance_uuid: 'i-gone', cell_id: cell.id }).execute();
        await expect(deleteCell(db.store, cells, 'cell1')).rejects.toBeInstanceOf(CellHasInstanceMappings);
        const out = await deleteCell(db.store, cells, 'cell1', { force: true });
        expect(out.instanceMappingsDeleted).toBe(1);
        expect(await db.store.db.selectFrom('instance_mappings').selectAll().execute()).toEqual([]);
      });

      it('deletes an empty cell and reports an unknown one (exit 1)', async () => {
        await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
        await deleteCell(db.store, cells, 'cell1');
        expect(await listCells(db.store)).toEqual([]);
        await expect(deleteCell(db.store, cells, 'cell1')).rejects.toBeInstanceOf(CellNotFound);
      });
    });

    describe('delete-host', () => {
      it("deletes a host's mapping and unmarks its rows, so discovery maps it again", async () => {
        await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
        await addService(db.store, 'c1');
        await addNode(db.store, 'c1');
        await addService(db.store, 'c2');
        await discoverHosts(db.store, cells, { byService: true });
        await deleteHost(db.store, cells, { cell: 'cell1', host: 'c1' });
        expect((await listHosts(db.store)).map((h) => h.host)).toEqual(['c2']);
        expect(await mappedBits(db.store, 'services')).toEqual({ c1: [false], c2: [true] });
        expect(await mappedBits(db.store, 'compute_nodes')).toEqual({ c1: [false] });
        const again = await discoverHosts(db.store, cells, { byService: false });
        expect(again.mapped.map((m) => m.host)).toEqual(['c1']);
      });

      it("answers with nova-manage's exit codes: 1 no cell, 2 no mapping, 3 other cell, 4 instances", async () => {
        const other = await freshDatabase();
        await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
        const cell2 = await createCell(db.store, cells, { name: 'cell2', databaseConnection: other });
        await addService(db.store, 'c1');
        await discoverHosts(db.store, cells, { byService: true });
        await expect(deleteHost(db.store, cells, { cell: 'nope', host: 'c1' })).rejects.toMatchObject({ exitCode: 1 });
        await expect(deleteHost(db.store, cells, { cell: 'cell1', host: 'c9' })).rejects.toBeInstanceOf(HostMappingNotFound);
        await expect(deleteHost(db.store, cells, { cell: 'cell1', host: 'c9' })).rejects.toMatchObject({ exitCode: 2 });
        const wrongCell = deleteHost(db.store, cells, { cell: cell2.uuid, host: 'c1' });
        await expect(wrongCell).rejects.toBeInstanceOf(HostInOtherCell);
        await expect(wrongCell).rejects.toMatchObject({ exitCode: 3, message: expect.stringMatching(/cell2.*cell1/) });
        await db.store.db.insertInto('instances').values({ uuid: 'i-1', vm_state: 'active', host: 'c1' }).execute();
        const busy = deleteHost(db.store, cells, { cell: 'cell1', host: 'c1' });
        await expect(busy).rejects.toBeInstanceOf(HostHasInstances);
        await expect(busy).rejects.toMatchObject({ exitCode: 4 });
        expect(await listHosts(db.store)).toHaveLength(1);
      });
    });
  });
}

describe('CellStores', () => {
  it('opens one store per database, however its URL is spelled, and closes only its own', async () => {
    const target = await createTestDatabase('sqlite');
    const file = target.url.slice('sqlite://'.length);
    const cells = new CellStores();
    try {
      const a = await cells.get({ uuid: 'a', databaseConnection: `sqlite://${file}` });
      const b = await cells.get({ uuid: 'b', databaseConnection: `sqlite:///${file}` });
      expect(b).toBe(a);
      const lent = await openDatabase(`sqlite://${file}.other`);
      cells.share(`sqlite://${file}.other`, lent);
      expect(await cells.open(`sqlite://${file}.other`)).toBe(lent);
      await cells.close();
      await expect(lent.now()).resolves.toBeInstanceOf(Date);
      await lent.close();
    } finally {
      await cells.close();
      await target.drop();
    }
  });

  it('does not cache a failed open', async () => {
    const target = await createTestDatabase('sqlite');
    const dir = target.url.slice('sqlite://'.length).replace(/\/test\.db$/, '');
    const url = `sqlite://${dir}/later/cell.db`;
    const cells = new CellStores();
    try {
      await expect(cells.open(url)).rejects.toBeInstanceOf(DatabaseUnavailable);
      const { mkdirSync } = await import('node:fs');
      mkdirSync(`${dir}/later`);
      await expect(cells.open(url)).resolves.toBeDefined();
    } finally {
      await cells.close();
      await target.drop();
    }
  });
});
