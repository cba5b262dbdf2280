/**
 * `npm run bench:web [-- --json]`: the dashboard's nodes list at 10,000 nodes (target: first page
 * in under 300 ms of server time, issue 20). Seeds the nodes (SQLite, and PostgreSQL when it is
 * reachable) with three live conductors, then times `GET /ui/nodes` in the API process itself
 * (fastify's inject: routing, hooks, the query, the ring owners, the HTML; no network): the first
 * page (50 rows), a page deep in the list (keyset), 1,000 rows, and a filtered search that scans.
 *
 * Options: --json (one JSON object on the last line), --nodes N (default 10000), --runs N (default
 * 50), --engines sqlite,postgres.
 */
import { randomUUID } from 'node:crypto';
import { buildApi } from '../src/api/server.js';
import { registerConductor } from '../src/cluster/membership.js';
import { createLogger } from '../src/common/logger.js';
import { loadConfig } from '../src/config/load.js';
import { openDatabase } from '../src/db/connect.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { benchDatabase } from './bench-database.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const asJson = args.includes('--json');
const nodes = Number(flag('--nodes', '10000'));
const runs = Number(flag('--runs', '50'));
const engines = flag('--engines', 'sqlite,postgres').split(',');
const say = (line: string) => {
  if (!asJson) console.log(line);
};

const STATES = ['available', 'active', 'active', 'active', 'manageable', 'deploy failed', 'cleaning', 'enroll'];

async function measure(engine: string): Promise<Record<string, number> | null> {
  let db;
  try {
    db = await benchDatabase(engine, 'web');
  } catch (err) {
    say(`${engine}: skipped (${(err as Error).message})`);
    return null;
  }
  const store = await openDatabase(db.url);
  try {
    await migrateDatabase(store);
    for (const host of ['c1', 'c2', 'c3']) await registerConductor(store, { hostname: host, group: '', drivers: ['fake-hardware'], rpcUrl: null }, 60);
    for (let i = 0; i < nodes; i += 500) {
      const rows = Array.from({ length: Math.min(500, nodes - i) }, (_, j) => {
        const k = i + j;
        return {
          uuid: randomUUID(),
          name: `bench-${k}`,
          driver: 'fake-hardware',
          provision_state: STATES[k % STATES.length]!,
          power_state: k % 3 === 0 ? 'power off' : 'power on',
          owner: `project-${k % 20}`,
          maintenance: k % 50 === 0,
          last_error: k % STATES.length === 5 ? `Deploy step deploy.deploy failed on node bench-${k}: ${'x'.repeat(400)}` : null,
          driver_info: JSON.stringify({ ipmi_address: `10.0.${k >> 8}.${k & 255}`, ipmi_username: 'admin', ipmi_password: 'secret' }),
          resource_class: 'baremetal',
        };
      });
      await store.db.insertInto('nodes').values(rows).execute();
    }
    const config = loadConfig({ env: { IRONRING_DATABASE_URL: db.url } }).config;
    const app = buildApi({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    await app.ready();
    const deep = (await store.db.selectFrom('nodes').select('id').orderBy('id').offset(Math.floor(nodes / 2)).limit(1).executeTakeFirst())?.id ?? 0;
    const cases: Array<[string, string]> = [
      ['first_page_ms', '/ui/nodes'],
      ['deep_page_ms', `/ui/nodes?after=${deep}`],
      ['page_1000_ms', '/ui/nodes?limit=1000'],
      ['filtered_search_ms', '/ui/nodes?q=bench-99&provision_state=active&power_state=power+on'],
    ];
    const result: Record<string, number> = {};
    for (const [key, url] of cases) {
      const times: number[] = [];
      for (let r = 0; r < runs + 5; r++) {
        const t0 = performance.now();
        const res = await app.inject({ url, headers: { accept: 'text/html' } });
        const ms = performance.now() - t0;
        if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
        if (r >= 5) times.push(ms);
      }
      times.sort((a, b) => a - b);
      result[key] = Number(times[Math.floor(times.length / 2)]!.toFixed(2));
      result[key.replace('_ms', '_p95_ms')] = Number(times[Math.floor(times.length * 0.95)]!.toFixed(2));
    }
    await app.close();
    say(`${engine.padEnd(9)} ${nodes} nodes: first page ${result.first_page_ms} ms (p95 ${result.first_page_p95_ms}), deep page ${result.deep_page_ms} ms, 1000 rows ${result.page_1000_ms} ms, filtered search ${result.filtered_search_ms} ms (target: first page < 300 ms)`);
    return result;
  } finally {
    await store.close();
    await db.drop();
  }
}

const out: Record<string, unknown> = { nodes, runs, target_first_page_ms: 300 };
for (const engine of engines) {
  const r = await measure(engine);
  if (r !== null) for (const [k, v] of Object.entries(r)) out[`${engine}_${k}`] = v;
}
if (asJson) console.log(JSON.stringify(out));
