/**
 * The `direct` deploy end to end, without a VM: the API and the node's owner in this process,
 * `ironring agent`'s `Agent` on a loopback port with a fake /sys whose disk is a file, and a real
 * HTTP image server. The agent looks up, heartbeats, gets `standby.prepare_image`, streams the image
 * onto the "disk", and the owner boots the node from it: `active` with the bytes on the disk, boot
 * device disk for good, the agent session wiped. A wrong digest ends as `deploy failed` with the
 * agent's message, the disk's start zeroed. The real-machine version is test/realnode/.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { untilState } from '../helpers/agent-runs.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { fakeMachine } from '../helpers/fake-machine.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };
const MAC = '52:54:00:aa:bb:01';
const MIB = 1024 * 1024;

/** A raw "disk image": an MBR with a boot signature and a disk signature, then random bytes. */
function diskImage(bytes: number): Buffer {
  const image = randomBytes(bytes);
  image.fill(0, 446, 510);
  image.writeUInt32LE(0xdeadbeef, 440);
  image[510] = 0x55;
  image[511] = 0xaa;
  return image;
}

describe.each(engines)('direct deploy through ironring agent on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let apiUrl: string;
  let root: string;
  let imageServer: http.Server;
  let imageUrl: string;
  let image: Buffer;
  let fake: FakeHardwareState;
  const agents: Agent[] = [];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'ironring-direct-'));
    // A machine with one 64 MiB virtio disk, backed by a file standing for /dev/vda.
    await fakeMachine(root, 64 * MIB);

    image = diskImage(5 * MIB + 123);
    imageServer = http.createServer((req, res) => {
      if (req.url !== '/images/disk.raw') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-length': image.length });
      res.end(image);
    });
    await new Promise<void>((resolve) => imageServer.listen(0, '127.0.0.1', resolve));
    imageUrl = `http://127.0.0.1:${(imageServer.address() as { port: number }).port}/images/disk.raw`;

    fake = new FakeHardwareState();
    await startApi();
  });

  /** The API and the node's owner in this process; `fastTrack` turns on `[deploy] fast_track`. */
  async function startApi(fastTrack = false): Promise<void> {
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    const logger = createLogger({ level: 'warn', pretty: false });
    // The boot files are fake here, so the URL the deploy ramdisk would get only has to be set.
    const drivers = createDriverRegistry({
      fakeState: fake,
      agentApiUrl: 'http://api.invalid:6385',
      agentClient: { timeoutSeconds: 10, attempts: 1 },
      ...(fastTrack ? { fastTrack: { enabled: true, timeoutSeconds: 300 } } : {}),
    });
    ({ app, ops } = await startInProcessApi(db.store, config, logger, drivers));
    apiUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  }

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    await Promise.allSettled([...ops.running]);
    await app.close();
    await new Promise<void>((resolve) => imageServer.close(() => resolve()));
    await rm(root, { recursive: true, force: true });
  });

  async function availableNode(instanceInfo: Record<string, unknown>): Promise<string> {
    const created = await app.inject({
      method: 'POST',
      url: '/v1/nodes',
      headers: LATEST,
      payload: { name: 'd1', driver: 'fake-hardware', deploy_interface: 'direct', instance_info: instanceInfo },
    });
    expect(created.statusCode, created.body).toBe(201);
    const uuid = (created.json() as { uuid: string }).uuid;
    const port = await app.inject({ method: 'POST', url: '/v1/ports', headers: LATEST, payload: { address: MAC, node_uuid: uuid } });
    expect(port.statusCode, port.body).toBe(201);
    await db.store.db.updateTable('nodes').set({ provision_state: 'available', target_provision_state: null }).where('uuid', '=', uuid).execute();
    return uuid;
  }

  const row = (uuid: string) => db.store.db.selectFrom('nodes').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();

  async function deploy(uuid: string): Promise<void> {
    const res = await app.inject({ method: 'PUT', url: `/v1/nodes/${uuid}/states/provision`, headers: LATEST, payload: { target: 'active' } });
    expect(res.statusCode, res.body).toBe(202);
  }

  const until = (uuid: string, states: string[], ms = 20_000) => untilState(() => row(uuid), states, ms, false);

  function startAgent(): Agent {
    const agent = new Agent({
      apiUrl,
      macs: [MAC],
      listenHost: '127.0.0.1',
      listenPort: 0,
      advertiseHost: '127.0.0.1',
      sysRoot: join(root, 'sys'),
      devRoot: join(root, 'dev'),
      lookupIntervalMs: 50,
      heartbeatIntervalMs: 200,
      writeOptions: { retryDelayMs: 10, direct: false },
    });
    agents.push(agent);
    void agent.start().catch(() => undefined);
    return agent;
  }

  const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('writes the image to the disk the hints name and boots the node from it', async () => {
    const uuid = await availableNode({ image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: sha256(image), root_device: { name: '/dev/vda' } });
    await deploy(uuid);
    const waiting = await until(uuid, ['wait call-back', 'deploy failed']);
    expect(waiting.provision_state, waiting.last_error ?? '').toBe('wait call-back');
    // Waiting for its agent, the node boots the deploy ramdisk from the network, once.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', bootDevice: 'pxe', persistent: false, prepared: 'ramdisk' });

    startAgent();
    const done = await until(uuid, ['active', 'deploy failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('active');
    expect(done.last_error).toBeNull();

    const disk = await readFile(join(root, 'dev', 'vda'));
    expect(sha256(disk.subarray(0, image.length))).toBe(sha256(image));
    // Past the image the disk is as it was: only the image's bytes were written.
    expect(disk[image.length]).toBe(0x11);
    // The node now boots its own disk, for good; its network boot entry hands over to that disk.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', bootDevice: 'disk', persistent: true, prepared: 'localboot' });
    // The agent session ended with the deploy: token, URL and the deploy's progress are gone.
    expect(done.agent_token_hash).toBeNull();
    const internal = typeof done.driver_internal_info === 'string' ? JSON.parse(done.driver_internal_info) : done.driver_internal_info;
    expect(internal).not.toHaveProperty('agent_url');
    expect(internal).not.toHaveProperty('direct_deploy');
    expect(internal).not.toHaveProperty('deploy_step');
    const history = await db.store.db.selectFrom('node_history').select(['event']).where('node_id', '=', done.id).orderBy('id').execute();
    expect(history.map((h) => h.event)).toEqual(expect.arrayContaining(['wait call-back → deploying: the agent finished its part', 'deploying → active']));
  });

  it('ends as deploy failed with the agent\'s message when the image does not match its digest', async () => {
    const wrong = 'ab'.repeat(32);
    const uuid = await availableNode({ image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: wrong, root_device: { name: 'vda' } });
    await deploy(uuid);
    await until(uuid, ['wait call-back']);
    startAgent();
    const failed = await until(uuid, ['deploy failed', 'active']);
    expect(failed.provision_state).toBe('deploy failed');
    expect(failed.last_error).toContain('write_image failed on the node');
    expect(failed.last_error).toContain(wrong);
    expect(failed.last_error).toContain(sha256(image));
    // The half-trusted image's start is zeroed, so the disk boots nothing.
    const disk = await readFile(join(root, 'dev', 'vda'));
    expect(disk.subarray(0, MIB).every((b) => b === 0)).toBe(true);
    expect(failed.agent_token_hash).toBeNull();
    // A failed node is powered off, as Ironic's power_off_after_deploy_failure does.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off' });
    expect(failed.power_state).toBe('power off');
  });

  it('refuses commands without the token or its digest, before reading the body', async () => {
    const uuid = await availableNode({ image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: sha256(image), root_device: { name: 'vda' } });
    // An agent state in which heartbeats give the agent no work (rescue is #18's), so that the
    // agent is idle when the commands below arrive (an agent running a command answers 409).
    await db.store.db.updateTable('nodes').set({ provision_state: 'rescue wait', target_provision_state: 'rescue' }).where('uuid', '=', uuid).execute();
    const agent = startAgent();
    const end = Date.now() + 10_000;
    while (agent.heartbeats === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(agent.heartbeats).toBeGreaterThan(0);
    const post = (token: string | null) =>
      fetch(`${agent.url}/v1/commands/?wait=true${token === null ? '' : `&agent_token=${token}`}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'standby.sync', params: {} }) });
    expect((await post(null)).status).toBe(401);
    expect((await post('x'.repeat(43))).status).toBe(401);
    const digest = (await row(uuid)).agent_token_hash as string;
    const ok = await post(digest);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ command_name: 'sync', command_status: 'SUCCEEDED' });
  });

  /**
   * Asks for a provision action as Ironic's clients do: a 409 for a node still locked (the task that
   * set the state it rests in releases its lock a moment after) is retried, for up to 10 s.
   */
  async function provisionAction(uuid: string, target: string): Promise<void> {
    const end = Date.now() + 10_000;
    for (;;) {
      const res = await app.inject({ method: 'PUT', url: `/v1/nodes/${uuid}/states/provision`, headers: LATEST, payload: { target } });
      if (res.statusCode === 409 && res.body.includes('is locked by') && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      expect(res.statusCode, res.body).toBe(202);
      return;
    }
  }

  const internalOf = (node: Awaited<ReturnType<typeof row>>): Record<string, unknown> =>
    typeof node.driver_internal_info === 'string' ? JSON.parse(node.driver_internal_info) : (node.driver_internal_info as Record<string, unknown>);

  it('undeploy cleans the disk through a newly booted agent: partition table and signatures at both ends gone, the rest kept, the node off and available', async () => {
    const uuid = await availableNode({ image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: sha256(image), root_device: { name: '/dev/vda' } });
    await deploy(uuid);
    await until(uuid, ['wait call-back']);
    const first = startAgent();
    expect((await until(uuid, ['active', 'deploy failed'])).provision_state).toBe('active');
    // The machine boots its OS: the deploy agent is gone.
    await first.stop();

    await provisionAction(uuid, 'deleted');
    const waiting = await until(uuid, ['clean wait', 'clean failed', 'available']);
    expect(waiting.provision_state, waiting.last_error ?? '').toBe('clean wait');
    // Cleaning booted the deploy ramdisk, as a deploy does.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', bootDevice: 'pxe', persistent: false, prepared: 'ramdisk' });
    startAgent();
    const done = await until(uuid, ['available', 'clean failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('available');

    const disk = await readFile(join(root, 'dev', 'vda'));
    // The MBR (and anything else in the first MiB) and the disk's last MiB are zeroed; between
    // them the image's bytes are still there: this is the metadata erase, not a full one.
    expect(disk.subarray(0, MIB).every((b) => b === 0)).toBe(true);
    expect(disk.subarray(disk.length - MIB).every((b) => b === 0)).toBe(true);
    expect(disk.subarray(2 * MIB, 3 * MIB).equals(image.subarray(2 * MIB, 3 * MIB))).toBe(true);
    // Off, its session over, the steps that ran recorded and nothing left of the clean's progress.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off', prepared: null });
    expect(done.power_state).toBe('power off');
    expect(done.agent_token_hash).toBeNull();
    const internal = internalOf(done);
    expect(internal.clean_steps).toEqual([{ interface: 'deploy', step: 'erase_devices_metadata' }]);
    for (const key of ['clean_step', 'clean_step_index', 'clean_step_done', 'clean_step_state', 'agent_url']) expect(internal).not.toHaveProperty(key);
    const history = await db.store.db.selectFrom('node_history').select(['event']).where('node_id', '=', done.id).orderBy('id').execute();
    expect(history.map((h) => h.event)).toEqual(expect.arrayContaining(["cleaning waits for the node's agent to boot and call back", 'clean step deploy.erase_devices_metadata done', 'cleaning → available']));
  });

  it('fast track: provide cleans through the agent and leaves it up; the deploy then writes through that agent without booting the node again', async () => {
    await app.close();
    await db.store.db.deleteFrom('conductors').execute();
    await startApi(true);
    const uuid = await availableNode({ image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: sha256(image), root_device: { name: '/dev/vda' } });
    await db.store.db.updateTable('nodes').set({ provision_state: 'manageable' }).where('uuid', '=', uuid).execute();
    await provisionAction(uuid, 'provide');
    await until(uuid, ['clean wait']);
    const agent = startAgent();
    const cleaned = await until(uuid, ['available', 'clean failed']);
    expect(cleaned.provision_state, cleaned.last_error ?? '').toBe('available');
    // The node stays up running its agent, whose session the node keeps.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on' });
    expect(cleaned.power_state).toBe('power on');
    expect(cleaned.agent_token_hash).not.toBeNull();
    expect(internalOf(cleaned).agent_url).toBe(agent.url);
    const powerOns = fake.peek(uuid)!.powerOns;

    await deploy(uuid);
    const done = await until(uuid, ['active', 'deploy failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('active');
    const disk = await readFile(join(root, 'dev', 'vda'));
    expect(sha256(disk.subarray(0, image.length))).toBe(sha256(image));
    // One power-on: the boot into the instance. The deploy ramdisk was not booted again (without
    // fast track: two), and the same agent, looked up once, did the write.
    expect(fake.peek(uuid)!.powerOns).toBe(powerOns + 1);
    expect(agent.lookups).toBe(1);
    expect(done.agent_token_hash).toBeNull();
  });

  it('a clean step that fails on the node ends in clean failed, off; the next clean starts afresh and succeeds', async () => {
    const uuid = await availableNode({ image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: sha256(image) });
    await db.store.db.updateTable('nodes').set({ provision_state: 'manageable' }).where('uuid', '=', uuid).execute();
    // The only disk read-only: the agent erases nothing it may not write, and says so.
    await writeFile(join(root, 'sys', 'block', 'vda', 'ro'), '1\n');
    await provisionAction(uuid, 'provide');
    await until(uuid, ['clean wait']);
    const first = startAgent();
    const failed = await until(uuid, ['clean failed', 'available']);
    expect(failed.provision_state).toBe('clean failed');
    expect(failed.last_error).toContain('clean step deploy.erase_devices_metadata failed on the node: BlockDeviceEraseError: no disk to erase (skipped: /dev/vda read-only)');
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off' });
    const internal = internalOf(failed);
    expect(internal.clean_steps).toEqual([{ interface: 'deploy', step: 'erase_devices_metadata' }]);
    for (const key of ['clean_step', 'clean_step_index', 'clean_step_state']) expect(internal).not.toHaveProperty(key);
    await first.stop();

    // Fixed, the operator tries again: a new clean boots a new agent and runs from its first step.
    await writeFile(join(root, 'sys', 'block', 'vda', 'ro'), '0\n');
    await provisionAction(uuid, 'manage');
    await until(uuid, ['manageable']);
    await provisionAction(uuid, 'provide');
    await until(uuid, ['clean wait', 'clean failed']);
    startAgent();
    const done = await until(uuid, ['available', 'clean failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('available');
    expect((await readFile(join(root, 'dev', 'vda'))).subarray(0, MIB).every((b) => b === 0)).toBe(true);
  });
});
