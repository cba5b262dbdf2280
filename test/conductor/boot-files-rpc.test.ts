/**
 * `GET /v1/nodes/{uuid}/boot-files` on a real conductor (in process, SQLite, its own boot
 * environment in dnsmasq files mode, RPC behind http_basic): it lists what the conductor holds for a
 * deployed node it took over — node directory, images, per-MAC link, dnsmasq entries — refuses a bad
 * uuid before touching the disk, needs the RPC credentials (the API's users, who may read the status
 * paths, may not read this), never opens, follows or names anything outside its roots, and stops at
 * 500 entries.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BootFileEntry } from '../../src/boot/node-files.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/options.js';
import type { BootFilesAnswer } from '../../src/conductor/boot-files-rpc.js';
import { Conductor } from '../../src/conductor/conductor.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { seedDeployedNodes, writeTestImages } from '../helpers/takeover.js';
import type { SeededNode } from '../helpers/takeover.js';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const RPC = { authorization: basic('api', 'rpc-pass') };

describe('a conductor lists the boot files it holds for a node', () => {
  let target: TestDatabase;
  let store: Store;
  let conductor: Conductor;
  let config: Config;
  let work: string;
  let outside: string;
  let node: SeededNode;
  let kernelSize: number;

  const get = (uuid: string, headers: Record<string, string> = RPC) => fetch(`${conductor.rpcUrl}/v1/nodes/${uuid}/boot-files`, { headers });
  const list = async (uuid: string): Promise<BootFilesAnswer> => {
    const res = await get(uuid);
    expect(res.status).toBe(200);
    return (await res.json()) as BootFilesAnswer;
  };
  const byPath = (answer: BootFilesAnswer, root: string, p: string): BootFileEntry | undefined => answer.files.find((f) => f.root === root && f.path === p);

  beforeAll(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    work = mkdtempSync(path.join(tmpdir(), 'ironring-boot-files-'));
    const images = writeTestImages(path.join(work, 'images'));
    kernelSize = images.kernel.size;
    // Outside every root: a directory with a manifest naming a MAC, and a file no answer may name.
    outside = path.join(work, 'outside-secret');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'macs'), 'aa:bb:cc:dd:ee:ff\n');
    writeFileSync(path.join(outside, 'secret.txt'), 'top secret\n');
    const dhcp = { hosts: path.join(work, 'dhcp-hosts'), opts: path.join(work, 'dhcp-opts') };
    mkdirSync(dhcp.hosts);
    mkdirSync(dhcp.opts);
    const rpcUsers = path.join(work, 'htpasswd-rpc');
    const apiUsers = path.join(work, 'htpasswd-api');
    writeFileSync(rpcUsers, `api:${bcrypt.hashSync('rpc-pass', 4)}\n`);
    writeFileSync(apiUsers, `viewer:${bcrypt.hashSync('view-pass', 4)}\n`);
    config = loadConfig({
      env: testConductorEnv(path.join(work, 'conductor'), {
        IRONRING_HOST: 'cond-1',
        IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: path.join(work, 'images'),
        IRONRING_CONDUCTOR_SYNC_LOCAL_STATE_INTERVAL: '0',
        IRONRING_DNSMASQ_DHCP_HOSTSDIR: dhcp.hosts,
        IRONRING_DNSMASQ_DHCP_OPTSDIR: dhcp.opts,
        IRONRING_JSON_RPC_AUTH_STRATEGY: 'http_basic',
        IRONRING_JSON_RPC_HTTP_BASIC_AUTH_USER_FILE: rpcUsers,
        IRONRING_AUTH_STRATEGY: 'http_basic',
        IRONRING_HTTP_BASIC_AUTH_USER_FILE: apiUsers,
      }),
    }).config;
    conductor = new Conductor({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    await conductor.start();
    await waitUntil(() => conductor.reconciler.last !== null, 20_000, 'the start pass');
    node = (await seedDeployedNodes(store, 1, images, { state: 'active', first: 7 }))[0]!;
    for (;;) {
      const report = await conductor.reconciler.nextPass();
      if (report.trigger.split(', ').includes('requested')) {
        expect(report).toMatchObject({ takenOver: 1, failed: 0 });
        break;
      }
    }
  });
  afterAll(async () => {
    await conductor?.stop();
    await store?.close();
    await target?.drop();
    rmSync(work, { recursive: true, force: true });
  });

  it('lists the node directory, its images, its per-MAC link and its dnsmasq entries, owned here with the affinity here', async () => {
    const answer = await list(node.uuid);
    expect(answer).toMatchObject({ node: node.uuid, conductor: 'cond-1', owned: true, affinity_here: true, truncated: false });
    const mac = node.mac.replaceAll(':', '-');
    expect(byPath(answer, 'tftp', node.uuid)).toMatchObject({ kind: 'directory' });
    expect(byPath(answer, 'tftp', `${node.uuid}/config`)).toMatchObject({ kind: 'file' });
    expect(byPath(answer, 'tftp', `${node.uuid}/macs`)).toMatchObject({ kind: 'file' });
    // The instance kernel: a hard link into the image cache, not a copy.
    const kernel = byPath(answer, 'tftp', `${node.uuid}/kernel`);
    expect(kernel).toMatchObject({ kind: 'file', size: kernelSize });
    expect(kernel!.hard_links).toBeGreaterThanOrEqual(2);
    expect(byPath(answer, 'tftp', `pxelinux.cfg/01-${mac}`)).toMatchObject({ kind: 'symlink', target: `${node.uuid}/config`, target_outside_root: false });
    expect(byPath(answer, 'dhcp_opts', `ironring-cond-1-${node.uuid}.conf`)).toMatchObject({ kind: 'file' });
    expect(byPath(answer, 'dhcp_hosts', `ironring-cond-1-${mac}.conf`)).toMatchObject({ kind: 'file' });
    for (const f of answer.files) {
      expect(Number.isNaN(Date.parse(f.modified))).toBe(false);
      expect(f.size).toBeGreaterThanOrEqual(0);
    }
    // Another node's per-MAC link is not this node's.
    expect(answer.files.filter((f) => f.path.startsWith('pxelinux.cfg/'))).toHaveLength(1);
  });

  it('refuses a bad uuid with 400, and answers an unknown node with an empty list', async () => {
    for (const bad of ['not-a-uuid', '..%2F..%2Fetc', `${node.uuid}x`, '%2Fetc%2Fpasswd']) {
      const res = await get(bad);
      expect([bad, res.status]).toEqual([bad, 400]);
    }
    const unknown = randomUUID();
    expect(await list(unknown)).toEqual({ node: unknown, conductor: 'cond-1', owned: false, affinity_here: false, files: [], truncated: false });
    // Either case of a uuid names the same node.
    expect((await list(node.uuid.toUpperCase())).node).toBe(node.uuid);
  });

  it('needs the RPC credentials: 401 without, with wrong ones and with the API users\' (who may read the status paths)', async () => {
    const none = await get(node.uuid, {});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Basic');
    expect((await get(node.uuid, { authorization: basic('api', 'wrong') })).status).toBe(401);
    const viewer = { authorization: basic('viewer', 'view-pass') };
    expect((await fetch(`${conductor.rpcUrl}/v1/status`, { headers: viewer })).status).toBe(200);
    expect((await get(node.uuid, viewer)).status).toBe(401);
    expect((await get(node.uuid)).status).toBe(200);
  });

  it('never follows, opens or names anything outside its roots', async () => {
    const tftpNode = path.join(config.pxe.tftp_root, node.uuid);
    symlinkSync('/etc/passwd', path.join(tftpNode, 'abs-link'));
    symlinkSync(path.relative(tftpNode, outside), path.join(tftpNode, 'up-link'));
    symlinkSync('config', path.join(tftpNode, 'inside-link'));
    // The node's HTTP directory is a link out of the root, with a manifest naming a MAC: not read.
    symlinkSync(outside, path.join(config.deploy.http_root, node.uuid));
    mkdirSync(path.join(config.pxe.tftp_root, 'pxelinux.cfg'), { recursive: true });
    symlinkSync(`../${node.uuid}/config`, path.join(config.pxe.tftp_root, 'pxelinux.cfg', '01-aa-bb-cc-dd-ee-ff'));
    // A per-MAC link of the node's own MAC that leads out of the root is not the node's.
    symlinkSync('/etc/passwd', path.join(config.pxe.tftp_root, `grub.cfg-01-${node.mac.replaceAll(':', '-')}`));
    try {
      const answer = await list(node.uuid);
      expect(byPath(answer, 'tftp', `${node.uuid}/abs-link`)).toMatchObject({ kind: 'symlink', target: null, target_outside_root: true });
      expect(byPath(answer, 'tftp', `${node.uuid}/up-link`)).toMatchObject({ kind: 'symlink', target: null, target_outside_root: true });
      expect(byPath(answer, 'tftp', `${node.uuid}/inside-link`)).toMatchObject({ kind: 'symlink', target: `${node.uuid}/config`, target_outside_root: false });
      expect(byPath(answer, 'http', node.uuid)).toMatchObject({ kind: 'symlink', target: null, target_outside_root: true });
      expect(answer.files.filter((f) => f.root === 'http')).toHaveLength(1);
      expect(byPath(answer, 'tftp', 'pxelinux.cfg/01-aa-bb-cc-dd-ee-ff')).toBeUndefined();
      expect(answer.files.some((f) => f.path.startsWith('grub.cfg'))).toBe(false);
      const text = JSON.stringify(answer);
      for (const leak of ['secret', 'passwd', 'outside-secret', work, 'aa-bb-cc']) expect(text).not.toContain(leak);
      for (const f of answer.files) expect(f.path.startsWith('/') || f.path.startsWith('..')).toBe(false);
    } finally {
      for (const p of [path.join(tftpNode, 'abs-link'), path.join(tftpNode, 'up-link'), path.join(tftpNode, 'inside-link'), path.join(config.deploy.http_root, node.uuid), path.join(config.pxe.tftp_root, 'pxelinux.cfg', '01-aa-bb-cc-dd-ee-ff'), path.join(config.pxe.tftp_root, `grub.cfg-01-${node.mac.replaceAll(':', '-')}`)]) rmSync(p, { force: true });
    }
  });

  it('stops at 500 entries and says so', async () => {
    const uuid = randomUUID();
    const dir = path.join(config.pxe.tftp_root, uuid);
    mkdirSync(dir);
    for (let i = 0; i < 600; i++) writeFileSync(path.join(dir, `f${String(i).padStart(3, '0')}`), '');
    try {
      const answer = await list(uuid);
      expect(answer.files).toHaveLength(500);
      expect(answer.truncated).toBe(true);
      expect(answer.files[0]).toMatchObject({ path: uuid, kind: 'directory' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
