/**
 * Issue #14 item 3, through the real process: `ironring up`, the REST API, a fake-hardware node
 * with the pxe boot and ramdisk deploy interfaces (the conductor fetches its images into the cache
 * and serves them over TFTP). `file://` sources outside `[conductor] file_url_allowed_paths`
 * (default `<data_dir>/images`) — directly or through a symlink inside it — are refused with a
 * last_error naming the option; no error carries a checksum computed from a file; nothing of a
 * refused file reaches the image cache or the TFTP server.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { waitUntil } from '../helpers/conductors.js';

const H = { 'x-openstack-ironic-api-version': 'latest', 'content-type': 'application/json' };
const hex = (data: Buffer | string, algo = 'sha256') => createHash(algo).update(data).digest('hex');
/** Every digest of `data` an error could leak, in the spellings a message could use. */
const digests = (data: Buffer | string) => ['sha256', 'sha512', 'md5'].map((a) => hex(data, a));

let dir: string;
let dataDir: string;
let imagesDir: string;
let proc: CliProcess;
let base: string;
let tftpPort: number;
const secret = `ironring-secret-outside-the-image-dir ${Date.now()}\n`;
const deployKernel = Buffer.from('deploy kernel bytes\n');
const deployRamdisk = Buffer.from('deploy ramdisk bytes\n');
const kernel = Buffer.from('instance kernel bytes\n');
const ramdisk = Buffer.from('instance ramdisk bytes\n');

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-fileurl-'));
  dataDir = path.join(dir, 'data');
  imagesDir = path.join(dataDir, 'images');
  mkdirSync(imagesDir, { recursive: true });
  for (const [name, data] of [['deploy.kernel', deployKernel], ['deploy.initrd', deployRamdisk], ['vmlinuz', kernel], ['initrd.img', ramdisk]] as const) {
    writeFileSync(path.join(imagesDir, name), data);
  }
  mkdirSync(path.join(dir, 'outside'));
  writeFileSync(path.join(dir, 'outside', 'secret'), secret);
  // Inside the allowed directory, pointing out of it: a file and a directory.
  symlinkSync(path.join(dir, 'outside', 'secret'), path.join(imagesDir, 'innocent.img'));
  symlinkSync(path.join(dir, 'outside'), path.join(imagesDir, 'subdir'));
  symlinkSync('/etc/passwd', path.join(imagesDir, 'passwd.img'));
  proc = startCli(
    ['up', '--data-dir', dataDir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'],
    // Short compute intervals: the servers test waits for its node to become schedulable.
    { cwd: dir, env: { IRONRING_LOG_LEVEL: 'info', IRONRING_COMPUTE_UPDATE_RESOURCES_INTERVAL: '1', IRONRING_COMPUTE_REPORT_INTERVAL: '1' } },
  );
  base = (await proc.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 30_000))[1]!;
  tftpPort = Number(/boot: +TFTP 127\.0\.0\.1:(\d+)/.exec(proc.stdout())![1]);
}, 60_000);

afterAll(async () => {
  if (proc && proc.child.exitCode === null) {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function api(method: string, url: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${base}${url}`, { method, headers: H, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

interface NodeState {
  uuid: string;
  provision_state: string;
  target_provision_state: string | null;
  last_error: string | null;
}

const node = async (ident: string): Promise<NodeState> => (await api('GET', `/v1/nodes/${ident}`)).json as unknown as NodeState;

async function settle(ident: string, states: string[]): Promise<NodeState> {
  let last: NodeState | undefined;
  await waitUntil(async () => {
    last = await node(ident);
    // A failed state may keep its target (as in Ironic); a stable one has none.
    return states.includes(last.provision_state) && (last.target_provision_state === null || last.provision_state.endsWith('failed'));
  }, 20_000, `${ident} to reach ${states.join(' or ')}`);
  return last!;
}

async function act(ident: string, target: string): Promise<void> {
  const res = await api('PUT', `/v1/nodes/${ident}/states/provision`, { target });
  expect(res.status, JSON.stringify(res.json)).toBe(202);
}

let macs = 0;
let refusals = 0;
/** An available fake-hardware node that network-boots (pxe) and deploys with the ramdisk interface. */
async function availableNode(name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await api('POST', '/v1/nodes', {
    name,
    ...extra,
    driver: 'fake-hardware',
    boot_interface: 'pxe',
    deploy_interface: 'ramdisk',
    driver_info: {
      deploy_kernel: `file://${imagesDir}/deploy.kernel`,
      deploy_kernel_checksum: `sha256:${hex(deployKernel)}`,
      deploy_ramdisk: `file://${imagesDir}/deploy.initrd`,
      deploy_ramdisk_checksum: `sha256:${hex(deployRamdisk)}`,
    },
  });
  expect(created.status, JSON.stringify(created.json)).toBe(201);
  const uuid = created.json.uuid as string;
  macs += 1;
  const port = await api('POST', '/v1/ports', { node_uuid: uuid, address: `52:54:00:14:03:${macs.toString(16).padStart(2, '0')}`, pxe_enabled: true });
  expect(port.status, JSON.stringify(port.json)).toBe(201);
  await act(name, 'manage');
  await settle(name, ['manageable']);
  await act(name, 'provide');
  await settle(name, ['available']);
  return uuid;
}

/** Deploys with these instance images (set after `provide`, which may reset instance_info). */
async function deployWith(name: string, images: { kernel: string; kernel_checksum: string }): Promise<NodeState> {
  const patch = await api('PATCH', `/v1/nodes/${name}`, [
    { op: 'add', path: '/instance_info', value: { ...images, ramdisk: `file://${imagesDir}/initrd.img`, ramdisk_checksum: `sha256:${hex(ramdisk)}` } },
  ]);
  expect(patch.status, JSON.stringify(patch.json)).toBe(200);
  await act(name, 'active');
  return settleAfterDeploy(name);
}

const settleAfterDeploy = (name: string): Promise<NodeState> => settle(name, ['active', 'deploy failed']);

/** Every node_history event, read from the database file (there is no history API route). */
function historyText(): string {
  const db = new Database(path.join(dataDir, 'ironring.db'), { readonly: true, fileMustExist: true });
  try {
    return JSON.stringify(db.prepare('SELECT * FROM node_history').all());
  } finally {
    db.close();
  }
}

function tftpGet(file: string): { ok: boolean; data: string } {
  const res = spawnSync('curl', ['-sS', '--fail', '--max-time', '10', `tftp://127.0.0.1:${tftpPort}/${file}`], { encoding: 'utf8' });
  return { ok: res.status === 0, data: res.stdout };
}

/** Everything the conductor wrote: the image cache and the TFTP root, file contents included. */
function servedBytes(): string {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(`${p}\n${readFileSync(p, 'latin1')}`);
    }
  };
  walk(path.join(dataDir, 'master_images'));
  walk(path.join(dataDir, 'tftpboot'));
  walk(path.join(dataDir, 'httpboot'));
  return out.join('\n');
}

describe('file:// image sources through ironring up (issue #14 item 3)', () => {
  it('deploys from the image directory under data_dir (the default allowed path) and serves the kernel over TFTP', async () => {
    const uuid = await availableNode('fileurl-ok');
    const state = await deployWith('fileurl-ok', { kernel: `file://${imagesDir}/vmlinuz`, kernel_checksum: `sha256:${hex(kernel)}` });
    expect(state).toMatchObject({ provision_state: 'active', last_error: null });
    expect(tftpGet(`${uuid}/kernel`)).toEqual({ ok: true, data: kernel.toString() });
  }, 60_000);

  it.each([
    ['/etc/passwd, directly', 'file:///etc/passwd', /\/etc is never an image source/],
    ['a path outside the allowed directories', () => `file://${dir}/outside/secret`, /outside the directories of \[conductor\] file_url_allowed_paths/],
    ['a ../ walk out of the allowed directory', () => `file://${imagesDir}/../../outside/secret`, /outside the directories of \[conductor\] file_url_allowed_paths/],
    ['a symlink in the allowed directory to a file outside it', () => `file://${imagesDir}/innocent.img`, /resolves outside the directories of \[conductor\] file_url_allowed_paths/],
    ['a symlinked directory in the allowed directory', () => `file://${imagesDir}/subdir/secret`, /resolves outside the directories of \[conductor\] file_url_allowed_paths/],
    ['a symlink in the allowed directory to /etc/passwd', () => `file://${imagesDir}/passwd.img`, /resolves into \/etc, which is never an image source/],
  ] as const)('refuses %s: last_error names the option, carries no checksum, nothing is cached or served', async (label, url, reason) => {
    const name = `fileurl-refused-${(refusals += 1)}`;
    const uuid = await availableNode(name);
    const source = typeof url === 'string' ? url : url();
    const target = source === 'file:///etc/passwd' || source.endsWith('passwd.img') ? readFileSync('/etc/passwd') : Buffer.from(secret);
    // The requester even knows the right checksum: the path is refused all the same.
    const state = await deployWith(name, { kernel: source, kernel_checksum: `sha256:${hex(target)}` });
    await api('PATCH', `/v1/nodes/${name}`, [{ op: 'replace', path: '/instance_info/kernel_checksum', value: `sha256:${'0'.repeat(64)}` }]);
    expect(state.provision_state).toBe('deploy failed');
    expect(state.last_error).toMatch(/is not allowed: /);
    expect(state.last_error).toMatch(reason);
    expect(state.last_error!.replace(new URL(source).href, '')).not.toContain(path.join(dir, 'outside')); // never where a symlink points

    // Again with a wrong checksum: nothing the conductor computed from the file shows up anywhere.
    await act(name, 'active');
    const wrong = await settleAfterDeploy(name);
    expect(wrong.provision_state).toBe('deploy failed');
    expect(wrong.last_error).toMatch(reason);
    for (const d of digests(target)) {
      expect(state.last_error).not.toContain(d);
      expect(wrong.last_error).not.toContain(d);
      expect(historyText()).not.toContain(d);
      expect(proc.stdout() + proc.stderr()).not.toContain(d);
    }

    const served = servedBytes();
    expect(served).not.toContain(secret);
    expect(served).not.toContain(readFileSync('/etc/passwd', 'latin1').split('\n')[0]);
    expect(served).not.toContain(`sha256-${hex(target)}`);
    expect(tftpGet(`${uuid}/kernel`).ok).toBe(false);
  }, 90_000);

  it('reports a checksum mismatch inside the allowed directory with the expected value only', async () => {
    const name = 'fileurl-mismatch';
    await availableNode(name);
    const expected = `sha256:${'ab'.repeat(32)}`;
    const state = await deployWith(name, { kernel: `file://${imagesDir}/vmlinuz`, kernel_checksum: expected });
    expect(state.provision_state).toBe('deploy failed');
    expect(state.last_error).toContain('checksum mismatch');
    expect(state.last_error).toContain(expected);
    for (const d of digests(kernel)) {
      expect(state.last_error).not.toContain(d);
      expect(historyText()).not.toContain(d);
    }
    expect(readdirSync(path.join(dataDir, 'master_images'))).not.toContain(`sha256-${'ab'.repeat(32)}`);
  }, 60_000);

  it('refuses the same for a server created with POST /compute/v1/servers (it deploys through the same conductor path)', async () => {
    const uuid = await availableNode('fileurl-server', { resource_class: 'fileurl-rc' });
    await waitUntil(async () => {
      const res = await api('GET', '/compute/v1/compute-nodes');
      return ((res.json.compute_nodes as Array<{ uuid: string }> | undefined) ?? []).some((n) => n.uuid === uuid);
    }, 30_000, 'the node to be exposed to the compute tier');
    const passwd = readFileSync('/etc/passwd');
    const created = await api('POST', '/compute/v1/servers', {
      name: 'fileurl-server',
      resource_class: 'fileurl-rc',
      image: { kernel: 'file:///etc/passwd', kernel_checksum: `sha256:${hex(passwd)}`, ramdisk: `file://${imagesDir}/initrd.img`, ramdisk_checksum: `sha256:${hex(ramdisk)}` },
    });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    let state: NodeState | undefined;
    await waitUntil(async () => {
      state = await node(uuid);
      return state.provision_state === 'deploy failed' || state.provision_state === 'active';
    }, 30_000, 'the server\'s node to finish deploying');
    expect(state!.provision_state).toBe('deploy failed');
    expect(state!.last_error).toMatch(/image source file:\/\/\/etc\/passwd is not allowed: \/etc is never an image source/);
    for (const d of digests(passwd)) expect(state!.last_error).not.toContain(d);
    expect(servedBytes()).not.toContain(readFileSync('/etc/passwd', 'latin1').split('\n')[0]);
    expect(tftpGet(`${uuid}/kernel`).ok).toBe(false);
  }, 90_000);
});
