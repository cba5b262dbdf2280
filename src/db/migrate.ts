/**
 * Applying the schema. Three migration sets, one per kind of database (DESIGN §3): the bare-metal
 * tables, the compute tier's API database and a cell database. The embedded default keeps all three
 * in one database; a multi-cell deployment applies `api` to the API database and `cell` to each
 * cell's. Each set records what it applied in its own table, so re-running is a no-op.
 */
import { Migrator, sql } from 'kysely';
import type { DatabaseIntrospector, Kysely, Migration, MigrationResult, MigrationResultSet, TableMetadata } from 'kysely';
import { IronringError } from '../common/errors.js';
import type { Engine, Store } from './connect.js';
import type { Database } from './schema.js';
import { apiInitial } from './migrations/api-0001-initial.js';
import { baremetalInitial } from './migrations/baremetal-0001-initial.js';
import { baremetalNodeOrder } from './migrations/baremetal-0002-node-order.js';
import { baremetalAgentToken } from './migrations/baremetal-0003-agent-token.js';
import { baremetalNodeInventory } from './migrations/baremetal-0004-node-inventory.js';
import { baremetalInspectionRules } from './migrations/baremetal-0005-inspection-rules.js';
import { baremetalNodeTraits } from './migrations/baremetal-0006-node-traits.js';
import { baremetalChassis } from './migrations/baremetal-0007-chassis.js';
import { baremetalPortgroups } from './migrations/baremetal-0008-portgroups.js';
import { baremetalVolume } from './migrations/baremetal-0009-volume.js';
import { baremetalNodeRaidConsoleProtected } from './migrations/baremetal-0010-node-raid-console-protected.js';
import { baremetalNodeStorageBiosAutomatedClean } from './migrations/baremetal-0011-node-storage-bios-automated-clean.js';
import { baremetalNodeOwner } from './migrations/baremetal-0012-node-owner.js';
import { baremetalAllocations } from './migrations/baremetal-0013-allocations.js';
import { baremetalDeployTemplates } from './migrations/baremetal-0014-deploy-templates.js';
import { baremetalNodeRetiredLesseeShard } from './migrations/baremetal-0015-node-retired-lessee-shard.js';
import { baremetalPortSmartnic } from './migrations/baremetal-0016-port-smartnic.js';
import { baremetalRingEvents } from './migrations/baremetal-0017-ring-events.js';
import { baremetalNodePartialIndexes } from './migrations/baremetal-0018-node-partial-indexes.js';
import { baremetalConductorProxyDhcp } from './migrations/baremetal-0019-conductor-proxydhcp.js';
import { cellInitial } from './migrations/cell-0001-initial.js';
import { cellInstanceFault } from './migrations/cell-0002-instance-fault.js';
import { cellMappedHotUpdates } from './migrations/cell-0003-mapped-hot-updates.js';
import { cellServiceInstanceToken } from './migrations/cell-0004-service-instance-token.js';
import { cellInstanceOrder } from './migrations/cell-0005-instance-order.js';

import { MIGRATION_SETS } from './migration-sets.js';
import type { MigrationSet } from './migration-sets.js';

export { MIGRATION_SETS };
export type { MigrationSet };

/** Every migration of a set, by name; names sort in the order they apply. */
function migrationsOf(set: MigrationSet, engine: Engine): Record<string, Migration> {
  switch (set) {
    case 'baremetal':
      return {
        '0001_initial': baremetalInitial(engine),
        '0002_node_order': baremetalNodeOrder(),
        '0003_agent_token': baremetalAgentToken(),
        '0004_node_inventory': baremetalNodeInventory(engine),
        '0005_inspection_rules': baremetalInspectionRules(engine),
        '0006_node_traits': baremetalNodeTraits(engine),
        '0007_chassis': baremetalChassis(engine),
        '0008_portgroups': baremetalPortgroups(engine),
        '0009_volume': baremetalVolume(engine),
        '0010_node_raid_console_protected': baremetalNodeRaidConsoleProtected(engine),
        '0011_node_storage_bios_automated_clean': baremetalNodeStorageBiosAutomatedClean(engine),
        '0012_node_owner': baremetalNodeOwner(),
        '0013_allocations': baremetalAllocations(engine),
        '0014_deploy_templates': baremetalDeployTemplates(engine),
        '0015_node_retired_lessee_shard': baremetalNodeRetiredLesseeShard(engine),
        '0016_port_smartnic': baremetalPortSmartnic(engine),
        '0017_ring_events': baremetalRingEvents(engine),
        '0018_node_partial_indexes': baremetalNodePartialIndexes(),
        '0019_conductor_proxydhcp': baremetalConductorProxyDhcp(),
      };
    case 'api':
      return { '0001_initial': apiInitial(engine) };
    case 'cell':
      return {
        '0001_initial': cellInitial(engine),
        '0002_instance_fault': cellInstanceFault(),
        '0003_mapped_hot_updates': cellMappedHotUpdates(engine),
        '0004_service_instance_token': cellServiceInstanceToken(),
        '0005_instance_order': cellInstanceOrder(),
      };
  }
}

/**
 * On PostgreSQL the migration tables are named with their schema: without it Kysely checks whether
 * they exist in *any* schema, so a second schema in the same database (another deployment, or
 * parallel tests) would make it skip creating its own and then fail to find them.
 */
async function migratorFor(store: Store, set: MigrationSet, db: Kysely<Database> = store.db, disableTransactions = false): Promise<Migrator> {
  let schema: string | undefined;
  if (store.engine === 'postgres') {
    const row = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    schema = row.rows[0]?.schema;
  }
  return new Migrator({
    db: schema !== undefined ? ownSchemaOnly(db, schema) : db,
    provider: { getMigrations: () => Promise.resolve(migrationsOf(set, store.engine)) },
    migrationTableName: `ironring_migrations_${set}`,
    migrationLockTableName: `ironring_migrations_${set}_lock`,
    ...(schema !== undefined ? { migrationTableSchema: schema } : {}),
    disableTransactions,
  });
}

/**
 * Kysely's PostgreSQL introspection reads the columns of every schema in the database, and fails
 * with "schema … does not exist" when another schema is dropped while it runs (another deployment
 * or a parallel test cleaning up). The migrator only asks whether its own two tables exist, so it
 * gets a view of the current schema alone: one query against information_schema.
 */
function ownSchemaOnly(db: Kysely<Database>, schema: string): Kysely<Database> {
  const getTables = async (): Promise<TableMetadata[]> => {
    const { rows } = await sql<{ name: string; type: string }>`select table_name as name, table_type as type from information_schema.tables where table_schema = ${schema}`.execute(db);
    return rows.map((r) => ({ name: r.name, schema, isView: r.type === 'VIEW', columns: [] }));
  };
  const introspection: DatabaseIntrospector = {
    getSchemas: () => Promise.resolve([{ name: schema }]),
    getTables,
    getMetadata: async () => ({ tables: await getTables() }),
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'introspection') return introspection;
      // Kysely's methods use private fields: call them on the real instance.
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Runs one set's pending migrations. PostgreSQL serialises concurrent migrators with Kysely's
 * advisory lock. SQLite has no such lock and a deferred transaction lets two processes both see
 * "nothing applied" and both create the tables, so there the whole run is one `BEGIN IMMEDIATE`
 * transaction: the second process waits (busy timeout) and then finds everything applied.
 */
async function migrateSet(store: Store, set: MigrationSet): Promise<MigrationResultSet> {
  if (store.engine !== 'sqlite') return (await migratorFor(store, set)).migrateToLatest();
  return store.db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn);
    try {
      const outcome = await (await migratorFor(store, set, conn, true)).migrateToLatest();
      await sql.raw(outcome.error ? 'rollback' : 'commit').execute(conn);
      return outcome;
    } catch (err) {
      await sql`rollback`.execute(conn);
      throw err;
    }
  });
}

/** Thrown when a migration fails; the database is left at the last migration that succeeded. */
export class MigrationFailed extends IronringError {
  override readonly exitCode = 1;
}

export interface MigrationReport {
  set: MigrationSet;
  /** Migrations applied by this run, in order (empty when the schema was current). */
  applied: string[];
}

/** Brings the database up to date with the given sets (all by default). */
export async function migrateDatabase(store: Store, sets: readonly MigrationSet[] = MIGRATION_SETS): Promise<MigrationReport[]> {
  const reports: MigrationReport[] = [];
  for (const set of sets) {
    const { error, results } = await migrateSet(store, set);
    const applied = (results ?? []).filter((r: MigrationResult) => r.status === 'Success').map((r) => r.migrationName);
    if (error) {
      const failed = (results ?? []).find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
      throw new MigrationFailed(`migration ${set}/${failed} failed on ${store.displayUrl}: ${(error as Error).message ?? String(error)}`, { cause: error });
    }
    reports.push({ set, applied });
  }
  return reports;
}

/** Names of the migrations already applied for a set, or an empty list for a fresh database. */
export async function appliedMigrations(store: Store, set: MigrationSet): Promise<string[]> {
  const all = await (await migratorFor(store, set)).getMigrations();
  return all.filter((m) => m.executedAt !== undefined).map((m) => m.name);
}

/** Thrown when a process starts on a database whose schema is missing or behind. */
export class SchemaNotMigrated extends IronringError {
  override readonly exitCode = 1;
}

/** Refuses to run on a database whose schema is missing or not current, saying how to fix it. */
export async function requireSchema(store: Store, sets: readonly MigrationSet[] = MIGRATION_SETS): Promise<void> {
  for (const set of sets) {
    const known = Object.keys(migrationsOf(set, store.engine));
    const applied = await appliedMigrations(store, set);
    const missing = known.filter((name) => !applied.includes(name));
    if (missing.length > 0) {
      throw new SchemaNotMigrated(
        `the database ${store.displayUrl} is not migrated (missing ${set}/${missing.join(', ')}); run \`ironring manage db migrate --database …\` first`,
      );
    }
  }
}
