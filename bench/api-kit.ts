/**
 * What the API benchmarks share: seeding a database with nodes (through a checkout's own built
 * modules, so an older tree seeds its own schema), starting a real `ironring api` process of a
 * checkout, a lean keep-alive HTTP client, and the latency and throughput loops with the CPU time
 * each request cost the API process (from /proc).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** This checkout's root. */
export const HERE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
export const VERSION_HEADER = { 'X-OpenStack-Ironic-API-Version': 'latest' };

interface DbModules {
  openDatabase(url: string): Promise<{ db: { insertInto(table: string): { values(rows: unknown[]): { execute(): Promise<unknown> } } }; close(): Promise<void> }>;
  migrateDatabase(store: unknown): Promise<unknown>;
}

/** Migrates `url` and adds `n` enrolled fake nodes with the modules of the checkout at `root` (its dist/); their uuids. */
export async function seedNodes(url: string, n: number, root = HERE): Promise<string[]> {
  const { openDatabase } = (await import(path.join(root, 'dist', 'db', 'connect.js'))) as Pick<DbModules, 'openDatabase'>;
  const { migrateDatabase } = (await import(path.join(root, 'dist', 'db', 'migrate.js'))) as Pick<DbModules, 'migrateDatabase'>;
  const store = await openDatabase(url);
  await migrateDatabase(store);
  const uuids: string[] = [];
  for (let i = 0; i < n; i += 500) {
    const rows = Array.from({ length: Math.min(500, n - i) }, (_, j) => {
      const uuid = randomUUID();
      uuids.push(uuid);
      return {
        uuid,
        name: `bench-${i + j}`,
        driver: 'fake-hardware',
        provision_state: 'available',
        power_state: 'power off',
        driver_info: JSON.stringify({ ipmi_address: `10.0.${(i + j) >> 8}.${(i + j) & 255}`, ipmi_username: 'admin', ipmi_password: 'secret' }),
        properties: JSON.stringify({ cpus: 32, memory_mb: 262144, local_gb: 1800, cpu_arch: 'x86_64' }),
        resource_class: 'baremetal',
      };
    });
    await store.db.insertInto('nodes').values(rows).execute();
  }
  await store.close();
  return uuids;
}

/**
 * CPU time (µs, user + system) used so far by the processes whose command line matches, from
 * /proc (Linux; 0 elsewhere): shows where each request's work went on a shared machine.
 */
export function cpuMicros(match: (cmdline: string, pid: number) => boolean): number {
  let ticks = 0;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      if (!match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), Number(pid))) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended meanwhile.
    }
  }
  return ticks * 10_000; // USER_HZ = 100 on Linux
}

export interface RunningApi {
  base: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts `ironring api` of the checkout at `root` on `url`, on a free port; `nodeArgs` go to node. */
export async function startApi(url: string, root = HERE, nodeArgs: readonly string[] = []): Promise<RunningApi> {
  const bin = path.join(root, 'bin', 'ironring');
  const child = spawn(process.execPath, [...nodeArgs, bin, 'api', '--database', url, '--api-address', '127.0.0.1:0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`ironring api (${root}) exited with ${code}`)));
  });
  return {
    base,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        child.removeAllListeners('exit');
        child.on('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export type Call = (url: string, method?: string, body?: string) => Promise<{ status: number; body: Buffer }>;

/** A request client: `http` (node:http, 8 keep-alive sockets) or `fetch` (undici, heavier per request). */
export function httpClient(kind: 'http' | 'fetch' = 'http'): Call {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  return async (url, method = 'GET', body) => {
    const headers: Record<string, string> = { ...VERSION_HEADER, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) };
    if (kind === 'fetch') {
      const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    }
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method, headers, agent }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: parts.length === 1 ? parts[0]! : Buffer.concat(parts) }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  };
}

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

/** Median time (ms) to the last byte of `runs` GETs of a listing of 1,000 nodes, after `warmUp` more. */
export async function listLatency(call: Call, url: string, runs: number, warmUp = 2): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs + warmUp; i++) {
    const t = performance.now();
    const res = await call(url);
    // Time to the last byte of the response; checking it (parsing megabytes of JSON) is the client's work.
    const elapsed = performance.now() - t;
    if (i >= warmUp) times.push(elapsed);
    if (i === 0) {
      const body = JSON.parse(res.body.toString()) as { nodes: unknown[] };
      if (res.status !== 200 || body.nodes.length !== 1000) throw new Error(`expected 1000 nodes from ${url}, got ${res.status} with ${body.nodes?.length}`);
    }
  }
  return median(times);
}

export interface Throughput {
  rps: number;
  p50: number;
  p99: number;
  /** CPU µs per request: the API process, PostgreSQL's backends, this load generator. */
  cpu: { api: number; postgres: number; client: number };
}

/** `run` from `concurrency` loops for `seconds`: requests per second, latency percentiles, CPU per request. */
export async function throughput(run: () => Promise<void>, concurrency: number, apiPid: number, seconds: number): Promise<Throughput> {
  const isApi = (_cmd: string, pid: number) => pid === apiPid;
  const isPostgres = (cmd: string) => cmd.startsWith('postgres');
  const before = { api: cpuMicros(isApi), postgres: cpuMicros(isPostgres), client: process.cpuUsage() };
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await run();
        lat.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const client = process.cpuUsage(before.client);
  const per = (us: number) => Math.round(us / lat.length);
  return {
    rps: Math.round(lat.length / elapsed),
    p50: Number(pct(lat, 0.5).toFixed(2)),
    p99: Number(pct(lat, 0.99).toFixed(2)),
    cpu: { api: per(cpuMicros(isApi) - before.api), postgres: per(cpuMicros(isPostgres) - before.postgres), client: per(client.user + client.system) },
  };
}

/** `GET /v1/nodes/{uuid}` over `uuids`, round robin; throws on anything but 200. */
export function showOne(call: Call, base: string, uuids: readonly string[]): () => Promise<void> {
  let k = 0;
  return async () => {
    const res = await call(`${base}/v1/nodes/${uuids[k++ % uuids.length]}`);
    if (res.status !== 200) throw new Error(`GET ${res.status}`);
  };
}

/** `POST /v1/nodes` of a small fake node named `prefix-N`; throws on anything but 201. */
export function createOne(call: Call, base: string, prefix: string): () => Promise<void> {
  let c = 0;
  return async () => {
    const res = await call(`${base}/v1/nodes`, 'POST', JSON.stringify({ driver: 'fake-hardware', name: `${prefix}-${c++}`, properties: { cpus: 8 } }));
    if (res.status !== 201) throw new Error(`POST ${res.status}: ${res.body.toString()}`);
  };
}
