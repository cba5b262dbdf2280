/**
 * `chassis` (Ironic's chassis: a uuid, a description of at most 255 characters and free-form
 * `extra`) and `nodes.chassis_id`, the chassis a node belongs to (null for none). The reference is
 * a foreign key on both engines (SQLite enforces them: `connect.ts` turns them on), so a chassis
 * that still has nodes cannot be deleted, and a node cannot name a chassis being deleted, whatever
 * the timing of the two requests. The index serves `?chassis_uuid=` and that delete check.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalChassis(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.json(
            k.id(db.schema.createTable('chassis'))
              .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
              .addColumn('description', 'varchar(255)'),
            'extra',
          ),
        )
        .execute();
      await db.schema.alterTable('nodes').addColumn('chassis_id', 'integer', (c) => c.references('chassis.id')).execute();
      await db.schema.createIndex('nodes_chassis_id_idx').on('nodes').column('chassis_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('nodes_chassis_id_idx').execute();
      await db.schema.alterTable('nodes').dropColumn('chassis_id').execute();
      await db.schema.dropTable('chassis').execute();
    },
  };
}
