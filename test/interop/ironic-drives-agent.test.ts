/**
 * A real peer drives `ironring agent`: Debian's OpenStack Ironic 21.4 (`ironic-api` and
 * `ironic-conductor` from ironic-common, SQLite, noauth, JSON-RPC) deploys a whole-disk image with
 * its own `direct` deploy interface through ironring's `Agent`, which runs in this process with a
 * fake /sys whose one disk is a file. Ironic looks the agent up, takes its heartbeats, issues its
 * own sequence of IPA commands (deploy steps, `standby.prepare_image`, polling, `standby.sync`…)
 * and ends `active`; the file holds the image. That is the agent speaking IPA's protocol as Ironic
 * itself expects it, not as ironring's conductor does.
 *
 * The node's hardware type is Ironic's `manual-management` (fake power, no-op management, the PXE
 * boot interface writing its files with no DHCP) with `deploy_forces_oob_reboot`, so Ironic powers
 * the "machine" off through its fake power interface rather than asking the agent; the agent's own
 * power-off is a no-op here in any case.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { fakeMachine } from '../helpers/fake-machine.js';
import { requirePeer } from '../helpers/peers.js';

const MIB = 1024 * 1024;
const MAC = '52:54:00:1c:00:01';
const H = { 'content-type': 'application/json', 'x-openstack-ironic-api-version': '1.78' };

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Ironic's configuration: one API and one conductor on SQLite, fake hardware, the direct deploy. */
function ironicConf(dir: string, apiPort: number, rpcPort: number): string {
  return `[DEFAULT]
auth_strategy = noauth
rpc_transport = json-rpc
host = 127.0.0.1
state_path = ${dir}/state
debug = false
log_dir = ${dir}/log
enabled_hardware_types = manual-management
enabled_boot_interfaces = pxe
enabled_deploy_interfaces = direct
enabled_power_interfaces = fake
enabled_management_interfaces = noop
enabled_network_interfaces = noop
enabled_inspect_interfaces = no-inspect
enabled_rescue_interfaces = no-rescue

[api]
host_ip = 127.0.0.1
port = ${apiPort}

[json_rpc]
auth_strategy = noauth
host_ip = 127.0.0.1
port = ${rpcPort}

[database]
connection = sqlite:///${dir}/ironic.db

[dhcp]
dhcp_provider = none

[service_catalog]
# Where the agent reaches the API (Ironic passes it to the ramdisk; no Keystone here).
endpoint_override = http://127.0.0.1:${apiPort}

[conductor]
automated_clean = false
heartbeat_interval = 2

[deploy]
fast_track = false
http_root = ${dir}/http
http_url = http://127.0.0.1:9

[pxe]
tftp_root = ${dir}/tftp
tftp_master_path = ${dir}/tftp_master

[oslo_concurrency]
lock_path = ${dir}/state/lock
`;
}

const available = requirePeer('ironic-conductor', 'ironic-common');

describe.skipIf(!available)('Ironic 21.4 deploys an image through ironring agent (IPA protocol)', () => {
  let dir: string;
  let ironicUrl: string;
  const procs: ChildProcess[] = [];
  let imageServer: http.Server;

  async function ironic(method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(`${ironicUrl}${path}`, { method, headers: H, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  }

  async function provisionState(uuid: string): Promise<{ provision_state: string; last_error: string | null }> {
    return (await ironic('GET', `/v1/nodes/${uuid}`)).json as { provision_state: string; last_error: string | null };
  }

  async function until(uuid: string, wanted: string[], ms: number): Promise<{ provision_state: string; last_error: string | null }> {
    const end = Date.now() + ms;
    for (;;) {
      const node = await provisionState(uuid);
      if (wanted.includes(node.provision_state) || Date.now() > end) return node;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ironring-ironic-'));
    for (const sub of ['state/lock', 'http', 'tftp', 'tftp_master', 'log']) await mkdir(join(dir, sub), { recursive: true });
    const [apiPort, rpcPort] = [await freePort(), await freePort()];
    const conf = join(dir, 'ironic.conf');
    await writeFile(conf, ironicConf(dir, apiPort, rpcPort));
    const sync = spawnSync('ironic-dbsync', ['--config-file', conf, 'create_schema'], { encoding: 'utf8', timeout: 120_000 });
    expect(sync.status, sync.stderr).toBe(0);
    for (const program of ['ironic-conductor', 'ironic-api']) {
      const child = spawn(program, ['--config-file', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr!.pipe(createWriteStream(join(dir, `${program}.log`)));
      procs.push(child);
    }
    ironicUrl = `http://127.0.0.1:${apiPort}`;
    // Up when the API answers and the conductor has registered (its driver is listed).
    const end = Date.now() + 90_000;
    for (;;) {
      const drivers = await fetch(`${ironicUrl}/v1/drivers`, { headers: H }).then((r) => r.json() as Promise<{ drivers?: unknown[] }>).catch(() => null);
      if ((drivers?.drivers?.length ?? 0) > 0) break;
      if (Date.now() > end) throw new Error(`Ironic did not come up; logs in ${dir}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }, 150_000);

  afterAll(async () => {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : null)));
    await new Promise<void>((r) => (imageServer ? imageServer.close(() => r()) : r()));
    if (process.env.KEEP_IRONIC_LOGS === undefined) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('looks the agent up, sends it IPA commands, and ends active with the image on the disk', async () => {
    // The machine: one 64 MiB disk, a file standing for /dev/vda.
    const machine = await fakeMachine(join(dir, 'machine'), 64 * MIB);
    // The image: an MBR with a partition entry and the boot signature, then random bytes.
    const image = randomBytes(6 * MIB + 512);
    image.fill(0, 446, 510);
    image[446 + 4] = 0x83;
    image.writeUInt32LE(2048, 446 + 8);
    image.writeUInt32LE(4096, 446 + 12);
    image[510] = 0x55;
    image[511] = 0xaa;
    const digest = createHash('sha256').update(image).digest('hex');
    // The deploy kernel and ramdisk Ironic's PXE boot interface stages (never booted here).
    const files: Record<string, Buffer> = { '/disk.raw': image, '/deploy.kernel': Buffer.from('kernel'), '/deploy.initramfs': Buffer.from('initramfs') };
    imageServer = http.createServer((req, res) => {
      const body = files[req.url ?? ''];
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' }).end(req.method === 'HEAD' ? undefined : body);
    });
    await new Promise<void>((r) => imageServer.listen(0, '127.0.0.1', r));
    const files_ = `http://127.0.0.1:${(imageServer.address() as net.AddressInfo).port}`;
    const imageUrl = `${files_}/disk.raw`;

    const created = await ironic('POST', '/v1/nodes', {
      name: 'interop-1',
      driver: 'manual-management',
      deploy_interface: 'direct',
      boot_interface: 'pxe',
      power_interface: 'fake',
      management_interface: 'noop',
      driver_info: { deploy_forces_oob_reboot: true, deploy_kernel: `${files_}/deploy.kernel`, deploy_ramdisk: `${files_}/deploy.initramfs` },
      // BIOS: Ironic 21.4 defaults to UEFI, where it asks the agent to register the image's boot
      // loader in NVRAM (image.install_bootloader), which needs an image with an EFI system
      // partition and the firmware's variables: this in-process agent writes a BIOS image.
      properties: { capabilities: 'boot_mode:bios' },
      instance_info: { image_source: imageUrl, image_os_hash_algo: 'sha256', image_os_hash_value: digest, image_disk_format: 'raw', root_device: { name: '/dev/vda' } },
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const uuid = created.json.uuid as string;
    const port = await ironic('POST', '/v1/ports', { address: MAC, node_uuid: uuid });
    expect(port.status, JSON.stringify(port.json)).toBe(201);
    for (const [verb, state] of [['manage', 'manageable'], ['provide', 'available']] as const) {
      expect((await ironic('PUT', `/v1/nodes/${uuid}/states/provision`, { target: verb })).status).toBe(202);
      expect((await until(uuid, [state], 60_000)).provision_state).toBe(state);
    }
    expect((await ironic('PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'active' })).status).toBe(202);
    const waiting = await until(uuid, ['wait call-back', 'deploy failed'], 60_000);
    expect(waiting.provision_state, waiting.last_error ?? '').toBe('wait call-back');

    const lines: string[] = [];
    let poweredOff = 0;
    const agent = new Agent({
      apiUrl: ironicUrl,
      macs: [MAC],
      listenHost: '127.0.0.1',
      listenPort: 0,
      advertiseHost: '127.0.0.1',
      sysRoot: machine.sysRoot,
      devRoot: machine.devRoot,
      lookupIntervalMs: 200,
      heartbeatIntervalMs: 1000,
      powerOff: async () => void (poweredOff += 1),
      writeOptions: { retryDelayMs: 10, direct: false },
      log: (line) => lines.push(line),
    });
    void agent.start().catch((err: unknown) => lines.push(`start failed: ${(err as Error).message}`));
    try {
      const done = await until(uuid, ['active', 'deploy failed'], 90_000);
      expect(done.provision_state, `${done.last_error}\nagent:\n${lines.join('\n')}`).toBe('active');
    } finally {
      await agent.stop();
    }
    expect(agent.nodeUuid).toBe(uuid);
    const disk = await readFile(machine.disk);
    expect(createHash('sha256').update(disk.subarray(0, image.length)).digest('hex')).toBe(digest);
    expect(disk[image.length]).toBe(0x11);
    // Ironic's own command sequence, as the agent ran it: its deploy steps, the write as the
    // write_image deploy step, the partition UUIDs, a sync; then Ironic powered off out of band.
    const ran = lines.map((l) => / command (\S+) \(\S+\) succeeded/.exec(l)?.[1]).filter((c): c is string => c !== undefined);
    expect(ran).toEqual(['deploy.get_deploy_steps', 'deploy.execute_deploy_step', 'standby.get_partition_uuids', 'standby.sync']);
    expect(lines.some((l) => / failed/.test(l))).toBe(false);
    expect(poweredOff).toBe(0);
    console.log(`Ironic 21.4 drove ironring agent to active: ${ran.join(', ')}`);
  }, 240_000);
});
