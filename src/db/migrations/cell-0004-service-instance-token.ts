/**
 * A token per start of a service process (`services.instance_token`), written at each registration.
 * It tells "this row still belongs to the process that crashed" from "someone else took the row
 * since": a restarted `ironring up` whose predecessor is provably gone (its lock file names a dead
 * process) takes its rows back at once only while they still carry that predecessor's token, instead
 * of waiting out `service_down_time`.
 */
import type { Kysely, Migration } from 'kysely';

export function cellServiceInstanceToken(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('services').addColumn('instance_token', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('services').dropColumn('instance_token').execute();
    },
  };
}
