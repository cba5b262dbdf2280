/**
 * `inspection_rules`: the operator's rules the node's owner runs on an inspection's findings
 * (Ironic's 1.96 resource; src/nodes/inspection-rules.ts says which part of it ironring takes).
 */
import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connect.js';
import { columnKit } from './column-types.js';

export function baremetalInspectionRules(engine: Engine): Migration {
  const k = columnKit(engine);
  return {
    async up(db: Kysely<unknown>) {
      await k
        .timestamps(
          k.json(
            k.json(
              k.flag(
                k.id(db.schema.createTable('inspection_rules'))
                  .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
                  .addColumn('description', 'varchar(255)')
                  .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
                  .addColumn('phase', 'varchar(16)', (c) => c.notNull().defaultTo('main')),
                'sensitive',
                false,
              ),
              'conditions',
              '[]',
            ),
            'actions',
            '[]',
          ),
        )
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('inspection_rules').execute();
    },
  };
}
