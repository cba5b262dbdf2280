import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LazyComputeStores, openComputeStores } from '../../src/cells/compute-stores.js';
import { openDatabase } from '../../src/db/connect.js';
import { migrateDatabase, SchemaNotMigrated } from '../../src/db/migrate.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

describe('compute stores opened from the API database URL', () => {
  let target: TestDatabase;
  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
  });
  afterEach(async () => {
    await target.drop();
  });

  const migrate = async () => {
    const store = await openDatabase(target.url);
    await migrateDatabase(store, ['api', 'cell']);
    await store.close();
  };

  it('refuses an API database without its schema, and shares the API handle with cells kept in it', async () => {
    await expect(openComputeStores(target.url, { open: {} })).rejects.toThrow(SchemaNotMigrated);
    await migrate();
    const stores = await openComputeStores(target.url, { open: {} });
    expect(await stores.cells.open(target.url)).toBe(stores.api);
    await stores.cells.close();
    await stores.api.close();
  });

  it('opens once on demand, tries again after a failed open, and closes what it opened', async () => {
    let opens = 0;
    const lazy = new LazyComputeStores(() => {
      opens++;
      return openComputeStores(target.url, { open: {} });
    });
    await expect(lazy.get()).rejects.toThrow(SchemaNotMigrated);
    await migrate();
    const [a, b] = await Promise.all([lazy.get(), lazy.get()]);
    expect(a).toBe(b);
    expect(opens).toBe(2);
    await lazy.close();
    await expect(a.api.now()).rejects.toThrow();
  });
});
