/**
 * Rescue through the agent, without a VM: the API and the node's owner in this process, `ironring
 * agent`'s `Agent` on a loopback port with its /etc and /run in a temporary directory. `rescue`
 * with a rescue password boots the agent (`rescue wait`); its first heartbeat gets
 * `rescue.finalize_rescue` with the password's crypt hash, the agent writes the `rescue` user, and
 * the node is `rescue` with the hash gone; `unrescue` boots the instance again. The password in
 * clear is never stored. The real-machine version is test/realnode/.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { finalizeRescue } from '../../src/agent/rescue-user.js';
import { createLogger } from '../../src/common/logger.js';
import { shaCrypt } from '../../src/common/sha-crypt.js';
import { loadConfig } from '../../src/config/load.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { startLoopbackAgent, untilState } from '../helpers/agent-runs.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };
const MAC = '52:54:00:aa:cc:01';
const PASSWORD = 'correct horse battery staple';

describe.each(engines)('agent rescue on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let apiUrl: string;
  let fake: FakeHardwareState;
  let root: string;
  const agents: Agent[] = [];
  const logs: string[] = [];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'ironring-rescue-'));
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    // Everything logged at debug, so that the password or its hash in any line would be seen.
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => { logs.push(chunk.toString()); done(); } });
    const logger = createLogger({ level: 'debug', pretty: false, destination: sink });
    fake = new FakeHardwareState();
    const drivers = createDriverRegistry({ fakeState: fake, agentApiUrl: 'http://api.invalid:6385' });
    ({ app, ops } = await startInProcessApi(db.store, config, logger, drivers));
    apiUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  });

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    await Promise.allSettled([...ops.running]);
    await app.close();
    await rm(root, { recursive: true, force: true });
  });

  async function activeNode(): Promise<string> {
    const created = await app.inject({ method: 'POST', url: '/v1/nodes', headers: LATEST, payload: { name: 'r1', driver: 'fake-hardware', rescue_interface: 'agent' } });
    expect(created.statusCode, created.body).toBe(201);
    const uuid = (created.json() as { uuid: string }).uuid;
    expect((await app.inject({ method: 'POST', url: '/v1/ports', headers: LATEST, payload: { address: MAC, node_uuid: uuid } })).statusCode).toBe(201);
    await db.store.db.updateTable('nodes').set({ provision_state: 'active', target_provision_state: null, power_state: 'power on' }).where('uuid', '=', uuid).execute();
    return uuid;
  }

  const row = (uuid: string) => db.store.db.selectFrom('nodes').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
  const provision = (uuid: string, payload: Record<string, unknown>) => app.inject({ method: 'PUT', url: `/v1/nodes/${uuid}/states/provision`, headers: LATEST, payload });

  const until = (uuid: string, states: string[], ms = 20_000) => untilState(() => row(uuid), states, ms);

  function startAgent(): Agent {
    const agent = startLoopbackAgent({ apiUrl, macs: [MAC], etcRoot: join(root, 'etc'), runRoot: join(root, 'run') });
    agents.push(agent);
    return agent;
  }

  it('rescues through the agent: the rescue user logs in with the password, whose hash is then dropped; unrescue boots the instance', async () => {
    const uuid = await activeNode();
    const res = await provision(uuid, { target: 'rescue', rescue_password: PASSWORD });
    expect(res.statusCode, res.body).toBe(202);
    const waiting = await until(uuid, ['rescue wait', 'rescue failed']);
    expect(waiting.provision_state, waiting.last_error ?? '').toBe('rescue wait');
    // Only the crypt hash is kept, and no view shows it.
    const hash = waiting.instance_info.hashed_rescue_password as string;
    expect(hash).toMatch(/^\$5\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{43}$/);
    expect(JSON.stringify(waiting)).not.toContain(PASSWORD);
    const shown = await app.inject({ method: 'GET', url: `/v1/nodes/${uuid}`, headers: LATEST });
    expect(shown.body).not.toContain(hash);
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', bootDevice: 'pxe', persistent: false, prepared: 'ramdisk' });

    const agent = startAgent();
    const rescued = await until(uuid, ['rescue', 'rescue failed']);
    expect(rescued.provision_state, rescued.last_error ?? '').toBe('rescue');
    expect(rescued.last_error).toBeNull();
    expect(agent.isRescued).toBe(true);
    const shadow = await readFile(join(root, 'etc', 'shadow'), 'utf8');
    const entry = shadow.split('\n').find((l) => l.startsWith('rescue:'))!;
    const stored = entry.split(':')[1]!;
    // The hash the agent wrote is the password's: crypt(password, its salt) gives it back.
    const salt = stored.split('$')[2]!;
    expect(shaCrypt(PASSWORD, 'sha256', { salt })).toBe(stored);
    expect((await stat(join(root, 'etc', 'shadow'))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(root, 'etc', 'passwd'), 'utf8')).toContain('rescue:x:0:0:');
    expect(await readFile(join(root, 'run', 'ironring-rescue'), 'utf8')).toBe('rescue\n');
    // The hash and the flag are gone with the rescue; so is the agent session.
    expect(rescued.instance_info).not.toHaveProperty('hashed_rescue_password');
    expect(rescued.driver_internal_info).not.toHaveProperty('rescue_finalized');
    expect(rescued.agent_token_hash).toBeNull();
    // The node stays up in the ramdisk.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', prepared: 'ramdisk' });
    const heartbeats = agent.heartbeats;
    await new Promise((r) => setTimeout(r, 600));
    expect(agent.heartbeats).toBe(heartbeats);
    // Nothing logged the password or its hash.
    expect(logs.join('')).not.toContain(PASSWORD);
    expect(logs.join('')).not.toContain(stored);

    expect((await provision(uuid, { target: 'unrescue' })).statusCode).toBe(202);
    const back = await until(uuid, ['active', 'unrescue failed']);
    expect(back.provision_state, back.last_error ?? '').toBe('active');
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', bootDevice: 'pxe', persistent: true });
  });

  it('refuses a rescue without a password, and a password with another action', async () => {
    const uuid = await activeNode();
    for (const payload of [{ target: 'rescue' }, { target: 'rescue', rescue_password: '   ' }, { target: 'rescue', rescue_password: 7 }]) {
      const res = await provision(uuid, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.body).toContain('rescue_password');
    }
    const other = await provision(uuid, { target: 'deleted', rescue_password: PASSWORD });
    expect(other.statusCode).toBe(400);
    expect(other.body).toContain('only valid when setting target provision state to rescue');
    expect((await row(uuid)).provision_state).toBe('active');
  });

  it('aborts a rescue waiting for its agent: rescue failed, the node off, the hash gone', async () => {
    const uuid = await activeNode();
    expect((await provision(uuid, { target: 'rescue', rescue_password: PASSWORD })).statusCode).toBe(202);
    await until(uuid, ['rescue wait']);
    expect((await provision(uuid, { target: 'abort' })).statusCode).toBe(202);
    const failed = await until(uuid, ['rescue failed']);
    expect(failed.last_error).toBe('By request, the rescue operation has been aborted');
    expect(failed.instance_info).not.toHaveProperty('hashed_rescue_password');
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off', prepared: null });
  });
});

describe('rescue.finalize_rescue on the agent', () => {
  it('takes only a crypt hash, and keeps the entries that were there', async () => {
    const root = await mkdtemp(join(tmpdir(), 'ironring-rescue-user-'));
    try {
      const roots = { etc: join(root, 'etc'), run: join(root, 'run') };
      await expect(finalizeRescue({ rescue_password: 'plain', hashed: false }, roots)).rejects.toThrow(/hashed/);
      await expect(finalizeRescue({ rescue_password: 'plain', hashed: true }, roots)).rejects.toThrow(/crypt hash/);
      await expect(finalizeRescue({ rescue_password: '$5$salt$x:y', hashed: true }, roots)).rejects.toThrow(/crypt hash/);
      const first = shaCrypt('one', 'sha512');
      expect(await finalizeRescue({ rescue_password: first, hashed: true }, roots)).toContain('SHA-512');
      const second = shaCrypt('two');
      await finalizeRescue({ rescue_password: second, hashed: true }, roots);
      const shadow = await readFile(join(roots.etc, 'shadow'), 'utf8');
      // One rescue entry, the newest; root's stays locked.
      expect(shadow.split('\n').filter((l) => l.startsWith('rescue:'))).toEqual([`rescue:${second}:0:0:99999:7:::`]);
      expect(shadow).toContain('root:*:');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
