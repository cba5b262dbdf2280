/**
 * `node_inventory`: what the last inspection of a node found — the agent's hardware inventory and
 * the data the conductor derived from it (Ironic's `node_inventory` table, served at
 * `GET /v1/nodes/{node}/inventory`). One row per node, replaced by the next inspection, gone with
 * the node.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalNodeInventory(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamp(
          k.json(
            k.json(
              k.id(db.schema.createTable('node_inventory')).addColumn('node_id', 'integer', (c) => c.notNull().unique().references('nodes.id').onDelete('cascade')),
              'inventory_data',
            ),
            'plugin_data',
          ),
          'created_at',
          { defaultNow: true },
        )
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('node_inventory').execute();
    },
  };
}
