/**
 * `node_traits`: the traits of a node (Ironic's `node_traits` table, API 1.37): names the scheduler
 * matches against a flavor's required traits, set by the operator or by inspection rules. One row
 * per trait, unique per node, gone with the node.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalNodeTraits(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamp(
          k.id(db.schema.createTable('node_traits'))
            .addColumn('node_id', 'integer', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
            .addColumn('trait', 'varchar(255)', (c) => c.notNull())
            .addUniqueConstraint('uniq_node_traits0node_id0trait', ['node_id', 'trait']),
          'created_at',
          { defaultNow: true },
        )
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('node_traits').execute();
    },
  };
}
