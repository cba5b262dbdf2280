import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { runCli, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { ringsSeen, startConductor, waitUntil } from '../helpers/conductors.js';
import type { RunningConductor } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

describe('client commands against a running API and conductors', () => {
  let target: TestDatabase;
  let store: Store;
  let api: CliProcess;
  let base: string;
  const conductors: RunningConductor[] = [];
  const uuids = Array.from({ length: 12 }, () => randomUUID());

  beforeAll(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    await store.db
      .insertInto('nodes')
      .values(uuids.map((uuid, i) => ({ uuid, name: `node-${i}`, driver: 'fake-hardware', provision_state: 'available' })))
      .execute();
    api = startCli(['api', '--database', target.url, '--api-address', '127.0.0.1:0']);
    base = (await api.waitForOutput(/at (http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
    conductors.push(await startConductor(target.url, 'c1'), await startConductor(target.url, 'c2'));
    await waitUntil(async () => (await ringsSeen(conductors)).every((r) => r.join() === 'c1,c2'), 10_000, 'both conductors to see each other');
  });
  afterAll(async () => {
    for (const p of [api, ...conductors.map((c) => c.proc)]) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await store.close();
    await target.drop();
  });

  it('conductor list shows both conductors alive', () => {
    const res = runCli(['conductor', 'list', '--url', base, '--format', 'json']);
    expect(res.code, res.stderr).toBe(0);
    const rows = JSON.parse(res.stdout) as Array<{ hostname: string; alive: boolean }>;
    expect(rows.map((r) => [r.hostname, r.alive])).toEqual([
      ['c1', true],
      ['c2', true],
    ]);
    const table = runCli(['conductor', 'list', '--url', base]);
    expect(table.stdout).toMatch(/│ Hostname │ Conductor Group │ Alive │ Last Heartbeat/);
    expect(table.stdout).toMatch(/│ c2 +│ +│ true +│ \d{4}-/);
  });

  it('ring show gives each node an owner and a replica, and counts per conductor', () => {
    const res = runCli(['ring', 'show', '--url', base, '--format', 'json']);
    expect(res.code, res.stderr).toBe(0);
    const ring = JSON.parse(res.stdout) as { nodes: Array<{ uuid: string; owner: string; replicas: string[] }>; groups: Array<{ node_counts: Record<string, number> }> };
    expect(ring.nodes.map((n) => n.uuid).sort()).toEqual([...uuids].sort());
    for (const n of ring.nodes) expect([n.owner, ...n.replicas].sort()).toEqual(['c1', 'c2']);
    expect(ring.groups[0]!.node_counts.c1! + ring.groups[0]!.node_counts.c2!).toBe(12);
    const one = runCli(['ring', 'show', '--url', base, '--node', 'node-3']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(uuids[3]);
    expect(one.stdout).not.toContain('Nodes owned');
  });

  it('says what is wrong when the node or the API is not there', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const freePort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const missing = runCli(['ring', 'show', '--url', base, '--node', 'ghost']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`ironring: 404 from ${base}/v1/ring?node=ghost: node ghost could not be found\n`);
    const down = runCli(['conductor', 'list', '--url', `http://127.0.0.1:${freePort}`]);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`ironring: cannot reach the ironring API at http://127.0.0.1:${freePort}: connection refused (is \`ironring api\` or \`ironring up\` running? point --url at it)\n`);
  });
});
