/**
 * Why an instance is in `error`: the compute service writes the reason (a deploy that failed, a
 * node taken by someone else) so `server show` can say it without asking the bare-metal API.
 */
import type { Kysely, Migration } from 'kysely';

export function cellInstanceFault(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('instances').addColumn('fault', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('instances').dropColumn('fault').execute();
    },
  };
}
