/**
 * `nodes.traits`: the traits of a node (Ironic's API 1.37), names the scheduler matches against a
 * flavor's required traits, set by the operator or by inspection rules. A JSON list on the node's
 * own row (Ironic keeps a `node_traits` table): the API never filters by trait, and every node view
 * that shows traits reads the row anyway, so showing them costs no query of its own.
 */
import { sql } from 'kysely';
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';

export function baremetalNodeTraits(engine: Engine): Migration {
  const pg = engine === 'postgres';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('nodes')
        .addColumn('traits', pg ? 'jsonb' : 'text', (c) => c.notNull().defaultTo(pg ? sql`'[]'::jsonb` : sql.lit('[]')))
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('nodes').dropColumn('traits').execute();
    },
  };
}
