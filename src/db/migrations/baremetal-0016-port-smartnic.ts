/**
 * `ports.is_smartnic` (Ironic's API 1.53: the port is a Smart NIC, whose `local_link_connection`
 * names the NIC's own `hostname` and `port_id`) and `ports.internal_info` (conductor-private data;
 * the VIF attached to the port is kept there as `tenant_vif_port_id`, as Ironic keeps it). Existing
 * ports are not Smart NICs and have no internal data.
 */
import { sql } from 'kysely';
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';

export function baremetalPortSmartnic(engine: Engine): Migration {
  const pg = engine === 'postgres';
  return {
    async up(db: Kysely<unknown>) {
      // One column per ALTER: SQLite adds one column per statement.
      await db.schema.alterTable('ports').addColumn('is_smartnic', pg ? 'boolean' : 'integer', (c) => c.notNull().defaultTo(pg ? false : 0)).execute();
      await db.schema.alterTable('ports').addColumn('internal_info', pg ? 'jsonb' : 'text', (c) => c.notNull().defaultTo(pg ? sql`'{}'::jsonb` : sql.lit('{}'))).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('ports').dropColumn('internal_info').execute();
      await db.schema.alterTable('ports').dropColumn('is_smartnic').execute();
    },
  };
}
