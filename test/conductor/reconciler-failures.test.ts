import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { Conductor } from '../../src/conductor/conductor.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

describe('reconcile passes that fail', () => {
  let target: TestDatabase;
  let store: Store;
  let conductor: Conductor;
  let dataDir: string;

  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-recfail-'));
    const config = loadConfig({ env: testConductorEnv(dataDir, { IRONRING_HOST: 'cond-1' }) }).config;
    conductor = new Conductor({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    await conductor.start();
  });
  afterEach(async () => {
    await conductor.stop();
    await store.close();
    await target.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const passFailures = async () => (await conductor.metrics.passFailures.get()).values[0]?.value ?? 0;
  const metricsText = () => conductor.metrics.registry.metrics();

  it('are counted in ironring_conductor_reconcile_pass_failures_total and retried until a pass works again', async () => {
    await conductor.reconciler.nextPass();
    expect(await passFailures()).toBe(0);
    // The pass reads the ports: without the table every pass fails.
    await sql`alter table ports rename to ports_away`.execute(store.db);
    conductor.reconciler.trigger('test');
    await waitUntil(async () => (await passFailures()) >= 1, 30_000, 'a counted pass failure');
    expect(await metricsText()).toMatch(/^ironring_conductor_reconcile_pass_failures_total\{[^}]*\} [1-9]/m);
    const lastGood = conductor.reconciler.last;
    await sql`alter table ports_away rename to ports`.execute(store.db);
    // Nobody asks again: the retry after the back-off runs the next pass, and it works.
    await waitUntil(() => conductor.reconciler.last !== lastGood, 90_000, 'a successful pass after the failures');
    expect(conductor.reconciler.last?.trigger).toContain('retry');
  });
});
