/**
 * `npm run bench:api [-- --json]`: the REST API's speed against a real `ironring api` process on
 * SQLite and on PostgreSQL, with 1,000 and 10,000 nodes (DESIGN §8): median latency of
 * `GET /v1/nodes?limit=1000` and `?detail=True&limit=1000`, `GET /v1/nodes/{uuid}` requests/s with
 * 8 concurrent keep-alive clients (p50/p99), and `POST /v1/nodes` creates/s.
 *
 * Options: --json (one JSON object on the last line), --sizes 1000,10000, --engines sqlite,postgres,
 * --seconds N (per throughput run, default 3).
 */
import { benchDatabase } from './bench-database.js';
import { createOne, httpClient, listLatency, seedNodes, showOne, startApi, throughput } from './api-kit.js';

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
const call = httpClient(client);

const say = (line: string) => {
  if (!asJson) console.log(line);
};

const results: Record<string, Record<string, number>> = {};
for (const engine of engines) {
  for (const size of sizes) {
    const db = await benchDatabase(engine, 'api');
    try {
      const uuids = await seedNodes(db.url, size);
      const api = await startApi(db.url, undefined, (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean));
      try {
        const list = await listLatency(call, `${api.base}/v1/nodes?limit=1000`, 15);
        const detail = await listLatency(call, `${api.base}/v1/nodes?detail=True&limit=1000`, 15);
        const get = await throughput(showOne(call, api.base, uuids), 8, api.pid, seconds);
        const create = await throughput(createOne(call, api.base, `new-${process.pid}`), 8, api.pid, seconds);
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
