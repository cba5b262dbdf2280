import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { runCli } from '../helpers/cli.js';
import { EVENTUALLY_MS, TEST_HEARTBEAT_TIMEOUT, ringsSeen, startConductor, waitUntil } from '../helpers/conductors.js';
import type { RunningConductor } from '../helpers/conductors.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();

// Each test waits for a few events, each bounded by EVENTUALLY_MS: the default 30 s test timeout
// would be the idle-machine bound again.
describe.each(engines)('three conductor processes on %s', { timeout: 4 * EVENTUALLY_MS }, (engine) => {
  let target: TestDatabase;
  let store: Store;
  let running: RunningConductor[] = [];

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
  });
  afterEach(async () => {
    for (const c of running) {
      if (c.proc.child.exitCode === null) c.proc.child.kill('SIGKILL');
      await c.proc.exited;
    }
    running = [];
    await store.db.deleteFrom('nodes').execute();
    await store.db.deleteFrom('conductors').execute();
  });
  afterAll(async () => {
    await store.close();
    await target.drop();
  });

  async function start(host: string, options: Parameters<typeof startConductor>[2] = {}): Promise<RunningConductor> {
    const c = await startConductor(target.url, host, options);
    running.push(c);
    return c;
  }

  async function startThree(): Promise<RunningConductor[]> {
    const three = await Promise.all(['c1', 'c2', 'c3'].map((h) => start(h)));
    await waitUntil(async () => (await ringsSeen(three)).every((r) => r.join() === 'c1,c2,c3'), EVENTUALLY_MS, 'all three to see each other');
    return three;
  }

  it('see each other, and drop one that stops gracefully, which marks its row offline as it leaves', async () => {
    const [c1, c2, c3] = await startThree();
    const versionBefore = (await c1!.status()).ring_version;
    c2!.proc.child.kill('SIGTERM');
    expect(await c2!.proc.exited).toBe(0);
    // What makes the stop graceful, whatever the machine's speed: the row is offline when the
    // process is gone (a crashed conductor leaves it online until heartbeat_timeout judges it).
    const row = await store.db.selectFrom('conductors').select(['online']).where('hostname', '=', 'c2').executeTakeFirstOrThrow();
    expect(row.online).toBe(false);
    // How soon the survivors follow is bench/takeover.ts's "graceful" figure; here it is logged.
    const elapsed = await waitUntil(async () => (await ringsSeen([c1!, c3!])).every((r) => r.join() === 'c1,c3'), EVENTUALLY_MS, 'c2 to leave the rings');
    console.info(`[${engine}] graceful stop: both survivors dropped c2 ${elapsed} ms after it exited`);
    expect((await c1!.status()).ring_version).toBeGreaterThan(versionBefore);
  });

  it('drop a killed conductor once heartbeat_timeout has passed, release its locks, and take it back under the same id', async () => {
    const [c1, c2, c3] = await startThree();
    const c3Id = (await c3!.status()).id;
    const nodeUuid = randomUUID();
    // A lock the dead conductor held when it died.
    await store.db.insertInto('nodes').values({ uuid: nodeUuid, driver: 'fake-hardware', provision_state: 'active', reservation: 'c3' }).execute();

    c3!.proc.child.kill('SIGKILL');
    await c3!.proc.exited;
    // How soon is bench/takeover.ts's "crash" figure (detection is heartbeat_timeout); here it is logged.
    const elapsed = await waitUntil(async () => (await ringsSeen([c1!, c2!])).every((r) => r.join() === 'c1,c2'), EVENTUALLY_MS, 'c3 to leave the rings');
    console.info(`[${engine}] kill -9: both survivors dropped c3 ${elapsed} ms after the kill (heartbeat_timeout ${TEST_HEARTBEAT_TIMEOUT} s)`);
    await waitUntil(
      async () => (await store.db.selectFrom('nodes').select('reservation').where('uuid', '=', nodeUuid).executeTakeFirstOrThrow()).reservation === null,
      EVENTUALLY_MS,
      'the dead conductor\'s lock to be released',
    );
    const history = await store.db
      .selectFrom('node_history')
      .innerJoin('nodes', 'nodes.id', 'node_history.node_id')
      .select(['node_history.event', 'node_history.conductor'])
      .where('nodes.uuid', '=', nodeUuid)
      .where('node_history.event', 'like', 'lock held by%')
      .execute();
    expect(history).toHaveLength(1);
    expect(history[0]!.event).toMatch(/lock held by conductor c3 released/);
    expect(['c1', 'c2']).toContain(history[0]!.conductor);

    const back = await start('c3');
    expect((await back.status()).id).toBe(c3Id);
    await waitUntil(async () => (await ringsSeen([c1!, c2!, back])).every((r) => r.join() === 'c1,c2,c3'), EVENTUALLY_MS, 'c3 to rejoin');
  });

  it('refuse a second live conductor with the same host name', async () => {
    await start('c1');
    const res = runCli(['conductor', '--host', 'c1', '--database', target.url, '--rpc-address', '127.0.0.1:0'], {
      env: { IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: String(TEST_HEARTBEAT_TIMEOUT) },
    });
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n').at(-1)).toMatch(/^ironring: conductor c1 is already running \(last heartbeat [\d.]+ s ago by the database clock\); stop it first or start this one with another --host$/);
  });

  it('judge liveness by the database clock when process clocks are ten minutes off', async () => {
    const tenMinutes = 10 * 60 * 1000;
    const ahead = await start('ahead', { skewMs: tenMinutes });
    const behind = await start('behind', { skewMs: -tenMinutes });
    const honest = await start('honest');
    const all = [ahead, behind, honest];
    await waitUntil(async () => (await ringsSeen(all)).every((r) => r.join() === 'ahead,behind,honest'), EVENTUALLY_MS, 'all to see each other');
    // The skew is real: the ahead process stamps its logs ten minutes in the future.
    const logTime = /"time":"([^"]+)"/.exec(ahead.proc.stderr())![1]!;
    expect(new Date(logTime).getTime() - Date.now()).toBeGreaterThan(tenMinutes - 60_000);
    // Several heartbeat timeouts later, nobody has been judged dead, not even for a moment: no ring
    // changed in between.
    const versions = await Promise.all(all.map(async (c) => (await c.status()).ring_version));
    await new Promise((r) => setTimeout(r, (TEST_HEARTBEAT_TIMEOUT + 1) * 1000));
    expect((await ringsSeen(all)).map((r) => r.join())).toEqual(['ahead,behind,honest', 'ahead,behind,honest', 'ahead,behind,honest']);
    expect(await Promise.all(all.map(async (c) => (await c.status()).ring_version))).toEqual(versions);
  });

  it('refuse an invalid conductor group with exit code 2', () => {
    const res = runCli(['conductor', '--host', 'x', '--group', 'rack a', '--database', target.url]);
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('ironring: command line: [conductor] conductor_group: expected a string (letters, digits, _ . - only), got "rack a"\n');
  });

  if (engine === 'postgres') {
    it('keep running through a lost database connection and resume heartbeats', async () => {
      const c1 = await start('c1');
      const { Client } = (await import('pg')).default;
      const admin = new Client({ connectionString: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
      await admin.connect();
      try {
        const killed = await admin.query(
          "select pg_terminate_backend(pid) from pg_stat_activity where application_name in ('ironring-conductor-c1', 'ironring-listener') and pid <> pg_backend_pid()",
        );
        expect(killed.rowCount).toBeGreaterThan(0);
      } finally {
        await admin.end();
      }
      const before = (await store.db.selectFrom('conductors').select('updated_at').where('hostname', '=', 'c1').executeTakeFirstOrThrow()).updated_at;
      await waitUntil(
        async () => (await store.db.selectFrom('conductors').select('updated_at').where('hostname', '=', 'c1').executeTakeFirstOrThrow()).updated_at > before,
        EVENTUALLY_MS,
        'heartbeats to resume',
      );
      expect(c1.proc.child.exitCode).toBeNull();
      // Notifications resumed too: a newcomer is seen at once.
      const c2 = await start('c2');
      await waitUntil(async () => (await ringsSeen([c1, c2])).every((r) => r.join() === 'c1,c2'), EVENTUALLY_MS, 'c2 to be seen');
    });
  }
});
