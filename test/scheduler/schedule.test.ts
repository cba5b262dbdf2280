import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CellStores, createCell } from '../../src/cells/index.js';
import type { CellMapping } from '../../src/cells/index.js';
import { BaremetalClient } from '../../src/compute/baremetal-client.js';
import type { Transport } from '../../src/compute/baremetal-client.js';
import { COMPUTE_BINARY, registerService } from '../../src/compute/services.js';
import type { Store } from '../../src/db/connect.js';
import { NoValidHost } from '../../src/scheduler/candidates.js';
import { scheduleServer } from '../../src/scheduler/schedule.js';
import type { ScheduleDeps } from '../../src/scheduler/schedule.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const SUM = `sha256:${'ab'.repeat(32)}`;
const image = { kernel: 'http://x/k', kernel_checksum: SUM, ramdisk: 'http://x/r', ramdisk_checksum: SUM };

/** A bare-metal API that lists `available` as the free nodes of every query. */
function fakeBaremetal(available: () => string[]): BaremetalClient {
  const transport: Transport = async ({ method, path }) => {
    if (method === 'GET' && path.startsWith('/v1/nodes?')) return { status: 200, body: JSON.stringify({ nodes: available().map((u) => ({ uuid: u, resource_class: 'baremetal' })) }) };
    return { status: 404, body: '' };
  };
  return new BaremetalClient(transport);
}

for (const engine of engines) {
  describe(`scheduling servers on ${engine}`, () => {
    const db = useMigratedDatabase(engine);
    let cells: CellStores;
    let cell: CellMapping;
    let cellStore: Store;
    beforeEach(async () => {
      cells = new CellStores();
      cells.share(db.url, db.store);
      cell = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
      cellStore = await cells.get(cell);
    });
    afterEach(() => cells.close());

    const expose = async (host: string, nodes: number[], options: { mapped?: boolean; live?: boolean } = {}) => {
      const id = await registerService(cellStore, { host, binary: COMPUTE_BINARY }, 60);
      if (options.live === false) await cellStore.db.updateTable('services').set({ last_seen_up: null }).where('id', '=', id).execute();
      if (options.mapped !== false) await db.store.db.insertInto('host_mappings').values({ host, cell_id: cell.id }).execute();
      for (const n of nodes) await cellStore.db.insertInto('compute_nodes').values({ uuid: uuid(n), host, hypervisor_hostname: uuid(n), resource_class: 'baremetal' }).execute();
    };
    const deps = (available: number[]): ScheduleDeps => ({ api: db.store, cells, baremetal: fakeBaremetal(() => available.map(uuid)), serviceDownTime: 60 });

    it('records the instance in the cell on the node\'s host, with its mapping in the API database', async () => {
      await expose('c1', [1]);
      const { instance, cell: chosen } = await scheduleServer(deps([1]), { name: 'web-1', resourceClass: 'baremetal', image });
      expect(instance).toMatchObject({ display_name: 'web-1', host: 'c1', node: uuid(1), vm_state: 'building', task_state: 'spawning', image });
      expect(chosen.uuid).toBe(cell.uuid);
      expect(await db.store.db.selectFrom('instance_mappings').select(['instance_uuid', 'cell_id']).execute()).toEqual([{ instance_uuid: instance.uuid, cell_id: cell.id }]);
    });

    it('never gives one node to two concurrent requests', async () => {
      await expose('c1', [1, 2, 3, 4]);
      const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => scheduleServer(deps([1, 2, 3, 4]), { name: `s${i}`, resourceClass: 'baremetal', image })));
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.instance.node] : []));
      expect(won.sort()).toEqual([1, 2, 3, 4].map(uuid));
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(NoValidHost);
      expect(await cellStore.db.selectFrom('instances').select('node').execute()).toHaveLength(4);
    });

    it('never selects a node on an unmapped host, and the error names the host and the fix', async () => {
      await expose('c1', [1]);
      await expose('c2', [2], { mapped: false });
      const first = await scheduleServer(deps([1, 2]), { resourceClass: 'baremetal', image });
      expect(first.instance.node).toBe(uuid(1));
      const err = await scheduleServer(deps([2]), { resourceClass: 'baremetal', image }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NoValidHost);
      expect((err as Error).message).toMatch(/host c2 is not mapped to any cell \(node .* in cell cell1\); run `ironring manage cell discover-hosts --by-service`/);
      expect(await cellStore.db.selectFrom('instances').select('node').execute()).toEqual([{ node: uuid(1) }]);
    });

    it('skips nodes of dead compute services and says so when nothing else is left', async () => {
      await expose('c9', [5], { live: false });
      await expect(scheduleServer(deps([5]), { resourceClass: 'baremetal', image })).rejects.toThrow(/compute service c9 holding .* is down/);
    });
  });
}
