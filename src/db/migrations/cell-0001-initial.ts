/** A cell's database: compute services, compute nodes, instances. */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function cellInitial(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      let services = k.id(db.schema.createTable('services'))
        .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('host', 'varchar(255)', (c) => c.notNull())
        .addColumn('binary', 'varchar(255)', (c) => c.notNull())
        .addColumn('topic', 'varchar(255)')
        .addColumn('report_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('disabled_reason', 'varchar(255)');
      services = k.flag(k.flag(k.flag(services, 'disabled', false), 'forced_down', false), 'mapped', false);
      services = k.timestamp(services, 'last_seen_up', { nullable: true });
      await k.timestamps(services).addUniqueConstraint('services_host_binary_unique', ['host', 'binary']).execute();
      // Discovery asks for unmapped services only; this keeps a run with nothing new to one cheap query.
      await db.schema.createIndex('services_mapped_idx').on('services').column('mapped').execute();

      await k
        .timestamps(
          k.flag(
            k.id(db.schema.createTable('compute_nodes'))
              .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
              .addColumn('host', 'varchar(255)', (c) => c.notNull())
              .addColumn('hypervisor_hostname', 'varchar(255)', (c) => c.notNull())
              .addColumn('resource_class', 'varchar(80)'),
            'mapped',
            false,
          ),
        )
        .execute();
      await db.schema.createIndex('compute_nodes_host_idx').on('compute_nodes').column('host').execute();
      await db.schema.createIndex('compute_nodes_mapped_idx').on('compute_nodes').column('mapped').execute();

      await k
        .timestamps(
          k.json(
            k.id(db.schema.createTable('instances'))
              .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
              .addColumn('display_name', 'varchar(255)')
              .addColumn('project_id', 'varchar(255)')
              .addColumn('host', 'varchar(255)')
              // One instance per bare-metal node at most.
              .addColumn('node', 'varchar(255)', (c) => c.unique())
              .addColumn('resource_class', 'varchar(80)')
              .addColumn('vm_state', 'varchar(255)', (c) => c.notNull())
              .addColumn('task_state', 'varchar(255)'),
            'image',
          ),
        )
        .execute();
      await db.schema.createIndex('instances_host_idx').on('instances').column('host').execute();
    },
    async down(db: Kysely<unknown>) {
      for (const table of ['instances', 'compute_nodes', 'services']) await db.schema.dropTable(table).execute();
    },
  };
}
