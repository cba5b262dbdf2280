/** The bare-metal tier's tables: conductors and their interfaces, nodes, ports, node history. */
import { sql } from 'kysely';
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalInitial(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.json(
            k.flag(k.id(db.schema.createTable('conductors')), 'online', true)
              .addColumn('hostname', 'varchar(255)', (c) => c.notNull().unique())
              .addColumn('conductor_group', 'varchar(255)', (c) => c.notNull().defaultTo(''))
              .addColumn('rpc_url', 'varchar(255)')
              .addColumn('tftp_address', 'varchar(255)')
              .addColumn('http_url', 'varchar(255)')
              .addColumn('weight', 'integer', (c) => c.notNull().defaultTo(1).check(sql`weight >= 1`)),
            'drivers',
            '[]',
          ),
        )
        .execute();
      await db.schema.createIndex('conductors_online_updated_at_idx').on('conductors').columns(['online', 'updated_at']).execute();

      await k
        .timestamps(
          k.flag(
            k.id(db.schema.createTable('conductor_hardware_interfaces'))
              .addColumn('conductor_id', 'integer', (c) => c.notNull().references('conductors.id').onDelete('cascade'))
              .addColumn('hardware_type', 'varchar(255)', (c) => c.notNull())
              .addColumn('interface_type', 'varchar(16)', (c) => c.notNull())
              .addColumn('interface_name', 'varchar(255)', (c) => c.notNull()),
            'default',
            false,
          ),
        )
        .addUniqueConstraint('conductor_hardware_interfaces_unique', ['conductor_id', 'hardware_type', 'interface_type', 'interface_name'])
        .execute();

      let nodes = k.id(db.schema.createTable('nodes'))
        .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('name', 'varchar(255)', (c) => c.unique())
        .addColumn('description', 'text')
        .addColumn('driver', 'varchar(255)', (c) => c.notNull())
        .addColumn('instance_uuid', 'varchar(36)', (c) => c.unique())
        .addColumn('conductor_group', 'varchar(255)', (c) => c.notNull().defaultTo(''))
        .addColumn('resource_class', 'varchar(80)')
        .addColumn('provision_state', 'varchar(32)', (c) => c.notNull())
        .addColumn('target_provision_state', 'varchar(32)')
        .addColumn('power_state', 'varchar(32)')
        .addColumn('target_power_state', 'varchar(32)')
        .addColumn('maintenance_reason', 'text')
        .addColumn('last_error', 'text')
        .addColumn('reservation', 'varchar(255)')
        .addColumn('conductor_affinity', 'integer', (c) => c.references('conductors.id').onDelete('set null'));
      for (const iface of ['boot', 'console', 'deploy', 'inspect', 'management', 'network', 'power', 'rescue', 'vendor']) {
        nodes = nodes.addColumn(`${iface}_interface`, 'varchar(255)');
      }
      for (const col of ['driver_info', 'driver_internal_info', 'properties', 'instance_info', 'extra']) nodes = k.json(nodes, col);
      nodes = k.flag(nodes, 'maintenance', false);
      nodes = k.timestamp(nodes, 'provision_updated_at', { nullable: true });
      await k.timestamps(nodes).execute();
      await db.schema.createIndex('nodes_conductor_group_idx').on('nodes').column('conductor_group').execute();
      await db.schema.createIndex('nodes_provision_state_idx').on('nodes').column('provision_state').execute();
      await db.schema.createIndex('nodes_reservation_idx').on('nodes').column('reservation').execute();

      await k
        .timestamps(
          k.json(
            k.json(
              k.flag(
                k.id(db.schema.createTable('ports'))
                  .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
                  .addColumn('address', 'varchar(18)', (c) => c.notNull().unique())
                  .addColumn('node_id', 'integer', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
                  .addColumn('physical_network', 'varchar(64)'),
                'pxe_enabled',
                true,
              ),
              'local_link_connection',
            ),
            'extra',
          ),
        )
        .execute();
      await db.schema.createIndex('ports_node_id_idx').on('ports').column('node_id').execute();

      await k
        .timestamp(
          k.id(db.schema.createTable('node_history'))
            .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
            .addColumn('node_id', 'integer', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
            .addColumn('conductor', 'varchar(255)')
            .addColumn('event_type', 'varchar(255)', (c) => c.notNull())
            .addColumn('severity', 'varchar(255)', (c) => c.notNull())
            .addColumn('event', 'text', (c) => c.notNull())
            .addColumn('user', 'varchar(255)'),
          'created_at',
          { defaultNow: true },
        )
        .execute();
      await db.schema.createIndex('node_history_node_id_idx').on('node_history').columns(['node_id', 'created_at']).execute();
    },
    async down(db: Kysely<unknown>) {
      for (const table of ['node_history', 'ports', 'nodes', 'conductor_hardware_interfaces', 'conductors']) {
        await db.schema.dropTable(table).execute();
      }
    },
  };
}
