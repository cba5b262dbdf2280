/**
 * The server listing order, `created_at` then `uuid`, as an index: a page of
 * `GET /compute/v1/servers?limit=&marker=` (and of the dashboard's compute page) is a range of it in
 * each cell database, `(created_at, uuid) > (marker's)`, instead of a sort of the whole table.
 */
import type { Kysely, Migration } from 'kysely';

export function cellInstanceOrder(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('instances_created_at_uuid_idx').on('instances').columns(['created_at', 'uuid']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('instances_created_at_uuid_idx').execute();
    },
  };
}
