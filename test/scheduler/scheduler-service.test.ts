import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CellStores, createCell, mapCell0 } from '../../src/cells/index.js';
import { createLogger } from '../../src/common/logger.js';
import { COMPUTE_BINARY, registerService } from '../../src/compute/services.js';
import { SchedulerService } from '../../src/scheduler/scheduler-service.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const logger = createLogger({ level: 'silent', pretty: false });

for (const engine of engines) {
  describe(`scheduler services on ${engine}`, () => {
    const db = useMigratedDatabase(engine);
    let cells: CellStores;
    const running: SchedulerService[] = [];
    beforeEach(async () => {
      cells = new CellStores();
      cells.share(db.url, db.store);
      await mapCell0(db.store, cells, db.url);
    });
    afterEach(async () => {
      for (const s of running.splice(0)) await s.stop();
      await cells.close();
    });
    const start = async (host: string, discoverHostsInterval: number) => {
      // Long intervals: the test drives discovery itself.
      const s = new SchedulerService({ host, api: db.store, cells, logger, reportInterval: 60, serviceDownTime: 60, discoverHostsInterval, discoverHostsByService: true });
      running.push(s);
      await s.start();
      await s.periodicDiscovery();
      return s;
    };

    it('lets one scheduler at a time run discovery, the lowest id among those with discovery on', async () => {
      const off = await start('s0', -1);
      const a = await start('s1', 3600);
      const b = await start('s2', 3600);
      expect(await off.isLeader()).toBe(false);
      expect(await a.isLeader()).toBe(true);
      expect(await b.isLeader()).toBe(false);
      expect(await b.periodicDiscovery()).toBeNull();
      expect(await a.periodicDiscovery()).not.toBeNull();
      // A graceful stop hands the lead over at once.
      await a.stop();
      expect(await b.isLeader()).toBe(true);
    });

    it('maps a compute service that registered with zero nodes on its next run', async () => {
      const cell = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
      const leader = await start('s1', 3600);
      await registerService(await cells.get(cell), { host: 'compute-1', binary: COMPUTE_BINARY }, 60);
      const result = await leader.periodicDiscovery();
      expect(result?.mapped).toEqual([{ host: 'compute-1', cellUuid: cell.uuid, cellName: 'cell1' }]);
    });

    it('logs and counts a discovery that fails (it resolves null, never rejects), and discovers again once it works', async () => {
      const cell = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
      const leader = await start('s1', 3600);
      await sql`alter table cell_mappings rename to cell_mappings_away`.execute(db.store.db);
      await expect(leader.periodicDiscovery()).resolves.toBeNull();
      expect(leader.discoveryStats()).toMatchObject({ failures: 1, consecutiveFailures: 1, lastError: expect.stringMatching(/cell_mappings/) });
      await sql`alter table cell_mappings_away rename to cell_mappings`.execute(db.store.db);
      await registerService(await cells.get(cell), { host: 'compute-2', binary: COMPUTE_BINARY }, 60);
      // The next run waits out the back-off, then works.
      const result = await leader.periodicDiscovery();
      expect(result?.mapped).toEqual([{ host: 'compute-2', cellUuid: cell.uuid, cellName: 'cell1' }]);
      expect(leader.discoveryStats()).toMatchObject({ failures: 1, consecutiveFailures: 0, lastError: null });
    });

    it('refuses to start without cell0, saying how to map it', async () => {
      await db.store.db.deleteFrom('cell_mappings').execute();
      await expect(start('s1', 60)).rejects.toThrow(/cell0 is not mapped .*ironring manage cell map-cell0/);
    });
  });
}
