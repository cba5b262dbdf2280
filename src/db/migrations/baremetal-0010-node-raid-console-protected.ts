/**
 * A node's RAID, console and protection (Ironic's API 1.12, 1.31 and 1.48): `raid_interface`;
 * `raid_config` and `target_raid_config` (JSON, `{}` when none); `console_enabled`; `protected` and
 * `protected_reason`. Existing nodes keep a null `raid_interface`, which reads as their hardware
 * type's default, like any interface field left null.
 */
import { sql } from 'kysely';
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';

const COLUMNS = ['raid_interface', 'protected_reason', 'raid_config', 'target_raid_config', 'console_enabled', 'protected'] as const;

export function baremetalNodeRaidConsoleProtected(engine: Engine): Migration {
  const pg = engine === 'postgres';
  return {
    async up(db: Kysely<unknown>) {
      // One column per ALTER: SQLite adds one column per statement.
      const nodes = () => db.schema.alterTable('nodes');
      await nodes().addColumn('raid_interface', 'text').execute();
      await nodes().addColumn('protected_reason', 'text').execute();
      for (const name of ['raid_config', 'target_raid_config']) {
        await nodes().addColumn(name, pg ? 'jsonb' : 'text', (c) => c.notNull().defaultTo(pg ? sql`'{}'::jsonb` : sql.lit('{}'))).execute();
      }
      for (const name of ['console_enabled', 'protected']) {
        await nodes().addColumn(name, pg ? 'boolean' : 'integer', (c) => c.notNull().defaultTo(pg ? false : 0)).execute();
      }
    },
    async down(db: Kysely<unknown>) {
      for (const name of COLUMNS) await db.schema.alterTable('nodes').dropColumn(name).execute();
    },
  };
}
