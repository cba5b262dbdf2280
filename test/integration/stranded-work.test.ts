/**
 * Issue #14 item 13: no node left stranded after a crash. Real conductor processes; the rows are
 * staged as a conductor doing their work leaves them (working or waiting state, its lock held),
 * then that conductor is killed with SIGKILL. Whoever owns the nodes next — another conductor, or
 * the same one restarted — must resume each working state or fail it to its Ironic failure state
 * with `last_error`, release the lock, and leave the node where the API accepts an action again.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { ensureSecret } from '../../src/auth/hmac.js';
import { listConductors } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { startConductor, TEST_HEARTBEAT_INTERVAL, TEST_HEARTBEAT_TIMEOUT, waitUntil } from '../helpers/conductors.js';
import type { RunningConductor } from '../helpers/conductors.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { seedDeployedNodes, stageStrandedNodes, strandedCases, writeTestImages } from '../helpers/takeover.js';
import type { StrandedCase, TestImages } from '../helpers/takeover.js';

const engines = await testEngines();
const H = { 'x-openstack-ironic-api-version': 'latest' };

describe.each(engines)('work left behind by a killed conductor on %s', { timeout: 120_000 }, (engine) => {
  let target: TestDatabase;
  let store: Store;
  let work: string;
  let images: TestImages;
  let app: FastifyInstance;
  let running: RunningConductor[] = [];
  let secretFile: string;

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    work = mkdtempSync(path.join(tmpdir(), 'ironring-stranded-'));
    images = writeTestImages(path.join(work, 'images'));
    // The API finds a node's conductor among the live ones, with the conductors' heartbeat timeout.
    // One RPC secret for the API and every conductor, as a deployment shares it.
    secretFile = path.join(work, 'rpc-secret');
    ensureSecret(secretFile);
    const config = loadConfig({ env: { IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: String(TEST_HEARTBEAT_TIMEOUT), IRONRING_JSON_RPC_SECRET_FILE: secretFile } }).config;
    app = buildApi({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
  });
  afterEach(async () => {
    for (const c of running) {
      if (c.proc.child.exitCode === null) c.proc.child.kill('SIGKILL');
      await c.proc.exited;
    }
    running = [];
    await store.db.deleteFrom('node_history').execute();
    await store.db.deleteFrom('ports').execute();
    await store.db.deleteFrom('nodes').execute();
    await store.db.deleteFrom('conductors').execute();
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await target?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  let dirs = 0;
  /** Starts a conductor; a restart passes the data directory of its previous life. */
  async function start(host: string, dataDir = path.join(work, `data-${host}-${++dirs}`)): Promise<RunningConductor> {
    const c = await startConductor(target.url, host, {
      dataDir,
      env: {
        IRONRING_LOG_LEVEL: 'info',
        IRONRING_CONDUCTOR_SYNC_LOCAL_STATE_INTERVAL: '0',
        IRONRING_JSON_RPC_SECRET_FILE: secretFile,
        // The test images live outside the conductor's data directory.
        IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: path.join(work, 'images'),
      },
    });
    running.push(c);
    return c;
  }

  async function killed(c: RunningConductor): Promise<void> {
    c.proc.child.kill('SIGKILL');
    await c.proc.exited;
  }

  type Row = { uuid: string; provision_state: string; target_provision_state: string | null; reservation: string | null; last_error: string | null; conductor_affinity: number | null };

  async function rows(uuids: readonly string[]): Promise<Map<string, Row>> {
    const found = await store.db
      .selectFrom('nodes')
      .select(['uuid', 'provision_state', 'target_provision_state', 'reservation', 'last_error', 'conductor_affinity'])
      .where('uuid', 'in', [...uuids])
      .execute();
    return new Map(found.map((r) => [r.uuid, r]));
  }

  /** True when the case's node rests where it must: expected state, no lock, affinity for the waiting ones. */
  function settled(c: StrandedCase, row: Row | undefined, owner: number): boolean {
    if (!row || row.provision_state !== c.expect || row.reservation !== null) return false;
    if (c.expect === c.state) return row.conductor_affinity === owner;
    // A resumed working state goes on to its stable target; nothing is left to do there.
    return c.lastError !== undefined || row.target_provision_state === null;
  }

  /** Waits for every case to settle, then checks errors, history, boot files and that the API accepts the next action. */
  async function verify(cases: readonly StrandedCase[], uuids: readonly string[], owner: RunningConductor): Promise<void> {
    const ownerId = (await owner.status()).id;
    let last = new Map<string, Row>();
    await waitUntil(
      async () => {
        last = await rows(uuids);
        return cases.every((c, i) => settled(c, last.get(uuids[i]!), ownerId));
      },
      60_000,
      'every node left behind to be resumed, taken over or failed',
    ).catch((err: unknown) => {
      const stuck = cases.map((c, i) => ({ c, row: last.get(uuids[i]!) })).filter(({ c, row }) => !settled(c, row, ownerId));
      throw new Error(`${(err as Error).message}:\n${stuck.map(({ c, row }) => `${c.name}: ${JSON.stringify(row)}`).join('\n')}\n${owner.proc.stderr().split('\n').filter((l) => /"level":[456]0/.test(l)).slice(-5).join('\n')}`);
    });

    const history = await store.db
      .selectFrom('node_history')
      .innerJoin('nodes', 'nodes.id', 'node_history.node_id')
      .select(['nodes.uuid', 'node_history.event', 'node_history.conductor'])
      .where('node_history.event', 'like', 'resuming%')
      .execute();
    for (const [i, c] of cases.entries()) {
      const uuid = uuids[i]!;
      const row = last.get(uuid)!;
      if (c.lastError) expect(row.last_error, c.name).toMatch(c.lastError);
      else expect(row.last_error, c.name).toBeNull();
      // A resumed state says so in the node's history, once, by the conductor that resumed it.
      const resumes = history.filter((h) => h.uuid === uuid && h.conductor === owner.host);
      expect(resumes.length, c.name).toBe(c.lastError === undefined && c.state !== c.expect ? 1 : 0);
      if (c.expect === c.state) {
        // Taken over: the deploy ramdisk boots from the new owner.
        const config = readFileSync(path.join(owner.dataDir, 'tftpboot', uuid, 'config'), 'utf8');
        expect(config, c.name).toContain(`${uuid}/deploy_kernel`);
      }
    }
    // Every node rests where an operator can act on it: the API accepts an action.
    for (const [i, c] of cases.entries()) {
      const res = await app.inject({ method: 'PUT', url: `/v1/nodes/${uuids[i]}/states/provision`, headers: H, payload: { target: c.then } });
      expect(`${c.name}: ${c.then} → ${res.statusCode} ${res.statusCode === 202 ? '' : res.body}`).toBe(`${c.name}: ${c.then} → 202 `);
    }
  }

  it('another conductor resumes or fails every working state of a conductor killed with SIGKILL, and takes over its waiting nodes', async () => {
    const [c1, c2] = await Promise.all([start('c1'), start('c2')]);
    await waitUntil(async () => (await c1.status()).rings['']?.length === 2 && (await c2.status()).rings['']?.length === 2, 10_000, 'both conductors to see each other');
    const cases = strandedCases();
    const uuids = await stageStrandedNodes(store, cases, images, 'c2');
    await killed(c2);
    await verify(cases, uuids, c1);
    // The survivor's /metrics count what it did with the work left behind.
    const metrics = await (await fetch(`${c1.rpcUrl}/metrics`)).text();
    const count = (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    expect(count('ironring_conductor_resumed_total')).toBe(cases.filter((c) => c.lastError === undefined && c.state !== c.expect).length);
    expect(count('ironring_conductor_stranded_failed_total')).toBe(cases.filter((c) => c.maintenance || c.resumedBefore).length);
  });

  it('the same conductor, restarted after SIGKILL, resumes or fails the work it left', async () => {
    const first = await start('c1');
    const cases = strandedCases();
    const uuids = await stageStrandedNodes(store, cases, images, 'c1');
    await killed(first);
    // A restart under the same name is refused while the old heartbeat is fresh (someone may still run it).
    await waitUntil(async () => !(await listConductors(store, TEST_HEARTBEAT_TIMEOUT)).some((c) => c.hostname === 'c1' && c.alive), 15_000, 'the killed conductor to be judged dead');
    const again = await start('c1', first.dataDir);
    await verify(cases, uuids, again);
  });
});

describe('ironring up killed with SIGKILL in the middle of an undeploy and a power action (SQLite)', { timeout: 90_000 }, () => {
  let dir: string;
  const procs: CliProcess[] = [];

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-stranded-up-'));
  });
  afterAll(async () => {
    for (const p of procs) {
      if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts `ironring up` on `dataDir` with short heartbeats; resolves with its API base URL, or null when it refused to start. */
  async function up(dataDir: string): Promise<{ proc: CliProcess; base: string } | null> {
    const proc = startCli(
      ['up', '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio', '--data-dir', dataDir],
      {
        cwd: dir,
        env: {
          IRONRING_CONDUCTOR_HEARTBEAT_INTERVAL: String(TEST_HEARTBEAT_INTERVAL),
          IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: String(TEST_HEARTBEAT_TIMEOUT),
          IRONRING_COMPUTE_REPORT_INTERVAL: '1',
          IRONRING_COMPUTE_SERVICE_DOWN_TIME: '2',
        },
      },
    );
    procs.push(proc);
    try {
      const m = await proc.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 30_000);
      return { proc, base: m[1]! };
    } catch {
      return null;
    }
  }

  it('the restarted process finishes the tear-down (or fails it for a node in maintenance) and the node takes actions again', async () => {
    const dataDir = path.join(dir, 'state');
    const first = await up(dataDir);
    expect(first).not.toBeNull();
    const store = await openDatabase(`sqlite://${path.join(dataDir, 'ironring.db')}`);
    try {
      const images = writeTestImages(path.join(dir, 'images'));
      // An undeploy under way in the process: `deleting`, locked by its conductor.
      const cases: StrandedCase[] = [
        { name: 'undeploy', state: 'deleting', target: 'available', expect: 'available', then: 'manage' },
        { name: 'undeploy in maintenance', state: 'deleting', target: 'available', maintenance: true, expect: 'error', lastError: /^"deleting" was interrupted .* the node is in maintenance; moved to "error"$/, then: 'deleted' },
      ];
      const uuids = await stageStrandedNodes(store, cases, images, 'aio');
      // And a power action under way on an active node.
      const [powering] = await seedDeployedNodes(store, 1, images, { first: 60_000, columns: { target_power_state: 'power off', reservation: 'aio' } });
      first!.proc.child.kill('SIGKILL');
      await first!.proc.exited;

      // A restart is refused while the killed process's heartbeats look fresh; it is accepted once they are stale.
      let again: { proc: CliProcess; base: string } | null = null;
      await waitUntil(async () => (again = await up(dataDir)) !== null, 30_000, 'ironring up to start again');
      const { base } = again!;
      const node = async (uuid: string) =>
        (await (await fetch(`${base}/v1/nodes/${uuid}`, { headers: H })).json()) as { provision_state: string; target_provision_state: string | null; reservation: string | null; last_error: string | null };
      for (const [i, c] of cases.entries()) {
        await waitUntil(async () => {
          const n = await node(uuids[i]!);
          return n.provision_state === c.expect && n.target_provision_state === null && n.reservation === null;
        }, 20_000, `${c.name} to end in ${c.expect}`).catch(async (err: unknown) => {
          throw new Error(`${(err as Error).message}: ${JSON.stringify(await node(uuids[i]!))}`);
        });
        const n = await node(uuids[i]!);
        if (c.lastError) expect(n.last_error).toMatch(c.lastError);
        else expect(n.last_error).toBeNull();
        const res = await fetch(`${base}/v1/nodes/${uuids[i]}/states/provision`, { method: 'PUT', headers: { ...H, 'content-type': 'application/json' }, body: JSON.stringify({ target: c.then }) });
        expect(`${c.name}: ${c.then} → ${res.status}`).toBe(`${c.name}: ${c.then} → 202`);
      }
      // The power action died with the process: its pending target is cleared, so the next one is accepted.
      const p = (await (await fetch(`${base}/v1/nodes/${powering!.uuid}`, { headers: H })).json()) as { target_power_state: string | null; reservation: string | null; last_error: string | null };
      expect(p).toMatchObject({ target_power_state: null, reservation: null });
      expect(p.last_error).toMatch(/^pending power action aborted: lock held by conductor aio released by conductor aio: conductor restarted$/);
      const power = await fetch(`${base}/v1/nodes/${powering!.uuid}/states/power`, { method: 'PUT', headers: { ...H, 'content-type': 'application/json' }, body: JSON.stringify({ target: 'power off' }) });
      expect(power.status).toBe(202);
    } finally {
      await store.close();
    }
  });
});
