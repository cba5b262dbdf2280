/**
 * A database failure in the compute service's resource pass must not end `ironring up` (and with it
 * the API and the conductor): it is logged, counted and retried until the database is whole again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { COMPUTE_BINARY, registerService } from '../../src/compute/services.js';
import { openDatabase } from '../../src/db/connect.js';

let dir: string;
let running: CliProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-up-dbfail-'));
  running = [];
});
afterEach(async () => {
  for (const p of running) {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The JSON log lines `up` wrote to stderr so far. */
function logLines(proc: CliProcess): Array<Record<string, unknown>> {
  return proc
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Polls `check` until it returns a value (rejects if the process exits first, or after `timeoutMs`). */
async function waitUntil<T>(proc: CliProcess, what: string, check: () => T | undefined, timeoutMs = 90_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (proc.child.exitCode !== null) throw new Error(`ironring up exited (code ${proc.child.exitCode}) while waiting for ${what}; stderr:\n${proc.stderr().slice(-4000)}`);
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}; stderr:\n${proc.stderr().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('ironring up when the compute tables break', () => {
  it('stays up, answers on the API, logs and counts the failed resource passes, and recovers once compute_nodes is back', async () => {
    const proc = startCli(
      ['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'],
      { cwd: dir },
    );
    running.push(proc);
    const base = (await proc.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 60_000))[1]!;
    const H = { 'X-OpenStack-Ironic-API-Version': 'latest', 'content-type': 'application/json' };
    const created = await fetch(`${base}/v1/nodes`, { method: 'POST', headers: H, body: JSON.stringify({ driver: 'fake-hardware', resource_class: 'baremetal' }) });
    expect(created.status).toBe(201);
    const node = ((await created.json()) as { uuid: string }).uuid;

    const db = new BetterSqlite3(path.join(dir, 'ironring.db'));
    db.pragma('busy_timeout = 10000');
    const store = await openDatabase(`sqlite://${path.join(dir, 'ironring.db')}`);
    try {
      const computeNodeHosts = () => db.prepare('select host from compute_nodes where hypervisor_hostname = ? or uuid = ?').all(node, node) as Array<{ host: string }>;
      // The node is exposed by this process's compute service first (its periodic pass).
      await waitUntil(proc, 'the node to get a compute node', () => (computeNodeHosts().length > 0 ? true : undefined));

      const schema = db.prepare("select sql from sqlite_master where tbl_name = 'compute_nodes' and sql is not null order by case type when 'table' then 0 else 1 end").all() as Array<{ sql: string }>;
      db.exec('drop table compute_nodes');
      // A membership change asks for a resource pass at once (the path that used to reject into a `void` call).
      await registerService(store, { host: 'other-compute', binary: COMPUTE_BINARY }, 60);

      const failure = await waitUntil(proc, 'a logged resource-pass failure', () =>
        logLines(proc).find((l) => l.msg === 'compute resource update failed; retrying' && String(l.err).includes('compute_nodes')),
      );
      expect(failure).toMatchObject({ level: 40, work: 'compute resource update', failures: expect.any(Number), consecutiveFailures: expect.any(Number) });
      expect(failure.failures as number).toBeGreaterThanOrEqual(1);

      // The process is still up: the API answers, and so does the conductor's listing.
      expect(proc.child.exitCode).toBeNull();
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      const nodes = await fetch(`${base}/v1/nodes`, { headers: H });
      expect(nodes.status).toBe(200);
      expect(((await nodes.json()) as { nodes: Array<{ uuid: string }> }).nodes.map((n) => n.uuid)).toEqual([node]);

      // Counted: each later failure carries a higher count.
      await waitUntil(proc, 'a second counted failure', () =>
        logLines(proc).find((l) => l.msg === 'compute resource update failed; retrying' && (l.failures as number) >= 2),
      );

      // Whole again: the table is back and the other service gone; the next retry works.
      await store.db.deleteFrom('services').where('host', '=', 'other-compute').execute();
      for (const { sql } of schema) db.exec(sql);
      await waitUntil(proc, 'the resource pass to work again', () => logLines(proc).find((l) => l.msg === 'compute resource update works again'));
      await waitUntil(proc, 'the compute node to be recreated', () => (computeNodeHosts().length > 0 ? true : undefined));
      expect(computeNodeHosts()).toEqual([{ host: 'aio' }]);
    } finally {
      db.close();
      await store.close();
    }
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
  }, 240_000);
});
