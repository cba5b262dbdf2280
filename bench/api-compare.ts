/**
 * `npm run bench:api-compare -- --base DIR [--json]`: the API benchmark of this checkout and of
 * another one (DIR: e.g. a `git worktree` of an older commit, built with `npx tsc -p
 * tsconfig.build.json`, its node_modules linked) side by side in one run, as the project's numbers
 * are to be compared on a shared, noisy machine: both `ironring api` processes run at once on
 * databases seeded alike, and every round measures both, one after the other, in alternating order
 * — so whatever else loads the machine falls on both. Per round: median latency of a 1,000-node
 * list and detailed list, GET requests/s and POST creates/s (8 keep-alive clients), and the API
 * process's CPU µs per listing, per GET and per create. Printed: the median over the rounds of each side and
 * their ratio (this checkout ÷ base; below 1 is faster for times and CPU, above 1 for rates).
 *
 * Options: --base DIR (required), --engines sqlite,postgres (default sqlite), --size N (nodes, default
 * 1000), --rounds N (default 7), --seconds S (per throughput measure, default 1), --json.
 */
import { benchDatabase } from './bench-database.js';
import type { BenchDatabase } from './bench-database.js';
import { cpuMicros, createOne, HERE, httpClient, listLatency, median, seedNodes, showOne, startApi, throughput } from './api-kit.js';
import type { RunningApi } from './api-kit.js';
import { benchArgs } from './bench-args.js';

const cli = benchArgs();
const baseDir = cli.option('--base');
if (baseDir === undefined) throw new Error('--base DIR: the checkout to compare with (built, with node_modules)');
const engines = (cli.option('--engines') ?? 'sqlite').split(',');
const size = Number(cli.option('--size') ?? '1000');
const rounds = Number(cli.option('--rounds') ?? '7');
const seconds = Number(cli.option('--seconds') ?? '1');
if (!(size >= 1000) || !(rounds >= 1) || !(seconds > 0)) throw new Error('--size must be at least 1000, --rounds at least 1, --seconds above 0');
const call = httpClient('http');

const METRICS = ['list_1000_ms', 'detail_1000_ms', 'list_cpu_us_api', 'detail_cpu_us_api', 'get_rps', 'create_rps', 'get_cpu_us_api', 'create_cpu_us_api'] as const;
type Metric = (typeof METRICS)[number];
type Sample = Record<Metric, number>;

interface Side {
  name: 'base' | 'head';
  root: string;
  db: BenchDatabase;
  api: RunningApi;
  uuids: string[];
}

async function measure(side: Side, round: number): Promise<Sample> {
  const { base, pid } = side.api;
  // CPU of the API process per listing too: wall times on a loaded machine say more about it than about the code.
  const apiCpu = () => cpuMicros((_cmd, p) => p === pid);
  let cpu = apiCpu();
  const list = await listLatency(call, `${base}/v1/nodes?limit=1000`, 8, 1);
  const listCpu = (apiCpu() - cpu) / 9;
  cpu = apiCpu();
  const detail = await listLatency(call, `${base}/v1/nodes?detail=True&limit=1000`, 8, 1);
  const detailCpu = (apiCpu() - cpu) / 9;
  const get = await throughput(showOne(call, base, side.uuids), 8, pid, seconds);
  const create = await throughput(createOne(call, base, `cmp-${round}`), 8, pid, seconds);
  return { list_1000_ms: list, detail_1000_ms: detail, list_cpu_us_api: Math.round(listCpu), detail_cpu_us_api: Math.round(detailCpu), get_rps: get.rps, create_rps: create.rps, get_cpu_us_api: get.cpu.api, create_cpu_us_api: create.cpu.api };
}

const round2 = (n: number) => Number(n.toFixed(2));
const results: Record<string, unknown> = {};
for (const engine of engines) {
  const sides: Side[] = [];
  try {
    for (const [name, root] of [['base', baseDir], ['head', HERE]] as const) {
      const db = await benchDatabase(engine, `apicmp${name}`);
      const uuids = await seedNodes(db.url, size, root);
      sides.push({ name, root, db, uuids, api: await startApi(db.url, root) });
    }
    const samples: Record<'base' | 'head', Sample[]> = { base: [], head: [] };
    for (let r = 0; r < rounds; r++) {
      // Alternating order: neither side always runs first (warmer caches, a quieter moment).
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) samples[side.name].push(await measure(side, r));
      cli.say(`${engine} round ${r + 1}/${rounds}: base ${JSON.stringify(samples.base.at(-1))} head ${JSON.stringify(samples.head.at(-1))}`);
    }
    const med = (name: 'base' | 'head', m: Metric) => median(samples[name].map((s) => s[m]));
    const summary: Record<string, { base: number; head: number; ratio: number }> = {};
    for (const m of METRICS) summary[m] = { base: round2(med('base', m)), head: round2(med('head', m)), ratio: round2(med('head', m) / med('base', m)) };
    results[`${engine}_${size}`] = summary;
    cli.say(`${engine}, ${size} nodes, median of ${rounds} rounds (head ÷ base):`);
    for (const m of METRICS) cli.say(`  ${m.padEnd(18)} base ${summary[m]!.base}  head ${summary[m]!.head}  ratio ${summary[m]!.ratio}`);
  } finally {
    for (const side of sides) {
      await side.api.stop();
      await side.db.drop();
    }
  }
}
console.log(JSON.stringify({ bench: 'api-compare', base: baseDir, size, rounds, seconds, results }));
