/**
 * The node's agent token digest (`agent_token_hash`): a column of its own rather than a key of
 * `driver_internal_info` (where Ironic keeps the token in clear), so that no node view, which shows
 * `driver_internal_info`, can ever carry it.
 */
import type { Kysely, Migration } from 'kysely';

export function baremetalAgentToken(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('nodes').addColumn('agent_token_hash', 'varchar(64)').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('nodes').dropColumn('agent_token_hash').execute();
    },
  };
}
