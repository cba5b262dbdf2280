/**
 * `npm run bench:discover [-- --json] [-- --engine postgres|sqlite]`: host discovery at scale
 * (DESIGN §8). One cell with 10,000 compute services and 100,000 compute nodes (10 per host);
 * times and counts the SQL statements of
 *   1. the first `discover-hosts --by-service` (target ≤ 1 s),
 *   2. a run with nothing new (target ≤ 50 ms and one statement per cell),
 * then, after unmapping everything again, the same two runs by compute node only.
 * PostgreSQL when reachable (or `--engine postgres`), else SQLite; the output says which.
 * Statements are counted by a Kysely plugin on the API and cell database handles separately.
 * The seeded tables are vacuumed and analyzed first, as autovacuum would have done on a live database.
 *
 * Options: --json (one JSON object on the last line), --engine, --services N, --nodes-per-service N,
 * --trace (each statement's time on stderr).
 */
import { sql } from 'kysely';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import pg from 'pg';
import { CellStores, createCell, discoverHosts } from '../src/cells/index.js';
import { openDatabase } from '../src/db/connect.js';
import type { Store } from '../src/db/connect.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { BENCH_POSTGRES_URL, benchDatabase } from './bench-database.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const asJson = args.includes('--json');
/** --trace: each statement's time on stderr. */
const trace = args.includes('--trace');
const SERVICES = Number(flag('--services', '10000'));
const PER_SERVICE = Number(flag('--nodes-per-service', '10'));
const PG = BENCH_POSTGRES_URL;

const say = (line: string) => {
  if (!asJson) console.log(line);
};

/** Counts the statements a Kysely handle executes. */
class StatementCounter implements KyselyPlugin {
  count = 0;
  readonly #started = new WeakMap<object, number>();
  constructor(readonly label: string) {}
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (trace) this.#started.set(args.queryId, performance.now());
    return args.node;
  }
  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count++;
    const t0 = this.#started.get(args.queryId);
    if (t0 !== undefined) console.error(`  ${this.label} statement ${this.count}: ${(performance.now() - t0).toFixed(1)} ms, ${args.result.rows.length} rows, ${args.result.numAffectedRows ?? 0} affected`);
    return Promise.resolve(args.result);
  }
}

function counted(store: Store, label: string): { store: Store; counter: StatementCounter } {
  const counter = new StatementCounter(label);
  return { store: { ...store, db: store.db.withPlugin(counter) }, counter };
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}


/** 10,000 services `compute-00000…` and 10 compute nodes on each host, none mapped. */
async function seed(store: Store): Promise<void> {
  const nodes = SERVICES * PER_SERVICE;
  // Literals, not parameters: SQLite binds JS numbers as REAL, and REAL % n keeps a fraction.
  const lastService = sql.lit(SERVICES - 1);
  const lastNode = sql.lit(nodes - 1);
  const modulo = sql.lit(SERVICES);
  if (store.engine === 'postgres') {
    await sql`insert into services (uuid, host, "binary", last_seen_up)
      select gen_random_uuid()::text, 'compute-' || lpad(i::text, 5, '0'), 'ironring-compute', clock_timestamp()
      from generate_series(0, ${lastService}) as i`.execute(store.db);
    await sql`insert into compute_nodes (uuid, host, hypervisor_hostname, resource_class)
      select gen_random_uuid()::text, 'compute-' || lpad((i % ${modulo})::text, 5, '0'), 'node-' || i, 'baremetal'
      from generate_series(0, ${lastNode}) as i`.execute(store.db);
    await sql`vacuum analyze services`.execute(store.db);
    await sql`vacuum analyze compute_nodes`.execute(store.db);
    await sql`vacuum analyze host_mappings`.execute(store.db);
  } else {
    const uuid = sql`lower(hex(randomblob(16)))`;
    await sql`with recursive n(i) as (select 0 union all select i + 1 from n where i < ${lastService})
      insert into services (uuid, host, "binary", last_seen_up)
      select ${uuid}, 'compute-' || substr('0000' || i, -5), 'ironring-compute', strftime('%Y-%m-%dT%H:%M:%fZ', 'now') from n`.execute(store.db);
    await sql`with recursive n(i) as (select 0 union all select i + 1 from n where i < ${lastNode})
      insert into compute_nodes (uuid, host, hypervisor_hostname, resource_class)
      select ${uuid}, 'compute-' || substr('0000' || (i % ${modulo}), -5), 'node-' || i, 'baremetal' from n`.execute(store.db);
    await sql`analyze`.execute(store.db);
  }
}

async function unmapAll(api: Store, cell: Store): Promise<void> {
  await api.db.deleteFrom('host_mappings').execute();
  await cell.db.updateTable('services').set({ mapped: false }).execute();
  await cell.db.updateTable('compute_nodes').set({ mapped: false }).execute();
  if (cell.engine === 'postgres') {
    await sql`vacuum analyze services`.execute(cell.db);
    await sql`vacuum analyze compute_nodes`.execute(cell.db);
    await sql`vacuum analyze host_mappings`.execute(cell.db);
  }
}

interface Run {
  ms: number;
  apiStatements: number;
  cellStatements: number;
  mapped: number;
}

async function main(): Promise<void> {
  const wanted = flag('--engine', '');
  const engine = wanted || ((await postgresReachable()) ? 'postgres' : 'sqlite');
  if (engine !== 'postgres' && engine !== 'sqlite') throw new Error(`--engine: expected postgres or sqlite, got ${engine}`);
  say(`host discovery on ${engine}${wanted ? '' : engine === 'postgres' ? ' (reachable at ' + PG + ')' : ' (PostgreSQL unreachable)'}: 1 cell, ${SERVICES} services, ${SERVICES * PER_SERVICE} compute nodes`);
  const target = await benchDatabase(engine, 'discover');
  const rawApi = await openDatabase(target.url);
  const rawCell = await openDatabase(target.url);
  const cells = new CellStores();
  try {
    await migrateDatabase(rawApi, ['api', 'cell']);
    const api = counted(rawApi, 'api');
    const cell = counted(rawCell, 'cell');
    cells.share(target.url, cell.store);
    await createCell(rawApi, cells, { name: 'cell1', databaseConnection: target.url });
    const seeded = performance.now();
    await seed(rawCell);
    say(`seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

    const run = async (byService: boolean): Promise<Run> => {
      api.counter.count = 0;
      cell.counter.count = 0;
      const t0 = performance.now();
      const result = await discoverHosts(api.store, cells, { byService });
      const ms = performance.now() - t0;
      if (result.conflicts.length || result.failedCells.length) throw new Error(`unexpected: ${JSON.stringify(result)}`);
      return { ms, apiStatements: api.counter.count, cellStatements: cell.counter.count, mapped: result.mapped.length };
    };
    const noop = async (byService: boolean): Promise<Run> => {
      const runs: Run[] = [];
      for (let i = 0; i < 7; i++) runs.push(await run(byService));
      runs.sort((a, b) => a.ms - b.ms);
      return runs[3]!;
    };

    const first = await run(true);
    if (first.mapped !== SERVICES) throw new Error(`first run mapped ${first.mapped} hosts, expected ${SERVICES}`);
    const unmappedLeft = await rawCell.db.selectFrom('compute_nodes').select((eb) => eb.fn.countAll<number>().as('n')).where('mapped', '=', false).executeTakeFirstOrThrow();
    if (Number(unmappedLeft.n) !== 0) throw new Error(`${unmappedLeft.n} compute nodes left unmapped`);
    const second = await noop(true);
    say(`by service, first run:   ${first.ms.toFixed(0)} ms, ${first.apiStatements + first.cellStatements} statements (${first.apiStatements} API, ${first.cellStatements} cell), ${first.mapped} hosts mapped   [target ≤ 1000 ms; Nova 26.2: 48 s, 30,002 statements]`);
    say(`by service, nothing new: ${second.ms.toFixed(1)} ms, ${second.apiStatements + second.cellStatements} statements (${second.apiStatements} API: the cell list, ${second.cellStatements} per cell)   [target ≤ 50 ms, 1 per cell; Nova 26.2: 17.8 s, 10,002 statements]`);

    await unmapAll(rawApi, rawCell);
    const byNode = await run(false);
    const byNodeNoop = await noop(false);
    say(`by node,    first run:   ${byNode.ms.toFixed(0)} ms, ${byNode.apiStatements + byNode.cellStatements} statements   [Nova 26.2: 260 s]`);
    say(`by node,    nothing new: ${byNodeNoop.ms.toFixed(1)} ms, ${byNodeNoop.apiStatements + byNodeNoop.cellStatements} statements   [Nova 26.2: 148 s]`);

    const out = {
      bench: 'discover',
      engine,
      cells: 1,
      services: SERVICES,
      compute_nodes: SERVICES * PER_SERVICE,
      first_run_ms: Math.round(first.ms),
      first_statements: first.apiStatements + first.cellStatements,
      first_api_statements: first.apiStatements,
      first_cell_statements: first.cellStatements,
      first_mapped: first.mapped,
      noop_run_ms: Number(second.ms.toFixed(2)),
      noop_statements: second.apiStatements + second.cellStatements,
      noop_api_statements: second.apiStatements,
      noop_statements_per_cell: second.cellStatements,
      by_node_first_run_ms: Math.round(byNode.ms),
      by_node_first_statements: byNode.apiStatements + byNode.cellStatements,
      by_node_noop_run_ms: Number(byNodeNoop.ms.toFixed(2)),
      by_node_noop_statements: byNodeNoop.apiStatements + byNodeNoop.cellStatements,
      targets: { first_run_ms: 1000, noop_run_ms: 50, noop_statements_per_cell: 1 },
      meets_targets: first.ms <= 1000 && second.ms <= 50 && second.cellStatements === 1,
      nova_reference: {
        version: '26.2',
        by_service: { first_run_ms: 48_000, first_statements: 30_002, noop_run_ms: 17_800, noop_statements: 10_002 },
        by_compute_node: { first_run_ms: 260_000, noop_run_ms: 148_000 },
      },
    };
    if (asJson) console.log(JSON.stringify(out));
  } finally {
    await cells.close();
    await rawCell.close();
    await rawApi.close();
    await target.drop();
  }
}

await main();
