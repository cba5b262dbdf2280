/**
 * `ring_events`: a short, durable record of what changed the conductors' rings — a conductor joined,
 * left (graceful stop) or died (heartbeat expired, seen by a survivor) — and of the reconcile passes
 * that followed, with the nodes each took over and how long it ran. The dashboard's take-over
 * timeline reads it; writers keep only the last events (`ring-events.ts`). `dedupe_key` lets several
 * survivors report one death once (NULLs never collide). `at` is the database clock.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalRingEvents(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .json(
          k.timestamp(
            k.id(db.schema.createTable('ring_events'))
              .addColumn('kind', 'varchar(16)', (c) => c.notNull())
              .addColumn('conductor_group', 'varchar(255)', (c) => c.notNull().defaultTo(''))
              .addColumn('hostname', 'varchar(255)', (c) => c.notNull())
              .addColumn('nodes_moved', 'integer')
              .addColumn('pending', 'integer')
              .addColumn('duration_ms', 'integer')
              .addColumn('dedupe_key', 'varchar(600)', (c) => c.unique()),
            'at',
            { defaultNow: true },
          ),
          'detail',
        )
        .execute();
      await db.schema.createIndex('ring_events_at_idx').on('ring_events').column('at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('ring_events').execute();
    },
  };
}
