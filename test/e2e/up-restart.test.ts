/**
 * Issue #14 item 16, through the real process: after a kill -9, `ironring up` comes back at once on
 * the same host and data directory (its conductor, compute service and scheduler rows still have
 * fresh heartbeats, and default timeouts of 60 s: it used to be refused until they expired), while
 * a second `ironring up` beside a live one is refused with one line and a non-zero exit.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const H = { 'x-openstack-ironic-api-version': 'latest', accept: 'application/json' };

const engines = await testEngines();

describe.each(engines)('ironring up on %s restarted after kill -9', (engine) => {
  const procs: CliProcess[] = [];
  const dbs: TestDatabase[] = [];
  let dir = '';
  let database: string[] = [];
  let env: Record<string, string> = {};
  afterEach(async () => {
    for (const p of procs) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
    for (const d of dbs) await d.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  // Default heartbeat timeouts (60 s) on purpose: the restart must not wait for them.
  const up = () => {
    const args = ['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio', ...database];
    const proc = startCli(args, { cwd: dir, env });
    procs.push(proc);
    return proc;
  };
  const apiOf = async (proc: CliProcess) => (await proc.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 40_000))[1]!;

  it('comes back in seconds, refuses a duplicate beside a live one, and frees its lock on SIGTERM', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-up-restart-'));
    if (engine === 'postgres') {
      const [main, api] = await Promise.all([createTestDatabase('postgres'), createTestDatabase('postgres')]);
      dbs.push(main, api);
      database = ['--database', main.url];
      env = { IRONRING_API_DATABASE_URL: api.url };
    }
    const first = up();
    await apiOf(first);
    first.child.kill('SIGKILL');
    await first.exited;

    const started = Date.now();
    const second = up();
    const api = await apiOf(second);
    const took = Date.now() - started;
    console.info(`up restarted ${took} ms after kill -9`);
    expect(took).toBeLessThan(30_000);
    expect(second.stderr()).toMatch(/the previous ironring up of this host and data directory is gone/);
    expect(existsSync(path.join(dir, 'up-aio.lock'))).toBe(true);
    // Every role is back under its own rows: the conductor, and the compute service and scheduler live.
    const conductors = (await (await fetch(`${api}/v1/conductors`, { headers: H })).json()) as { conductors: Array<{ hostname: string; alive: boolean }> };
    expect(conductors.conductors).toEqual([expect.objectContaining({ hostname: 'aio', alive: true })]);
    const services = (await (await fetch(`${api}/compute/v1/services`, { headers: H })).json()) as { services: Array<{ host: string; binary: string; state: string }> };
    expect(services.services.map((s) => [s.binary, s.host, s.state]).sort()).toEqual([['ironring-compute', 'aio', 'up'], ['ironring-scheduler', 'aio', 'up']]);

    // A duplicate beside the live one: one line, non-zero exit, and the live one is untouched.
    const duplicate = up();
    const code = await duplicate.exited;
    expect(code).not.toBe(0);
    expect(duplicate.stderr().trim().split('\n').at(-1)).toMatch(
      /^ironring: ironring up for host aio is already running from this data directory \(pid \d+, since [^;]+; lock file .*up-aio\.lock\); stop it first, or start this one with another --host or --data-dir$/,
    );
    expect(duplicate.stdout()).toBe('');
    expect((await fetch(`${api}/healthz`)).status).toBe(200);

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(existsSync(path.join(dir, 'up-aio.lock'))).toBe(false);
  }, 120_000);
});
