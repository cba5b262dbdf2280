/**
 * A real OpenStack Ironic (Debian's 21.4: `ironic-api` and `ironic-conductor` from ironic-common)
 * for tests in which it drives `ironring agent`: one API and one conductor on SQLite, noauth,
 * JSON-RPC, the `manual-management` hardware type (fake power, no-op management, the PXE boot
 * interface writing its files with no DHCP) and the `direct` deploy.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The API version the tests speak (Ironic 21.4 serves up to 1.82). */
export const IRONIC_HEADERS = { 'content-type': 'application/json', 'x-openstack-ironic-api-version': '1.78' };

async function freePort(host: string): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, host, r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Ironic's configuration: the API on `apiHost`, which is also where agents reach it. */
function ironicConf(dir: string, apiHost: string, apiPort: number, rpcPort: number): string {
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
host_ip = ${apiHost}
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
endpoint_override = http://${apiHost}:${apiPort}

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

export interface RunningIronic {
  url: string;
  dir: string;
  /** One API call; the JSON answer (empty object for none). */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }>;
  /** Polls the node until its provision state is one of `wanted` or `ms` pass; the last answer. */
  until(uuid: string, wanted: readonly string[], ms: number): Promise<{ provision_state: string; last_error: string | null }>;
  /** Stops both services; removes the directory unless KEEP_IRONIC_LOGS is set. */
  stop(): Promise<void>;
}

/** Starts Ironic with its API on `apiHost` (default 127.0.0.1); resolves once its conductor serves a driver. */
export async function startIronic(apiHost = '127.0.0.1'): Promise<RunningIronic> {
  const dir = await mkdtemp(join(tmpdir(), 'ironring-ironic-'));
  for (const sub of ['state/lock', 'http', 'tftp', 'tftp_master', 'log']) await mkdir(join(dir, sub), { recursive: true });
  const [apiPort, rpcPort] = [await freePort(apiHost), await freePort('127.0.0.1')];
  const conf = join(dir, 'ironic.conf');
  await writeFile(conf, ironicConf(dir, apiHost, apiPort, rpcPort));
  const sync = spawnSync('ironic-dbsync', ['--config-file', conf, 'create_schema'], { encoding: 'utf8', timeout: 120_000 });
  if (sync.status !== 0) throw new Error(`ironic-dbsync failed: ${sync.stderr}`);
  const procs: ChildProcess[] = [];
  for (const program of ['ironic-conductor', 'ironic-api']) {
    const child = spawn(program, ['--config-file', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.pipe(createWriteStream(join(dir, `${program}.log`)));
    procs.push(child);
  }
  const url = `http://${apiHost}:${apiPort}`;
  const stop = async () => {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : null)));
    if (process.env.KEEP_IRONIC_LOGS === undefined) await rm(dir, { recursive: true, force: true });
  };
  const call: RunningIronic['call'] = async (method, path, body) => {
    const res = await fetch(`${url}${path}`, { method, headers: IRONIC_HEADERS, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const until: RunningIronic['until'] = async (uuid, wanted, ms) => {
    const end = Date.now() + ms;
    for (;;) {
      const node = (await call('GET', `/v1/nodes/${uuid}`)).json as { provision_state: string; last_error: string | null };
      if (wanted.includes(node.provision_state) || Date.now() > end) return node;
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  // Up when the API answers and the conductor has registered (its driver is listed).
  const end = Date.now() + 90_000;
  try {
    for (;;) {
      const drivers = await fetch(`${url}/v1/drivers`, { headers: IRONIC_HEADERS }).then((r) => r.json() as Promise<{ drivers?: unknown[] }>).catch(() => null);
      if ((drivers?.drivers?.length ?? 0) > 0) break;
      if (Date.now() > end) throw new Error(`Ironic did not come up; logs in ${dir}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  } catch (err) {
    process.env.KEEP_IRONIC_LOGS ??= '1';
    await stop();
    throw err;
  }
  return { url, dir, call, until, stop };
}

/**
 * Enrolls a `manual-management` node with the direct deploy, one port, and takes it to
 * `available`; `deploy` names the URLs of the deploy kernel and ramdisk (Ironic's PXE boot
 * interface stages them). Returns its uuid.
 */
export async function enrollIronicNode(ironic: RunningIronic, name: string, mac: string, deploy: { kernel: string; ramdisk: string }, instanceInfo: Record<string, unknown>): Promise<string> {
  const created = await ironic.call('POST', '/v1/nodes', {
    name,
    driver: 'manual-management',
    deploy_interface: 'direct',
    boot_interface: 'pxe',
    power_interface: 'fake',
    management_interface: 'noop',
    driver_info: { deploy_forces_oob_reboot: true, deploy_kernel: deploy.kernel, deploy_ramdisk: deploy.ramdisk },
    // BIOS: Ironic 21.4 defaults to UEFI, where it asks the agent to register the image's boot
    // loader in the firmware's variables (image.install_bootloader): these machines are BIOS ones.
    properties: { capabilities: 'boot_mode:bios' },
    instance_info: instanceInfo,
  });
  if (created.status !== 201) throw new Error(`Ironic refused the node: ${JSON.stringify(created.json)}`);
  const uuid = created.json.uuid as string;
  const port = await ironic.call('POST', '/v1/ports', { address: mac, node_uuid: uuid });
  if (port.status !== 201) throw new Error(`Ironic refused the port: ${JSON.stringify(port.json)}`);
  for (const [verb, state] of [['manage', 'manageable'], ['provide', 'available']] as const) {
    const moved = await ironic.call('PUT', `/v1/nodes/${uuid}/states/provision`, { target: verb });
    if (moved.status !== 202) throw new Error(`${verb}: ${JSON.stringify(moved.json)}`);
    const node = await ironic.until(uuid, [state], 60_000);
    if (node.provision_state !== state) throw new Error(`${verb}: the node is ${node.provision_state} (${node.last_error})`);
  }
  return uuid;
}
