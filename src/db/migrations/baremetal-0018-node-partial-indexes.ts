/**
 * The nodes' indexes on columns that most rows leave NULL — reservation (held only while a task
 * runs), chassis, owner, allocation, lessee, shard — become partial (`where … is not null`). A node
 * created or updated without those values then writes no entry to them: each of the six cost every
 * insert an index write for a value nobody looks up. Every query that uses them asks for a value
 * (`reservation = ?`, `owner = ?`, `shard in (…)`), which implies `is not null`, so both engines
 * still answer it from the index; `is null` questions (`?sharded=false`) match most rows and were
 * scans of the table either way.
 */
import { sql } from 'kysely';
import type { Kysely, Migration } from 'kysely';

const COLUMNS = ['reservation', 'chassis_id', 'owner', 'allocation_id', 'lessee', 'shard'] as const;

async function rebuild(db: Kysely<unknown>, partial: boolean): Promise<void> {
  for (const column of COLUMNS) {
    const name = `nodes_${column}_idx`;
    await db.schema.dropIndex(name).execute();
    const index = db.schema.createIndex(name).on('nodes').column(column);
    await (partial ? index.where(sql.ref(column), 'is not', null) : index).execute();
  }
}

export function baremetalNodePartialIndexes(): Migration {
  return {
    up: (db) => rebuild(db, true),
    down: (db) => rebuild(db, false),
  };
}
