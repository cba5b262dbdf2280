import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

describe('SQLite values read as PostgreSQL gives them', () => {
  let target: TestDatabase;
  let store: Store;
  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
  });
  afterEach(async () => {
    await store.close();
    await target.drop();
  });

  const insert = (uuid: string, name: string) =>
    store.db
      .insertInto('nodes')
      .values({ uuid, name, driver: 'fake-hardware', provision_state: 'enroll', maintenance: true, properties: JSON.stringify({ cpus: 8, tags: ['a'] }), created_at: store.sqlNow(), updated_at: store.sqlNow() })
      .returningAll()
      .executeTakeFirstOrThrow();

  it('booleans, timestamps and JSON columns come back typed, from SELECT and from RETURNING', async () => {
    const returned = await insert('00000000-0000-4000-8000-000000000001', 'n1');
    const selected = await store.db.selectFrom('nodes').selectAll().where('uuid', '=', returned.uuid).executeTakeFirstOrThrow();
    for (const row of [returned, selected]) {
      expect(row.maintenance).toBe(true);
      expect(row.properties).toEqual({ cpus: 8, tags: ['a'] });
      expect(row.created_at).toBeInstanceOf(Date);
      expect(row.provision_updated_at).toBeNull();
      expect(row.name).toBe('n1');
    }
    // Every row of a result has the same columns, in the statement's order.
    await insert('00000000-0000-4000-8000-000000000002', 'n2');
    const rows = await store.db.selectFrom('nodes').select(['name', 'maintenance', 'uuid']).orderBy('name').execute();
    expect(rows).toEqual([
      { name: 'n1', maintenance: true, uuid: '00000000-0000-4000-8000-000000000001' },
      { name: 'n2', maintenance: true, uuid: '00000000-0000-4000-8000-000000000002' },
    ]);
    expect(rows.map((r) => Object.keys(r))).toEqual([['name', 'maintenance', 'uuid'], ['name', 'maintenance', 'uuid']]);
  });

  it('a column name that occurs twice keeps the last value, and streamed rows are converted too', async () => {
    const node = await insert('00000000-0000-4000-8000-000000000003', 'n3');
    await store.db.insertInto('ports').values({ uuid: '00000000-0000-4000-8000-0000000000a1', node_id: node.id, address: '52:54:00:00:00:01', created_at: store.sqlNow(), updated_at: store.sqlNow() }).execute();
    const joined = await sql<{ uuid: string }>`select nodes.uuid, ports.uuid from nodes join ports on ports.node_id = nodes.id`.execute(store.db);
    expect(joined.rows).toEqual([{ uuid: '00000000-0000-4000-8000-0000000000a1' }]);
    const streamed: unknown[] = [];
    for await (const row of store.db.selectFrom('nodes').select(['uuid', 'maintenance', 'properties']).stream()) streamed.push(row);
    expect(streamed).toEqual([{ uuid: node.uuid, maintenance: true, properties: { cpus: 8, tags: ['a'] } }]);
  });
});
