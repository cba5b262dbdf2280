/**
 * Every list filter and sort option of the stock `baremetal` client (Debian `python3-ironicclient`)
 * against a real `ironring up`: `node list --provision-state/--driver/--resource-class/--maintenance/
 * --associated/--conductor-group/--conductor/--fault/--sort/--limit/--marker/--fields`, `port list
 * --node/--address/--sort/--limit`, `driver list --type`, `conductor list --sort/--limit`.
 *
 * The nodes differ in every filtered field, so a filter the server ignored changes the answer; the
 * answers are exact lists of names. Seeding goes through the HTTP API (faster than one Python start
 * per change); every listing goes through the real client.
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { findCommand, requirePeer } from '../helpers/peers.js';

const BAREMETAL = process.env.TEST_BAREMETAL_BIN ?? 'baremetal';
const available = process.env.TEST_BAREMETAL_BIN !== undefined || requirePeer('baremetal', 'python3-ironicclient');
/** The Python that runs the client (its shebang), to drive the same package as a library. */
function clientPython(): string {
  const bin = BAREMETAL.includes('/') ? BAREMETAL : findCommand(BAREMETAL);
  const shebang = bin === null ? null : /^#!\s*(\S+)/.exec(readFileSync(bin, 'utf8').split('\n', 1)[0]!);
  return shebang?.[1] ?? 'python3';
}

/**
 * Lists through `ironicclient`'s library (what Nova's driver and scripts call), which sends sort_key
 * and sort_dir to the server, unlike the CLI. Prints one JSON object: case name → names/addresses.
 */
const LIBRARY_LISTS = `
import json, sys
from ironicclient import client
c = client.get_client('1', endpoint=sys.argv[1], auth_type='none', os_ironic_api_version='latest')
out = {}
for key in ['name', 'resource_class', 'provision_state', 'driver', 'maintenance', 'conductor_group', 'instance_uuid', 'created_at']:
    for d in ['asc', 'desc']:
        out[key + ':' + d] = [n.name for n in c.node.list(sort_key=key, sort_dir=d, limit=0)]
out['page'] = [n.name for n in c.node.list(sort_key='name', sort_dir='desc', limit=2)]
out['marker'] = [n.name for n in c.node.list(sort_key='name', sort_dir='desc', marker=sys.argv[2], limit=0)]
out['filtered'] = [n.name for n in c.node.list(provision_state='enroll', sort_key='driver', sort_dir='desc', limit=0)]
out['ports:asc'] = [p.address for p in c.port.list(sort_key='address', sort_dir='asc', limit=0)]
out['ports:page'] = [p.address for p in c.port.list(sort_key='address', sort_dir='desc', limit=2)]
out['ports:node'] = [p.address for p in c.port.list(node='a1', sort_key='address', sort_dir='desc', limit=0)]
out['conductors'] = [x.hostname for x in c.conductor.list(sort_key='hostname', sort_dir='desc', limit=1)]
print(json.dumps(out))
`;

const LATEST = { 'X-OpenStack-Ironic-API-Version': 'latest', 'Content-Type': 'application/json' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment for the client: no OS_* settings or clouds.yaml of the caller, caches in `home`. */
function clientEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OS_') && !k.startsWith('IRONRING_')) env[k] = v;
  return { ...env, HOME: home, XDG_CACHE_HOME: path.join(home, '.cache'), XDG_CONFIG_HOME: path.join(home, '.config') };
}

/**
 * The seeded nodes, in creation order: name → what differs. a1 and a5 are made manageable, a1 is in
 * maintenance, a2 has an instance, a4 is in a group no conductor serves.
 */
const NODES = [
  { name: 'a1', driver: 'fake-hardware', resource_class: 'small', conductor_group: '' },
  { name: 'a2', driver: 'fake-hardware', resource_class: 'large', conductor_group: '' },
  { name: 'a3', driver: 'ipmi', resource_class: 'small', conductor_group: '' },
  { name: 'a4', driver: 'fake-hardware', resource_class: 'large', conductor_group: 'rack9' },
  { name: 'a5', driver: 'fake-hardware', conductor_group: '' },
] as const;
/** Ports: MAC → node name, created in this order (not MAC order). */
const PORTS = [['52:54:00:aa:00:02', 'a1'], ['52:54:00:aa:00:03', 'a2'], ['52:54:00:aa:00:01', 'a1']] as const;

describe.skipIf(!available)('list filters and sorting through the stock baremetal CLI against ironring up', () => {
  let dir: string;
  let up: CliProcess;
  let endpoint: string;
  const uuids = new Map<string, string>();

  async function api(method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${endpoint}${url}`, { method, headers: LATEST, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    expect(res.status, `${method} ${url}: ${text}`).toBeLessThan(300);
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  /** Polls the API until the node reaches `state` (changes finish after the 202). */
  async function waitForState(name: string, state: string): Promise<void> {
    for (;;) {
      const node = await api('GET', `/v1/nodes/${name}?fields=provision_state,last_error`);
      if (node.provision_state === state) return;
      // No time bound of its own: the test's timeout is the only limit (the machine may be loaded).
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-baremetal-list-'));
    // python-ironicclient creates its cache directory without tolerating one that appears meanwhile.
    mkdirSync(path.join(dir, '.cache', 'python-ironicclient'), { recursive: true });
    up = startCli(
      ['up', '--data-dir', path.join(dir, 'data'), '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'],
      { cwd: dir },
    );
    endpoint = (await up.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
    // One at a time: creation order is the default list order the tests rely on.
    for (const node of NODES) uuids.set(node.name, (await api('POST', '/v1/nodes', node)).uuid as string);
    for (const [address, node] of PORTS) await api('POST', '/v1/ports', { address, node_uuid: uuids.get(node) });
    await Promise.all(['a1', 'a5'].map((n) => api('PUT', `/v1/nodes/${n}/states/provision`, { target: 'manage' })));
    await Promise.all(['a1', 'a5'].map((n) => waitForState(n, 'manageable')));
    await api('PUT', '/v1/nodes/a1/maintenance', { reason: 'fan' });
    await api('PATCH', '/v1/nodes/a2', [{ op: 'add', path: '/instance_uuid', value: '6f1c3a52-4b0e-4c3e-9a57-1f5d2f0b9a11' }]);
    // The seed is as the expectations below assume.
    const seen = (await api('GET', '/v1/nodes?fields=name,provision_state,maintenance,instance_uuid,conductor')).nodes as Array<Record<string, unknown>>;
    expect(seen.map((n) => [n.name, n.provision_state, n.maintenance, n.instance_uuid !== null, n.conductor])).toEqual([
      ['a1', 'manageable', true, false, 'aio'],
      ['a2', 'enroll', false, true, 'aio'],
      ['a3', 'enroll', false, false, 'aio'],
      ['a4', 'enroll', false, false, null],
      ['a5', 'manageable', false, false, 'aio'],
    ]);
  }, 120_000);

  afterAll(async () => {
    if (up && up.child.exitCode === null) up.child.kill('SIGTERM');
    await up?.exited;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function baremetal(...args: string[]): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(BAREMETAL, ['--os-endpoint', endpoint, '--os-auth-type', 'none', ...args], { env: clientEnv(dir) });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** `baremetal <args> -f json`, which must succeed; the parsed rows. */
  async function rows(...args: string[]): Promise<Array<Record<string, unknown>>> {
    const res = await baremetal(...args, '-f', 'json');
    expect(res.code, `baremetal ${args.join(' ')}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`).toBe(0);
    return JSON.parse(res.stdout) as Array<Record<string, unknown>>;
  }

  /** The names `baremetal node list <args>` prints, in its order. */
  const names = async (...args: string[]) => (await rows('node', 'list', ...args, '-c', 'Name')).map((r) => r.Name);

  it('node list filters: provision state, driver, resource class, maintenance, instance association', async () => {
    const cases: Array<[string[], string[]]> = [
      [[], ['a1', 'a2', 'a3', 'a4', 'a5']],
      [['--provision-state', 'manageable'], ['a1', 'a5']],
      [['--provision-state', 'enroll'], ['a2', 'a3', 'a4']],
      [['--provision-state', 'active'], []],
      [['--driver', 'ipmi'], ['a3']],
      [['--driver', 'fake-hardware'], ['a1', 'a2', 'a4', 'a5']],
      [['--resource-class', 'small'], ['a1', 'a3']],
      [['--resource-class', 'large'], ['a2', 'a4']],
      [['--maintenance'], ['a1']],
      [['--no-maintenance'], ['a2', 'a3', 'a4', 'a5']],
      [['--associated'], ['a2']],
      [['--unassociated'], ['a1', 'a3', 'a4', 'a5']],
      [['--provision-state', 'enroll', '--resource-class', 'large'], ['a2', 'a4']],
      [['--provision-state', 'manageable', '--no-maintenance', '--long'], ['a5']],
    ];
    const got = await Promise.all(cases.map(([args]) => names(...args)));
    expect(got).toEqual(cases.map(([, expected]) => expected));
  }, 120_000);

  it('node list filters: conductor group, conductor and fault', async () => {
    const cases: Array<[string[], string[]]> = [
      [['--conductor-group', 'rack9'], ['a4']],
      [['--conductor-group', ''], ['a1', 'a2', 'a3', 'a5']],
      [['--conductor', 'aio'], ['a1', 'a2', 'a3', 'a5']],
      [['--conductor', 'elsewhere'], []],
      [['--conductor', 'aio', '--driver', 'fake-hardware', '--limit', '2'], ['a1', 'a2']],
      // ironring records no faults: a valid fault matches no node.
      [['--fault', 'power failure'], []],
    ];
    const got = await Promise.all(cases.map(([args]) => names(...args)));
    expect(got).toEqual(cases.map(([, expected]) => expected));
  }, 120_000);

  it('node list sorts, limits, resumes at a marker and shows only the asked fields', async () => {
    // `baremetal … list --sort` sorts the rows it received (osc sort_items) and never sends sort_key:
    // with --limit it sorts the server's first page. The server's sort keys are checked through the
    // client library below.
    const cases: Array<[string[], string[]]> = [
      [['--sort', 'name:desc'], ['a5', 'a4', 'a3', 'a2', 'a1']],
      [['--sort', 'name'], ['a1', 'a2', 'a3', 'a4', 'a5']],
      [['--limit', '2'], ['a1', 'a2']],
      [['--limit', '2', '--sort', 'name:desc'], ['a2', 'a1']],
      [['--limit', '0'], ['a1', 'a2', 'a3', 'a4', 'a5']],
      [['--marker', uuids.get('a2')!], ['a3', 'a4', 'a5']],
      [['--marker', uuids.get('a2')!, '--limit', '2', '--provision-state', 'enroll'], ['a3', 'a4']],
      [['--marker', uuids.get('a4')!, '--sort', 'name:desc', '--limit', '2'], ['a5']],
    ];
    const got = await Promise.all(cases.map(([args]) => names(...args)));
    expect(got).toEqual(cases.map(([, expected]) => expected));

    const fields = await rows('node', 'list', '--fields', 'name', 'driver', 'resource_class', '--driver', 'ipmi');
    expect(fields).toEqual([{ Name: 'a3', Driver: 'ipmi', 'Resource Class': 'small' }]);
  }, 120_000);

  it('the client library sorts on the server by every key, both ways, with limits and markers', async () => {
    const run = await new Promise<Run>((resolve, reject) => {
      const child = spawn(clientPython(), ['-c', LIBRARY_LISTS, endpoint, uuids.get('a4')!], { env: clientEnv(dir) });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(run.code, run.stderr).toBe(0);
    // NULL lowest; ties in creation order, reversed with the direction (Ironic's (key, id) order).
    expect(JSON.parse(run.stdout)).toEqual({
      'name:asc': ['a1', 'a2', 'a3', 'a4', 'a5'],
      'name:desc': ['a5', 'a4', 'a3', 'a2', 'a1'],
      'resource_class:asc': ['a5', 'a2', 'a4', 'a1', 'a3'],
      'resource_class:desc': ['a3', 'a1', 'a4', 'a2', 'a5'],
      'provision_state:asc': ['a2', 'a3', 'a4', 'a1', 'a5'],
      'provision_state:desc': ['a5', 'a1', 'a4', 'a3', 'a2'],
      'driver:asc': ['a1', 'a2', 'a4', 'a5', 'a3'],
      'driver:desc': ['a3', 'a5', 'a4', 'a2', 'a1'],
      'maintenance:asc': ['a2', 'a3', 'a4', 'a5', 'a1'],
      'maintenance:desc': ['a1', 'a5', 'a4', 'a3', 'a2'],
      'conductor_group:asc': ['a1', 'a2', 'a3', 'a5', 'a4'],
      'conductor_group:desc': ['a4', 'a5', 'a3', 'a2', 'a1'],
      'instance_uuid:asc': ['a1', 'a3', 'a4', 'a5', 'a2'],
      'instance_uuid:desc': ['a2', 'a5', 'a4', 'a3', 'a1'],
      'created_at:asc': ['a1', 'a2', 'a3', 'a4', 'a5'],
      'created_at:desc': ['a5', 'a4', 'a3', 'a2', 'a1'],
      page: ['a5', 'a4'],
      marker: ['a3', 'a2', 'a1'],
      filtered: ['a3', 'a4', 'a2'],
      'ports:asc': ['52:54:00:aa:00:01', '52:54:00:aa:00:02', '52:54:00:aa:00:03'],
      'ports:page': ['52:54:00:aa:00:03', '52:54:00:aa:00:02'],
      'ports:node': ['52:54:00:aa:00:02', '52:54:00:aa:00:01'],
      conductors: ['aio'],
    });
  }, 120_000);

  it('node list refuses an unknown state or fault with the server\'s message', async () => {
    // (The client itself refuses a sort key that is not a shown column, before asking the server.)
    const [state, fault] = await Promise.all([
      baremetal('node', 'list', '--provision-state', 'sleeping'),
      baremetal('node', 'list', '--fault', 'overheated'),
    ]);
    for (const res of [state, fault]) expect(res.code).not.toBe(0);
    expect(state.stderr).toMatch(/provision_state.*sleeping/);
    expect(fault.stderr).toMatch(/fault.*overheated/);
  }, 120_000);

  it('port list filters by node and address, sorts and limits', async () => {
    const addresses = async (...args: string[]) => (await rows('port', 'list', ...args, '-c', 'Address')).map((r) => r.Address);
    const cases: Array<[string[], string[]]> = [
      [[], ['52:54:00:aa:00:02', '52:54:00:aa:00:03', '52:54:00:aa:00:01']],
      [['--node', 'a1'], ['52:54:00:aa:00:02', '52:54:00:aa:00:01']],
      [['--node', uuids.get('a2')!], ['52:54:00:aa:00:03']],
      [['--node', 'a3'], []],
      [['--address', '52:54:00:AA:00:03'], ['52:54:00:aa:00:03']],
      [['--address', '52:54:00:aa:00:09'], []],
      [['--sort', 'address'], ['52:54:00:aa:00:01', '52:54:00:aa:00:02', '52:54:00:aa:00:03']],
      [['--sort', 'address:desc'], ['52:54:00:aa:00:03', '52:54:00:aa:00:02', '52:54:00:aa:00:01']],
      [['--node', 'a1', '--sort', 'address:asc'], ['52:54:00:aa:00:01', '52:54:00:aa:00:02']],
      [['--limit', '1'], ['52:54:00:aa:00:02']],
      [['--limit', '2', '--sort', 'address:desc'], ['52:54:00:aa:00:03', '52:54:00:aa:00:02']],
    ];
    const got = await Promise.all(cases.map(([args]) => addresses(...args)));
    expect(got).toEqual(cases.map(([, expected]) => expected));
  }, 120_000);

  it('driver list filters by type; conductor list sorts and limits', async () => {
    const [all, dynamic, classic, conductors, limited] = await Promise.all([
      rows('driver', 'list'),
      rows('driver', 'list', '--type', 'dynamic'),
      rows('driver', 'list', '--type', 'classic'),
      rows('conductor', 'list', '--sort', 'hostname:desc'),
      rows('conductor', 'list', '--limit', '1'),
    ]);
    expect(all.map((d) => d['Supported driver(s)'])).toEqual(expect.arrayContaining(['fake-hardware', 'ipmi']));
    expect(dynamic).toEqual(all);
    expect(classic).toEqual([]);
    expect(conductors).toEqual([{ Hostname: 'aio', 'Conductor Group': '', Alive: true }]);
    expect(limited).toEqual(conductors);
  }, 120_000);
});
