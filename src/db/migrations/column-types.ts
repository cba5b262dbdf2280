/**
 * Column types that differ between the engines, so one migration serves both. SQLite stores flags
 * as 0/1, timestamps as ISO-8601 text (which sorts like time) and JSON as text; PostgreSQL uses
 * boolean, timestamptz and jsonb.
 */
import { sql } from 'kysely';
import type { ColumnDefinitionBuilder, CreateTableBuilder, Expression } from 'kysely';
import type { Engine } from '../connect.js';
import { SQLITE_TIME_FORMAT } from '../sqlite-values.js';

type Build = (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;

export interface ColumnKit {
  /** Adds an auto-incrementing integer primary key `id`. */
  id<T extends string>(t: CreateTableBuilder<T, never>): CreateTableBuilder<T, 'id'>;
  /** Adds a timestamp column; `defaultNow` fills it with the database clock on insert. */
  timestamp<T extends string, C extends string>(t: CreateTableBuilder<T, C>, name: string, opts?: { defaultNow?: boolean; nullable?: boolean }): CreateTableBuilder<T, C>;
  /** Adds a JSON column defaulting to `{}` (or `[]`). */
  json<T extends string, C extends string>(t: CreateTableBuilder<T, C>, name: string, empty?: '{}' | '[]'): CreateTableBuilder<T, C>;
  /** Adds a not-null boolean column with a default. */
  flag<T extends string, C extends string>(t: CreateTableBuilder<T, C>, name: string, initial: boolean): CreateTableBuilder<T, C>;
  /** Adds `created_at` and `updated_at`, both defaulting to the database clock. */
  timestamps<T extends string, C extends string>(t: CreateTableBuilder<T, C>): CreateTableBuilder<T, C>;
}

export function columnKit(engine: Engine): ColumnKit {
  const pgsql = engine === 'postgres';
  const now: Expression<unknown> = pgsql ? sql`CURRENT_TIMESTAMP` : sql`(strftime(${sql.lit(SQLITE_TIME_FORMAT)}, 'now'))`;
  const kit: ColumnKit = {
    id: (t) => (pgsql ? t.addColumn('id', 'serial', (c) => c.primaryKey()) : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())),
    timestamp(t, name, opts = {}) {
      const build: Build = (c) => {
        let out = c;
        if (!opts.nullable) out = out.notNull();
        if (opts.defaultNow) out = out.defaultTo(now);
        return out;
      };
      return t.addColumn(name, pgsql ? 'timestamptz' : 'text', build);
    },
    json(t, name, empty = '{}') {
      return t.addColumn(name, pgsql ? 'jsonb' : 'text', (c) => c.notNull().defaultTo(pgsql ? sql`${sql.lit(empty)}::jsonb` : sql.lit(empty)));
    },
    flag(t, name, initial) {
      return t.addColumn(name, pgsql ? 'boolean' : 'integer', (c) => c.notNull().defaultTo(pgsql ? initial : initial ? 1 : 0));
    },
    timestamps(t) {
      return kit.timestamp(kit.timestamp(t, 'created_at', { defaultNow: true }), 'updated_at', { defaultNow: true });
    },
  };
  return kit;
}
