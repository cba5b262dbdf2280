/**
 * `allocations` (Ironic's allocation API, 1.52): a request for a node of a resource class, with
 * traits and candidate nodes, which a conductor fulfils by claiming a node. `node_id` is the node
 * claimed (unique: one allocation per node, so two allocations can never hold one node whatever the
 * timing) and goes with its node (a deleted node takes its allocation along, as Ironic's
 * `destroy_node`). `nodes.allocation_id` points back; deleting the allocation clears it. Names are
 * unique where set, as uuids are. The state index serves the conductors' pass over `allocating`
 * allocations and the `?state=` filter.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalAllocations(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.json(
            k.json(
              k.json(
                k.id(db.schema.createTable('allocations'))
                  .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
                  .addColumn('name', 'varchar(255)', (c) => c.unique())
                  .addColumn('node_id', 'integer', (c) => c.unique().references('nodes.id').onDelete('cascade'))
                  .addColumn('state', 'varchar(15)', (c) => c.notNull().defaultTo('allocating'))
                  .addColumn('owner', 'varchar(255)')
                  .addColumn('last_error', 'text')
                  .addColumn('resource_class', 'varchar(80)')
                  .addColumn('conductor_affinity', 'integer'),
                'traits',
                '[]',
              ),
              'candidate_nodes',
              '[]',
            ),
            'extra',
          ),
        )
        .execute();
      await db.schema.createIndex('allocations_state_idx').on('allocations').column('state').execute();
      await db.schema.alterTable('nodes').addColumn('allocation_id', 'integer', (c) => c.references('allocations.id').onDelete('set null')).execute();
      await db.schema.createIndex('nodes_allocation_id_idx').on('nodes').column('allocation_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('nodes_allocation_id_idx').execute();
      await db.schema.alterTable('nodes').dropColumn('allocation_id').execute();
      await db.schema.dropTable('allocations').execute();
    },
  };
}
