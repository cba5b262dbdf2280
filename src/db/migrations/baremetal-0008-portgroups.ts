/**
 * `portgroups` (Ironic's port groups: NICs of one node bonded together, API 1.23) and
 * `ports.portgroup_id`, the group a port belongs to (null for none). A group belongs to one node
 * and goes with it (`on delete cascade`, as Ironic's node destroy takes its port groups); a port's
 * reference to its group is a plain foreign key, so a group that still has ports is never deleted
 * however two requests interleave. Name and MAC address are unique where set (several NULLs are
 * allowed on both engines). The indexes serve `?node=`, `/v1/portgroups/{g}/ports` and the delete
 * check.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalPortgroups(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.json(
            k.json(
              k.json(
                k.flag(
                  k.id(db.schema.createTable('portgroups'))
                    .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
                    .addColumn('name', 'varchar(255)', (c) => c.unique())
                    .addColumn('address', 'varchar(18)', (c) => c.unique())
                    .addColumn('node_id', 'integer', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
                    .addColumn('mode', 'varchar(255)'),
                  'standalone_ports_supported',
                  true,
                ),
                'extra',
              ),
              'internal_info',
            ),
            'properties',
          ),
        )
        .execute();
      await db.schema.createIndex('portgroups_node_id_idx').on('portgroups').column('node_id').execute();
      await db.schema.alterTable('ports').addColumn('portgroup_id', 'integer', (c) => c.references('portgroups.id')).execute();
      await db.schema.createIndex('ports_portgroup_id_idx').on('ports').column('portgroup_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('ports_portgroup_id_idx').execute();
      await db.schema.alterTable('ports').dropColumn('portgroup_id').execute();
      await db.schema.dropTable('portgroups').execute();
    },
  };
}
