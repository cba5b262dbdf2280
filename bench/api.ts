/**
 * `npm run bench:api [-- --json]`: the REST API's speed against a real `ironring api` process on
 * SQLite and on PostgreSQL, with 1,000 and 10,000 nodes (DESIGN §8): median latency of
 * `GET /v1/nodes?limit=1000` and `?detail=True&limit=1000`, `GET /v1/nodes/{uuid}` requests/s with
 * 8 concurrent keep-alive clients (p50/p99), and `POST /v1/nodes` creates/s.
 *
 * Options: --json (one JSON object on the last line), --sizes 1000,10000, --engines sqlite,postgres,
 * --seconds N (per throughput run, default 3).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/db/connect.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { benchDatabase } from './bench-database.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const asJson = args.includes('--json');
const sizes = flag('--sizes', '1000,10000').split(',').map(Number);
const engines = flag('--engines', 'sqlite,postgres').split(',');
const seconds = Number(flag('--seconds', '3'));
/** The load generator: `http` (node:http, keep-alive agent; default) or `fetch` (undici, heavier per request). */
const client = flag('--client', 'http');
if (client !== 'http' && client !== 'fetch') throw new Error(`--client: expected http or fetch, got ${client}`);
const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'ironring');
const H = { 'X-OpenStack-Ironic-API-Version': 'latest' };

const say = (line: string) => {
  if (!asJson) console.log(line);
};


async function seed(url: string, n: number): Promise<string[]> {
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
function cpuMicros(match: (cmdline: string, pid: number) => boolean): number {
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

async function startApi(url: string): Promise<{ base: string; pid: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean), BIN, 'api', '--database', url, '--api-address', '127.0.0.1:0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`ironring api exited with ${code}`)));
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

/** One keep-alive connection per concurrent client, as an HTTP benchmark tool would hold them. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** A request through the lean client or through fetch; resolves with the status and the whole body. */
async function call(url: string, method = 'GET', body?: string): Promise<{ status: number; body: Buffer }> {
  const headers: Record<string, string> = { ...H, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) };
  if (client === 'fetch') {
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
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function latency(url: string, runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const t = performance.now();
    const res = await call(url);
    // Time to the last byte of the response; checking it (parsing megabytes of JSON) is the client's work.
    const elapsed = performance.now() - t;
    if (i >= 2) times.push(elapsed); // two warm-up requests
    if (i === 0) {
      const body = JSON.parse(res.body.toString()) as { nodes: unknown[] };
      if (res.status !== 200 || body.nodes.length !== 1000) throw new Error(`expected 1000 nodes from ${url}, got ${res.status} with ${body.nodes?.length}`);
    }
  }
  return median(times);
}

interface Throughput {
  rps: number;
  p50: number;
  p99: number;
  /** CPU µs per request: the API process, PostgreSQL's backends, this load generator. */
  cpu: { api: number; postgres: number; client: number };
}

async function throughput(run: () => Promise<void>, concurrency: number, apiPid: number): Promise<Throughput> {
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

const results: Record<string, Record<string, number>> = {};
for (const engine of engines) {
  for (const size of sizes) {
    const db = await benchDatabase(engine, 'api');
    try {
      const uuids = await seed(db.url, size);
      const api = await startApi(db.url);
      try {
        const list = await latency(`${api.base}/v1/nodes?limit=1000`, 15);
        const detail = await latency(`${api.base}/v1/nodes?detail=True&limit=1000`, 15);
        let k = 0;
        const get = await throughput(async () => {
          const res = await call(`${api.base}/v1/nodes/${uuids[k++ % uuids.length]}`);
          if (res.status !== 200) throw new Error(`GET ${res.status}`);
        }, 8, api.pid);
        let c = 0;
        const create = await throughput(async () => {
          const res = await call(`${api.base}/v1/nodes`, 'POST', JSON.stringify({ driver: 'fake-hardware', name: `new-${process.pid}-${c++}`, properties: { cpus: 8 } }));
          if (res.status !== 201) throw new Error(`POST ${res.status}: ${res.body.toString()}`);
        }, 8, api.pid);
        const key = `${engine}_${size}`;
        results[key] = {
          list_1000_ms: Number(list.toFixed(2)),
          detail_1000_ms: Number(detail.toFixed(2)),
          get_rps: get.rps,
          get_p50_ms: get.p50,
          get_p99_ms: get.p99,
          create_rps: create.rps,
          get_cpu_us_api: get.cpu.api,
          get_cpu_us_postgres: get.cpu.postgres,
          get_cpu_us_client: get.cpu.client,
          create_cpu_us_api: create.cpu.api,
          create_cpu_us_postgres: create.cpu.postgres,
        };
        say(`${key.padEnd(16)} list ${list.toFixed(1)} ms, detail ${detail.toFixed(1)} ms, get ${get.rps} req/s (p50 ${get.p50} ms, p99 ${get.p99} ms), create ${create.rps} req/s; CPU µs per GET: api ${get.cpu.api}, postgres ${get.cpu.postgres}, client ${get.cpu.client}`);
      } finally {
        await api.stop();
      }
    } finally {
      await db.drop();
    }
  }
}

const targets = { list_1000_ms: 20, detail_1000_ms: 40, get_rps: 3000, create_rps: 1000 };
const met = Object.values(results).every((r) => r.list_1000_ms! <= targets.list_1000_ms && r.detail_1000_ms! <= targets.detail_1000_ms && r.get_rps! >= targets.get_rps && r.create_rps! >= targets.create_rps);
const ironic = { list_1000_ms: 189, detail_1000_ms: 354, get_rps: 326, create_rps: 106 };
say(`targets: list <= 20 ms, detail <= 40 ms, get >= 3000 req/s, create >= 1000 req/s (Ironic 21.4 here: 189 ms / 354 ms / 326 req/s / 106 req/s)`);
console.log(JSON.stringify({ bench: 'api', seconds, results, targets, ironic_21_4: ironic, met }));
