/**
 * `nodes.owner` (Ironic's API 1.50): the project that owns a node, free text of at most 255
 * characters, null for none. ironring has no projects to check it against (auth is noauth or
 * HTTP Basic): it is kept, shown and filtered on (`?owner=`, hence the index). `nodes.description`
 * (1.51) has been a column since the first migration.
 */
import type { Kysely, Migration } from 'kysely';

export function baremetalNodeOwner(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('nodes').addColumn('owner', 'varchar(255)').execute();
      await db.schema.createIndex('nodes_owner_idx').on('nodes').column('owner').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('nodes_owner_idx').execute();
      await db.schema.alterTable('nodes').dropColumn('owner').execute();
    },
  };
}
