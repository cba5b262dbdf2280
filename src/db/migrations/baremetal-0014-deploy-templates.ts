/**
 * `deploy_templates` (Ironic's deploy templates, API 1.55): a uuid, a name that is a trait (unique:
 * a deploy matches templates by the traits its instance asks for), the deploy steps as a JSON list
 * (Ironic keeps them in a table of their own; they are only ever read and written whole here) and
 * free-form `extra`. The unique constraints make a duplicate name or uuid a 409 whatever the timing.
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalDeployTemplates(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.json(
            k.json(
              k.id(db.schema.createTable('deploy_templates'))
                .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
                .addColumn('name', 'varchar(255)', (c) => c.notNull().unique()),
              'steps',
              '[]',
            ),
            'extra',
          ),
        )
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('deploy_templates').execute();
    },
  };
}
