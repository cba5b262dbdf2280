/**
 * Ironic's volume connectors and volume targets (API 1.32): how a node reaches its remote storage
 * (`volume_connectors`: an initiator's type and id, unique together across all nodes) and the
 * volumes it boots from or attaches (`volume_targets`: one per boot index of a node). Both belong to
 * a node by a foreign key with ON DELETE CASCADE, so deleting a node deletes them, as Ironic's
 * node deletion does; the indexes serve the per-node lists.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalVolume(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.json(
            k.id(db.schema.createTable('volume_connectors'))
              .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
              .addColumn('node_id', 'integer', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
              .addColumn('type', 'varchar(32)', (c) => c.notNull())
              .addColumn('connector_id', 'varchar(255)', (c) => c.notNull())
              .addUniqueConstraint('volume_connectors_type_connector_id_key', ['type', 'connector_id']),
            'extra',
          ),
        )
        .execute();
      await db.schema.createIndex('volume_connectors_node_id_idx').on('volume_connectors').column('node_id').execute();
      await k
        .timestamps(
          k.json(
            k.json(
              k.id(db.schema.createTable('volume_targets'))
                .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
                .addColumn('node_id', 'integer', (c) => c.references('nodes.id').onDelete('cascade'))
                .addColumn('volume_type', 'varchar(64)', (c) => c.notNull())
                .addColumn('boot_index', 'integer', (c) => c.notNull())
                .addColumn('volume_id', 'varchar(36)', (c) => c.notNull())
                .addUniqueConstraint('volume_targets_node_id_boot_index_key', ['node_id', 'boot_index']),
              'properties',
            ),
            'extra',
          ),
        )
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('volume_targets').execute();
      await db.schema.dropIndex('volume_connectors_node_id_idx').execute();
      await db.schema.dropTable('volume_connectors').execute();
    },
  };
}
