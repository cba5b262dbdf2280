/** The compute tier's API database: cell mappings, host mappings, instance mappings. */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function apiInitial(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.flag(
            k.id(db.schema.createTable('cell_mappings'))
              .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
              .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
              .addColumn('transport_url', 'text')
              .addColumn('database_connection', 'text', (c) => c.notNull()),
            'disabled',
            false,
          ),
        )
        .execute();

      await k
        .timestamps(
          k.id(db.schema.createTable('host_mappings'))
            .addColumn('cell_id', 'integer', (c) => c.notNull().references('cell_mappings.id'))
            // A host belongs to exactly one cell: unique across all cells, as in Nova.
            .addColumn('host', 'varchar(255)', (c) => c.notNull().unique()),
        )
        .execute();
      await db.schema.createIndex('host_mappings_cell_id_idx').on('host_mappings').column('cell_id').execute();

      await k
        .timestamps(
          k.flag(
            k.id(db.schema.createTable('instance_mappings'))
              .addColumn('instance_uuid', 'varchar(36)', (c) => c.notNull().unique())
              .addColumn('cell_id', 'integer', (c) => c.references('cell_mappings.id'))
              .addColumn('project_id', 'varchar(255)'),
            'queued_for_delete',
            false,
          ),
        )
        .execute();
    },
    async down(db: Kysely<unknown>) {
      for (const table of ['instance_mappings', 'host_mappings', 'cell_mappings']) await db.schema.dropTable(table).execute();
    },
  };
}
