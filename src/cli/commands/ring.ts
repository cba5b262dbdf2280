/**
 * `ironring ring …`: `show` (the live placement, from a running API; ring-show.ts) and `plan`.
 *
 * `ironring ring plan`: what-if planning for the hash ring. Given a set of conductors and a change
 * (add some, remove some), it shows each conductor's share before and after and how many nodes
 * would move, from where to where — the cost of a change before making it. Pure computation: it
 * reads no database (a node list can come from a file).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { UsageError } from '../../common/errors.js';
import { RING_MODES, RingError } from '../../ring/index.js';
import type { RingHost, RingMode } from '../../ring/index.js';
import { planRing } from '../../ring/ring-plan.js';
import type { HostPlan, RingChangePlan, RingPlan } from '../../ring/ring-plan.js';
import { emit, formatOption, renderTable } from '../output.js';
import { ringShowCommand } from './ring-show.js';
import type { OutputFormat } from '../output.js';

/** The `ironring ring` command group. */
export function ringCommand(): Command {
  const ring = new Command('ring').description(
    'inspect and plan hash ring placement: which conductor owns which node, and what a change would move',
  );
  ring.addCommand(ringShowCommand());
  ring.addCommand(planCommand());
  return ring;
}

interface PlanOptions {
  hosts: string;
  add: string[];
  remove: string[];
  keys?: string;
  nodes?: string;
  mode: RingMode;
  partitions?: string;
  replicas: string;
  format: OutputFormat;
}

const DEFAULT_NODES = 10_000;

function planCommand(): Command {
  return new Command('plan')
    .summary('show each conductor’s share and what adding or removing conductors would move')
    .description(
      'Plan a ring change before making it. Builds the ring of --hosts (name or name=weight, comma-separated), ' +
        'places a node list on it (--keys FILE: one node UUID per line, "-" for stdin; or --nodes N synthetic ' +
        `UUIDs, default ${DEFAULT_NODES}), and prints each conductor's exact share of the key space and its node ` +
        'count. With --add/--remove it builds the ring after the change too and prints how many nodes change ' +
        'owner, against the minimum any ring must move, and the flows from old to new owner. ' +
        'With --replicas R a node counts for each of its R conductors (owner and replicas), and "moved" counts ' +
        'nodes whose owner changed and nodes whose replica set changed.',
    )
    .requiredOption('--hosts <list>', 'conductors now: comma-separated names, each optionally name=weight')
    .option('--add <list>', 'conductors to add (comma-separated, name or name=weight; repeatable)', collect, [])
    .option('--remove <list>', 'conductors to remove (comma-separated names; repeatable)', collect, [])
    .option('--keys <file>', 'node UUIDs to place, one per line ("-" reads stdin)')
    .option('--nodes <n>', `number of synthetic node UUIDs to place (default ${DEFAULT_NODES})`)
    .addOption(new Option('--mode <mode>', 'placement algorithm').choices(RING_MODES).default('balanced'))
    .option('--partitions <n>', 'points per unit of weight (default: 16384 balanced, 32 tooz)')
    .option('--replicas <r>', 'conductors per node: owner plus replicas', '1')
    .addOption(formatOption())
    .action((opts: PlanOptions) => {
      const plan = buildPlan(opts);
      emit(opts.format, plan, () => renderPlan(plan));
    });
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The whole plan, as printed with --format json. */
interface Plan {
  mode: RingMode;
  partitions: number;
  replicas: number;
  nodes: { source: string; count: number };
  hosts: HostPlan[];
  /** The planner's change without its per-key list (the JSON stays small for a large fleet). */
  change: Omit<RingChangePlan, 'movedKeys'> | null;
}

function buildPlan(opts: PlanOptions): Plan {
  const before = parseHosts(opts.hosts, '--hosts');
  if (before.length === 0) throw new UsageError('--hosts: give at least one conductor');
  const added = opts.add.flatMap((list) => parseHosts(list, '--add'));
  const removed = opts.remove.flatMap((list) => parseHosts(list, '--remove'));
  const names = new Set(before.map((h) => h.name));
  for (const h of added) if (names.has(h.name)) throw new UsageError(`--add: ${JSON.stringify(h.name)} is already in --hosts`);
  for (const h of removed) {
    if (!names.has(h.name)) throw new UsageError(`--remove: ${JSON.stringify(h.name)} is not in --hosts`);
    if (h.weight !== 1) throw new UsageError(`--remove: give a name without a weight, not ${JSON.stringify(`${h.name}=${h.weight}`)}`);
  }
  const after = [...before.filter((h) => !removed.some((r) => r.name === h.name)), ...added];
  if (after.length === 0) throw new UsageError('--remove: the change would leave no conductor');
  const replicas = positiveInteger(opts.replicas, '--replicas');
  const partitions = opts.partitions === undefined ? undefined : positiveInteger(opts.partitions, '--partitions');
  const keys = loadKeys(opts);

  let planned: RingPlan;
  try {
    planned = planRing({ before, added, removed: removed.map((h) => h.name), keys, mode: opts.mode, ...(partitions === undefined ? {} : { partitions }), replicas });
  } catch (err) {
    // The ring's errors name the bad value; on the command line they are usage errors.
    if (err instanceof RingError) throw new UsageError(err.message);
    throw err;
  }
  return {
    mode: planned.mode,
    partitions: planned.partitions,
    replicas,
    nodes: { source: opts.keys === undefined ? 'synthetic' : opts.keys, count: keys.length },
    hosts: planned.hosts,
    change: planned.change === null ? null : withoutKeys(planned.change),
  };
}

/** The change as printed: the list of moved keys stays out of the output. */
function withoutKeys(change: RingChangePlan): Plan['change'] {
  const { movedKeys: _movedKeys, ...shown } = change;
  return shown;
}

function parseHosts(list: string, flag: string): RingHost[] {
  return list
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0)
    .map((item) => {
      const eq = item.lastIndexOf('=');
      if (eq < 0) return { name: item, weight: 1 };
      const name = item.slice(0, eq);
      const weightText = item.slice(eq + 1);
      if (name.length === 0) throw new UsageError(`${flag}: ${JSON.stringify(item)} has no conductor name`);
      if (!/^[1-9][0-9]*$/.test(weightText)) {
        throw new UsageError(`${flag}: weight ${JSON.stringify(weightText)} of ${JSON.stringify(name)} is not an integer ≥ 1`);
      }
      return { name, weight: Number(weightText) };
    });
}

function positiveInteger(text: string, flag: string): number {
  if (!/^[1-9][0-9]*$/.test(text.trim())) throw new UsageError(`${flag}: ${JSON.stringify(text)} is not an integer ≥ 1`);
  return Number(text.trim());
}

function loadKeys(opts: PlanOptions): string[] {
  if (opts.keys !== undefined && opts.nodes !== undefined) throw new UsageError('give either --keys or --nodes, not both');
  if (opts.keys !== undefined) {
    let text: string;
    try {
      text = readFileSync(opts.keys === '-' ? 0 : opts.keys, 'utf8');
    } catch (err) {
      throw new UsageError(`--keys: cannot read ${opts.keys}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    const keys = text.split(/\r?\n/).map((k) => k.trim()).filter((k) => k.length > 0);
    if (keys.length === 0) throw new UsageError(`--keys: ${opts.keys} holds no node UUIDs`);
    return keys;
  }
  const count = opts.nodes === undefined ? DEFAULT_NODES : positiveInteger(opts.nodes, '--nodes');
  if (count > 10_000_000) throw new UsageError(`--nodes: ${count} is more than 10000000`);
  return syntheticKeys(count);
}

/** Reproducible UUID-shaped keys: the same plan gives the same numbers on every run. */
function syntheticKeys(count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const hex = createHash('md5').update(`ironring-plan-node-${i}`).digest('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  });
}

function renderPlan(plan: Plan): string {
  const pct = (v: number | null) => (v === null ? '-' : `${(v * 100).toFixed(2)} %`);
  const changed = plan.change !== null;
  const hostTable = renderTable(plan.hosts, [
    { header: 'Conductor', value: (h) => h.name },
    { header: changed ? 'Weight (before → after)' : 'Weight', value: (h) => (changed ? `${h.weight ?? '-'} → ${h.weightAfter ?? '-'}` : h.weight) },
    { header: changed ? 'Share (before → after)' : 'Share', value: (h) => (changed ? `${pct(h.share)} → ${pct(h.shareAfter)}` : pct(h.share)) },
    { header: changed ? 'Nodes (before → after)' : 'Nodes', value: (h) => (changed ? `${h.nodes} → ${h.nodesAfter}` : h.nodes) },
  ]);
  const lines = [
    `Mode ${plan.mode}, ${plan.partitions} points per unit of weight, ${plan.replicas} conductor(s) per node; ` +
      `${plan.nodes.count} nodes (${plan.nodes.source}). Share is the exact fraction of the key space.`,
    hostTable,
  ];
  const change = plan.change;
  if (change !== null) {
    lines.push(
      '',
      `Change: ${[...change.added.map((h) => `+${h}`), ...change.removed.map((h) => `-${h}`)].join(' ')}`,
      `${change.moved} of ${plan.nodes.count} nodes change owner (${pct(change.movedFraction)}; the minimum any ring must move is ${pct(change.idealFraction)}).`,
    );
    if (plan.replicas > 1) lines.push(`${change.replicaSetsChanged} nodes get a different set of ${plan.replicas} conductors.`);
    if (change.flows.length > 0) {
      lines.push(
        renderTable(change.flows, [
          { header: 'From', value: (f) => f.from },
          { header: 'To', value: (f) => f.to },
          { header: 'Nodes', value: (f) => f.nodes },
        ]),
      );
    }
  }
  return lines.join('\n');
}
