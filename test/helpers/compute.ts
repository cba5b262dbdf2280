/**
 * The compute tier as real processes for scenario tests: `ironring up` (API, conductor, compute
 * service `aio`, scheduler) and further `ironring compute` processes joining its cell, on SQLite (one
 * data directory) or PostgreSQL (a bare-metal/cell schema and an API schema), with short intervals.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ServiceRing } from '../../src/compute/ownership.js';
import { runCli, startCli } from './cli.js';
import type { CliProcess, CliResult } from './cli.js';
import { waitUntil } from './conductors.js';
import { createTestDatabase } from './databases.js';
import type { TestDatabase, TestEngine } from './databases.js';

export const REPORT_INTERVAL = 1;
export const SERVICE_DOWN_TIME = 3;
export const UPDATE_RESOURCES_INTERVAL = 1;

const H = { 'x-openstack-ironic-api-version': 'latest', accept: 'application/json' };
const SUM = `sha256:${'ab'.repeat(32)}`;
export const IMAGE = { kernel: 'http://images.invalid/vmlinuz', kernel_checksum: SUM, ramdisk: 'http://images.invalid/initrd', ramdisk_checksum: SUM };

export interface ServerJson {
  id: string;
  status: string;
  host: string | null;
  node: string | null;
  fault: { message: string; code: number; created: string } | null;
}

export interface ServiceJson {
  host: string;
  binary: string;
  state: string;
  host_mapped: boolean | null;
  nodes: number | null;
}

/** One deployment under test: its databases, its processes, and helpers against its API. */
export class ComputeDeployment {
  base = '';
  readonly processes = new Map<string, CliProcess>();
  private readonly dirs: string[] = [];
  private readonly dbs: TestDatabase[] = [];
  private dataDir = '';
  private databaseUrl: string | null = null;
  apiDatabaseUrl = '';

  constructor(
    readonly engine: TestEngine,
    /** Extra IRONRING_* settings for every process (discovery interval, by-service…). */
    private readonly env: Record<string, string> = {},
  ) {}

  private processEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      IRONRING_COMPUTE_REPORT_INTERVAL: String(REPORT_INTERVAL),
      IRONRING_COMPUTE_SERVICE_DOWN_TIME: String(SERVICE_DOWN_TIME),
      IRONRING_COMPUTE_UPDATE_RESOURCES_INTERVAL: String(UPDATE_RESOURCES_INTERVAL),
      IRONRING_CONDUCTOR_HEARTBEAT_INTERVAL: '1',
      IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: '3',
      IRONRING_LOG_LEVEL: process.env.TEST_LOG ?? 'info',
      ...this.env,
      ...extra,
    };
  }

  /** Starts `ironring up` with compute host `aio`. */
  async up(): Promise<void> {
    this.dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-compute-'));
    this.dirs.push(this.dataDir);
    const args = ['up', '--data-dir', this.dataDir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'];
    const env: Record<string, string> = {};
    if (this.engine === 'postgres') {
      const [main, api] = await Promise.all([createTestDatabase('postgres'), createTestDatabase('postgres')]);
      this.dbs.push(main, api);
      this.databaseUrl = main.url;
      this.apiDatabaseUrl = api.url;
      args.push('--database', main.url);
      env.IRONRING_API_DATABASE_URL = api.url;
    } else {
      this.apiDatabaseUrl = `sqlite://${path.join(this.dataDir, 'api.db')}`;
    }
    const proc = startCli(args, { cwd: this.dataDir, env: this.processEnv(env) });
    this.processes.set('aio', proc);
    const m = await proc.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 60_000);
    this.base = m[1]!;
  }

  /** Starts `ironring compute --host <host>` joining the deployment's cell. */
  async compute(host: string): Promise<CliProcess> {
    const args = ['compute', '--host', host, '--baremetal-endpoint', this.base];
    if (this.engine === 'postgres') {
      const dir = mkdtempSync(path.join(tmpdir(), `ironring-${host}-`));
      this.dirs.push(dir);
      args.push('--data-dir', dir, '--api-database', this.apiDatabaseUrl);
    } else {
      args.push('--data-dir', this.dataDir);
    }
    const proc = startCli(args, { cwd: this.dataDir, env: this.processEnv() });
    this.processes.set(host, proc);
    await proc.waitForOutput(new RegExp(`compute service ${host} is up`), 60_000);
    return proc;
  }

  /** Starts `ironring scheduler --host <host>` with extra settings. */
  async scheduler(host: string, env: Record<string, string>): Promise<CliProcess> {
    const proc = startCli(['scheduler', '--host', host, '--api-database', this.apiDatabaseUrl, '--data-dir', this.dataDir], { cwd: this.dataDir, env: this.processEnv(env) });
    this.processes.set(host, proc);
    await proc.waitForOutput(new RegExp(`scheduler ${host} is up`), 60_000);
    return proc;
  }

  /** `ironring manage cell discover-hosts …` against the deployment's API database. */
  discoverHosts(...flags: string[]): CliResult {
    return runCli(['manage', 'cell', 'discover-hosts', '--api-database', this.apiDatabaseUrl, ...flags]);
  }

  async request<T>(method: string, url: string, body?: unknown): Promise<{ status: number; json: T; text: string }> {
    const res = await fetch(`${this.base}${url}`, { method, headers: { ...H, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, json: json as T, text };
  }

  /** Enrolls a fake-hardware node and makes it available. */
  async enroll(uuid: string, resourceClass: string): Promise<void> {
    const created = await this.request('POST', '/v1/nodes', { uuid, driver: 'fake-hardware', resource_class: resourceClass });
    if (created.status !== 201) throw new Error(`node create: ${created.status} ${created.text}`);
    for (const [target, state] of [['manage', 'manageable'], ['provide', 'available']] as const) {
      const res = await this.request('PUT', `/v1/nodes/${uuid}/states/provision`, { target });
      if (res.status !== 202) throw new Error(`${target}: ${res.status} ${res.text}`);
      await waitUntil(async () => {
        const s = (await this.request<{ provision_state: string; target_provision_state: string | null }>('GET', `/v1/nodes/${uuid}/states`)).json;
        return s.provision_state === state && s.target_provision_state === null;
      }, 30_000, `${uuid} to be ${state}`);
    }
  }

  async computeNodes(): Promise<Map<string, string>> {
    const res = await this.request<{ compute_nodes: Array<{ uuid: string; host: string }> }>('GET', '/compute/v1/compute-nodes');
    return new Map(res.json.compute_nodes.map((n) => [n.uuid, n.host]));
  }

  async services(): Promise<ServiceJson[]> {
    return (await this.request<{ services: ServiceJson[] }>('GET', '/compute/v1/services')).json.services.filter((s) => s.binary === 'ironring-compute');
  }

  async server(id: string): Promise<ServerJson | null> {
    const res = await this.request<ServerJson>('GET', `/compute/v1/servers/${id}`);
    return res.status === 404 ? null : res.json;
  }

  /** POST /compute/v1/servers; the raw answer. */
  createServer(resourceClass: string, name?: string, image: typeof IMAGE = IMAGE) {
    return this.request<ServerJson>('POST', '/compute/v1/servers', { ...(name ? { name } : {}), resource_class: resourceClass, image });
  }

  /** Creates a server and waits until it is ACTIVE; throws with the reason otherwise. */
  async createActiveServer(resourceClass: string, timeoutMs = 60_000): Promise<ServerJson> {
    const res = await this.createServer(resourceClass);
    if (res.status !== 202) throw new Error(`server create: ${res.status} ${res.text}`);
    let server = res.json;
    await waitUntil(async () => {
      server = (await this.server(res.json.id))!;
      if (server.status === 'ERROR') throw new Error(`server ${server.id} failed: ${server.fault?.message}`);
      return server.status === 'ACTIVE';
    }, timeoutMs, `server ${res.json.id} to be ACTIVE`);
    return server;
  }

  /** Deletes a server and waits until it is gone. */
  async deleteServer(id: string, timeoutMs = 60_000): Promise<void> {
    const res = await this.request('DELETE', `/compute/v1/servers/${id}`);
    if (res.status !== 202 && res.status !== 204) throw new Error(`server delete: ${res.status} ${res.text}`);
    await waitUntil(async () => (await this.server(id)) === null, timeoutMs, `server ${id} to be deleted`);
  }

  /** Stops every process (SIGKILL for those still running) and drops the databases. */
  async close(): Promise<void> {
    for (const p of this.processes.values()) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }
    for (const d of this.dbs) await d.drop().catch(() => undefined);
    for (const d of this.dirs) rmSync(d, { recursive: true, force: true });
  }
}

/**
 * Node uuids whose owners on the ring over `hosts` are `owners`, in that order — so a scenario can
 * say "the second node lands on c2" and rely on it.
 */
export function uuidsOwnedBy(hosts: readonly string[], owners: readonly string[]): string[] {
  const ring = ServiceRing.of(hosts);
  return owners.map((owner) => {
    for (;;) {
      const uuid = randomUUID();
      if (ring.owner(uuid) === owner) return uuid;
    }
  });
}
