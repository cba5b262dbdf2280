import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { MIGRATION_SETS, appliedMigrations, migrateDatabase } from '../../src/db/migrate.js';
import { createTestDatabase, POSTGRES_URL, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();

/** The baremetal set's migrations, in the order they apply. */
const BAREMETAL_MIGRATIONS = [
  '0001_initial', '0002_node_order', '0003_agent_token', '0004_node_inventory',
  '0005_inspection_rules', '0006_node_traits', '0007_chassis', '0008_portgroups',
  '0009_volume', '0010_node_raid_console_protected', '0011_node_storage_bios_automated_clean', '0012_node_owner',
  '0013_allocations', '0014_deploy_templates', '0015_node_retired_lessee_shard', '0016_port_smartnic', '0017_ring_events', '0018_node_partial_indexes', '0019_conductor_proxydhcp',
];

const TABLES = [
  'conductors', 'conductor_hardware_interfaces', 'nodes', 'chassis', 'allocations', 'deploy_templates', 'ports', 'portgroups', 'volume_connectors', 'volume_targets', 'bios_settings', 'node_history',
  'cell_mappings', 'host_mappings', 'instance_mappings', 'services', 'compute_nodes', 'instances',
];

describe.each(engines)('migrations on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;

  beforeEach(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
  });
  afterEach(async () => {
    await store.close();
    await target.drop();
  });

  /**
   * Tables of this test's own database. On PostgreSQL only its own schema is read: kysely's
   * introspection reads every schema's columns, and another test file dropping its schema meanwhile
   * makes that query fail ("column … does not exist").
   */
  async function tableNames(): Promise<string[]> {
    if (engine !== 'postgres') return (await store.db.introspection.getTables()).map((t) => t.name).sort();
    const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(store.db);
    return rows.map((r) => r.name).filter((n) => !n.startsWith('kysely_')).sort();
  }

  it('creates every table of the schema on an empty database', async () => {
    expect(await tableNames()).toEqual([]);
    const reports = await migrateDatabase(store);
    expect(reports.map((r) => [r.set, r.applied])).toEqual(MIGRATION_SETS.map((s) => [s, s === 'cell' ? ['0001_initial', '0002_instance_fault', '0003_mapped_hot_updates', '0004_service_instance_token', '0005_instance_order'] : s === 'baremetal' ? BAREMETAL_MIGRATIONS : ['0001_initial']]));
    const names = await tableNames();
    for (const table of TABLES) expect(names).toContain(table);
  });

  it('is a no-op when re-run, leaving data untouched', async () => {
    await migrateDatabase(store);
    await store.db.insertInto('conductors').values({ hostname: 'c1' }).execute();
    const again = await migrateDatabase(store);
    expect(again.every((r) => r.applied.length === 0)).toBe(true);
    expect(await appliedMigrations(store, 'baremetal')).toEqual(BAREMETAL_MIGRATIONS);
    const rows = await store.db.selectFrom('conductors').select('hostname').execute();
    expect(rows).toEqual([{ hostname: 'c1' }]);
  });

  it('applies only the sets asked for', async () => {
    await migrateDatabase(store, ['api']);
    const names = await tableNames();
    expect(names).toContain('cell_mappings');
    expect(names).not.toContain('nodes');
    expect(await appliedMigrations(store, 'cell')).toEqual([]);
  });

  // SQLite's busy wait blocks the event loop, so two handles in one process would stall each other;
  // the CLI tests run concurrent migrations on SQLite from separate processes instead.
  if (engine === 'postgres') it('applies the schema once when two migrators run at once', async () => {
    const other = await openDatabase(target.url);
    try {
      await Promise.all([migrateDatabase(store), migrateDatabase(other)]);
    } finally {
      await other.close();
    }
    expect(await appliedMigrations(store, 'cell')).toEqual(['0001_initial', '0002_instance_fault', '0003_mapped_hot_updates', '0004_service_instance_token', '0005_instance_order']);
  });

  describe('with the schema applied', () => {
    beforeEach(async () => {
      await migrateDatabase(store);
    });

    async function insertNode(values: { uuid?: string; name?: string | null; instance_uuid?: string | null } = {}) {
      return store.db
        .insertInto('nodes')
        .values({ uuid: values.uuid ?? randomUUID(), name: values.name ?? null, instance_uuid: values.instance_uuid ?? null, driver: 'fake-hardware', provision_state: 'enroll' })
        .returning('id')
        .executeTakeFirstOrThrow();
    }

    it('refuses duplicate node uuid, name and instance_uuid', async () => {
      const uuid = randomUUID();
      const instance = randomUUID();
      await insertNode({ uuid, name: 'n1', instance_uuid: instance });
      await expect(insertNode({ uuid })).rejects.toThrow(/unique|duplicate/i);
      await expect(insertNode({ name: 'n1' })).rejects.toThrow(/unique|duplicate/i);
      await expect(insertNode({ instance_uuid: instance })).rejects.toThrow(/unique|duplicate/i);
      // Unnamed nodes and nodes without instances are many.
      await insertNode();
      await insertNode();
      const count = await store.db.selectFrom('nodes').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
      expect(Number(count.n)).toBe(3);
    });

    it('refuses a duplicate port address and deletes ports with their node', async () => {
      const node = await insertNode();
      await store.db.insertInto('ports').values({ uuid: randomUUID(), address: '52:54:00:12:34:56', node_id: node.id }).execute();
      await expect(
        store.db.insertInto('ports').values({ uuid: randomUUID(), address: '52:54:00:12:34:56', node_id: node.id }).execute(),
      ).rejects.toThrow(/unique|duplicate/i);
      await store.db.deleteFrom('nodes').where('id', '=', node.id).execute();
      expect(await store.db.selectFrom('ports').selectAll().execute()).toEqual([]);
    });

    it('refuses a duplicate conductor hostname and a weight below 1', async () => {
      await store.db.insertInto('conductors').values({ hostname: 'c1' }).execute();
      await expect(store.db.insertInto('conductors').values({ hostname: 'c1' }).execute()).rejects.toThrow(/unique|duplicate/i);
      await expect(store.db.insertInto('conductors').values({ hostname: 'c2', weight: 0 }).execute()).rejects.toThrow(/check/i);
    });

    it('maps a host to one cell only, and a service once per binary', async () => {
      const cell = await store.db
        .insertInto('cell_mappings')
        .values({ uuid: randomUUID(), name: 'cell1', database_connection: 'sqlite::memory:' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await store.db.insertInto('host_mappings').values({ cell_id: cell.id, host: 'compute-1' }).execute();
      await expect(store.db.insertInto('host_mappings').values({ cell_id: cell.id, host: 'compute-1' }).execute()).rejects.toThrow(/unique|duplicate/i);
      await store.db.insertInto('services').values({ uuid: randomUUID(), host: 'compute-1', binary: 'ironring-compute' }).execute();
      await expect(
        store.db.insertInto('services').values({ uuid: randomUUID(), host: 'compute-1', binary: 'ironring-compute' }).execute(),
      ).rejects.toThrow(/unique|duplicate/i);
    });

    it('reads flags, timestamps and JSON as the same JavaScript values on every engine', async () => {
      const before = await store.now();
      await store.db
        .insertInto('conductors')
        .values({ hostname: 'c1', online: false, drivers: JSON.stringify(['fake-hardware', 'ipmi']) })
        .execute();
      const row = await store.db.selectFrom('conductors').selectAll().where('hostname', '=', 'c1').executeTakeFirstOrThrow();
      expect(row.online).toBe(false);
      expect(row.drivers).toEqual(['fake-hardware', 'ipmi']);
      expect(row.created_at).toBeInstanceOf(Date);
      expect(row.updated_at.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1);
      expect(row.conductor_group).toBe('');
      expect(row.weight).toBe(1);

      const node = await insertNode();
      const stored = await store.db.selectFrom('nodes').selectAll().where('id', '=', node.id).executeTakeFirstOrThrow();
      expect(stored.maintenance).toBe(false);
      expect(stored.driver_info).toEqual({});
      expect(stored.provision_updated_at).toBeNull();

      await store.db.updateTable('nodes').set({ maintenance: true, driver_info: JSON.stringify({ ipmi_address: '10.0.0.1' }) }).where('id', '=', node.id).execute();
      const updated = await store.db.selectFrom('nodes').select(['maintenance', 'driver_info']).where('id', '=', node.id).executeTakeFirstOrThrow();
      expect(updated).toEqual({ maintenance: true, driver_info: { ipmi_address: '10.0.0.1' } });
    });

    it('compares heartbeats against the database clock', async () => {
      await store.db.insertInto('conductors').values({ hostname: 'fresh', updated_at: store.sqlNow() }).execute();
      await store.db.insertInto('conductors').values({ hostname: 'stale', updated_at: new Date(Date.now() - 3_600_000) }).execute();
      const cutoff = new Date((await store.now()).getTime() - 60_000);
      const live = await store.db.selectFrom('conductors').select('hostname').where('updated_at', '>=', cutoff).execute();
      expect(live).toEqual([{ hostname: 'fresh' }]);
    });
  });
});

describe.runIf(engines.includes('postgres'))('migrations on postgres beside other schemas', () => {
  it('do not fail while other schemas of the same database are created and dropped', { timeout: 60_000 }, async () => {
    // Another deployment (or a parallel test) dropping its schema while this one migrates: Kysely's
    // own introspection reads every schema and failed with 'schema "…" does not exist'.
    const churn = new pg.Client({ connectionString: POSTGRES_URL });
    await churn.connect();
    let stop = false;
    let churned = 0;
    const loop = (async () => {
      while (!stop) {
        const name = `churn_${process.pid}_${churned++}`;
        await churn.query(`create schema ${name}; create table ${name}.t (id serial primary key, a text, b text, c text)`);
        await churn.query(`drop schema ${name} cascade`);
      }
    })();
    try {
      for (let i = 0; i < 12; i++) {
        const target = await createTestDatabase('postgres');
        const store = await openDatabase(target.url);
        try {
          await migrateDatabase(store);
          expect(await appliedMigrations(store, 'baremetal')).toEqual(BAREMETAL_MIGRATIONS);
        } finally {
          await store.close();
          await target.drop();
        }
      }
    } finally {
      stop = true;
      await loop;
      await churn.end();
    }
    expect(churned).toBeGreaterThan(12);
  });
});
