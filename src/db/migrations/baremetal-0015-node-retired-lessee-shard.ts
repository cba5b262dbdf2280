/**
 * A node's fields of Ironic's API 1.61–1.82: `retired` (a flag, false) and `retired_reason` (1.61),
 * `lessee` (1.65, free text of at most 255 characters, filtered on: indexed), `network_data` (1.66,
 * JSON, `{}` when none), `boot_mode` and `secure_boot` (1.75: what the node's management interface
 * last reported, null while unknown) and `shard` (1.82, free text of at most 255 characters,
 * filtered on and counted by `GET /v1/shards`: indexed).
 */
import { sql } from 'kysely';
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';

const COLUMNS = ['retired', 'retired_reason', 'lessee', 'network_data', 'boot_mode', 'secure_boot', 'shard'] as const;

export function baremetalNodeRetiredLesseeShard(engine: Engine): Migration {
  const pg = engine === 'postgres';
  return {
    async up(db: Kysely<unknown>) {
      // One column per ALTER: SQLite adds one column per statement.
      const nodes = () => db.schema.alterTable('nodes');
      await nodes().addColumn('retired', pg ? 'boolean' : 'integer', (c) => c.notNull().defaultTo(pg ? false : 0)).execute();
      await nodes().addColumn('retired_reason', 'text').execute();
      await nodes().addColumn('lessee', 'varchar(255)').execute();
      await nodes().addColumn('network_data', pg ? 'jsonb' : 'text', (c) => c.notNull().defaultTo(pg ? sql`'{}'::jsonb` : sql.lit('{}'))).execute();
      await nodes().addColumn('boot_mode', 'varchar(16)').execute();
      await nodes().addColumn('secure_boot', pg ? 'boolean' : 'integer').execute();
      await nodes().addColumn('shard', 'varchar(255)').execute();
      await db.schema.createIndex('nodes_lessee_idx').on('nodes').column('lessee').execute();
      await db.schema.createIndex('nodes_shard_idx').on('nodes').column('shard').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('nodes_shard_idx').execute();
      await db.schema.dropIndex('nodes_lessee_idx').execute();
      for (const name of [...COLUMNS].reverse()) await db.schema.alterTable('nodes').dropColumn(name).execute();
    },
  };
}
