/**
 * The default node listing order, `created_at` then `id`, as an index: `GET /v1/nodes?limit=1000`
 * and its keyset pagination walk the index instead of sorting the whole table on every page.
 */
import type { Kysely, Migration } from 'kysely';

export function baremetalNodeOrder(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('nodes_created_at_id_idx').on('nodes').columns(['created_at', 'id']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('nodes_created_at_id_idx').execute();
    },
  };
}
