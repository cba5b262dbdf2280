/**
 * A node's storage and BIOS interfaces and its automated-clean choice (Ironic's API 1.33, 1.40,
 * 1.47): `storage_interface` and `bios_interface` (null on existing nodes, which reads as their
 * hardware type's default, like any interface field left null); `automated_clean`, null (follow
 * `[conductor] automated_clean`), true or false. And `bios_settings`, Ironic's cache of the BIOS
 * settings a node's BIOS interface read — one row per (node, setting name), going with its node —
 * which stays empty until a BIOS interface reads firmware.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalNodeStorageBiosAutomatedClean(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      // One column per ALTER: SQLite adds one column per statement.
      const nodes = () => db.schema.alterTable('nodes');
      await nodes().addColumn('storage_interface', 'text').execute();
      await nodes().addColumn('bios_interface', 'text').execute();
      await nodes().addColumn('automated_clean', engine === 'postgres' ? 'boolean' : 'integer').execute();
      await k
        .timestamps(
          db.schema
            .createTable('bios_settings')
            .addColumn('node_id', 'integer', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
            .addColumn('name', 'varchar(255)', (c) => c.notNull())
            .addColumn('value', 'text')
            .addPrimaryKeyConstraint('bios_settings_pkey', ['node_id', 'name']),
        )
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('bios_settings').execute();
      for (const name of ['automated_clean', 'bios_interface', 'storage_interface']) await db.schema.alterTable('nodes').dropColumn(name).execute();
    },
  };
}
