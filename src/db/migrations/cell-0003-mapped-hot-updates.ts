/**
 * PostgreSQL: lets host discovery set the `mapped` bits of compute nodes and services in place.
 *
 * A PostgreSQL UPDATE writes a new row version. It is a HOT update — the new version on the same
 * page, no index touched — only when no index refers to a changed column (a partial index's
 * predicate counts; PostgreSQL 16 exempts BRIN indexes only) and the page has room. Otherwise every
 * index gets a new entry for the row, and the indexes on uuid and host first try to make room by
 * deleting old versions that are not dead yet: ~15 µs of CPU per row, 1.5 s for the first
 * discovery of 100,000 nodes, with a full or a partial (`where mapped = false`) index alike. In
 * place it is ~2.5 µs per row (docs/compute.md, "Measured").
 *
 * So on PostgreSQL:
 * - the `mapped` indexes go: the no-op discovery query becomes a sequential scan of the table
 *   (~10 ms for 100,000 nodes; it was one already whenever the statistics said "all unmapped");
 * - the tables keep half of each page free (fillfactor 50), room for a new version of every row of
 *   the page. It applies to pages written from now on; rows already stored stay packed until the
 *   table is rewritten (`VACUUM FULL`), which matters only for rows still unmapped. The same room
 *   lets the services' heartbeats (last_seen_up, report_count) be HOT updates.
 * SQLite updates rows in place and only touches the indexes on changed columns, so there the
 * `mapped` indexes stay and nothing changes.
 */
import type { Kysely, Migration } from 'kysely';
import { sql } from 'kysely';
import type { Engine } from '../connect.js';

const TABLES = ['compute_nodes', 'services'] as const;

export function cellMappedHotUpdates(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      for (const table of TABLES) {
        await db.schema.dropIndex(`${table}_mapped_idx`).ifExists().execute();
        await sql`alter table ${sql.table(table)} set (fillfactor = 50)`.execute(db);
      }
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      for (const table of TABLES) {
        await sql`alter table ${sql.table(table)} reset (fillfactor)`.execute(db);
        await db.schema.createIndex(`${table}_mapped_idx`).ifNotExists().on(table).column('mapped').execute();
      }
    },
  };
}
