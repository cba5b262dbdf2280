/**
 * `npm run bench:ring -- --study`: the trade-off behind balanced mode's constants. For each number
 * of points per host and table size, the exact max/mean share over several host-name sets (the
 * worst and the average) and the build time at 100 hosts. docs/ring.md quotes its output.
 */
import { BalancedPlacement } from '../src/ring/balanced.js';
import { hostNames, uuidKeys } from './ring-keys.js';
import { cpuMs, round } from './ring-measure.js';

const POINTS = [4096, 8192, 16384, 32768, 65536] as const;
const TABLE_BITS = [20, 21, 22] as const;
const HOST_COUNTS = [3, 10, 30, 100] as const;
const NAME_SETS = 5;

/** One row of the study. */
export interface StudyRow {
  points: number;
  tableBits: number;
  /** Per host count: worst and average exact max/mean over the name sets. */
  maxMean: Record<number, { worst: number; average: number }>;
  buildMs100: number;
  /** Single-replica lookups per CPU second at 100 hosts (the table size decides cache misses). */
  lookups100: number;
}

function names(set: number, count: number): { name: string; weight: number }[] {
  const list = set === 0 ? hostNames(count) : Array.from({ length: count }, (_, i) => `ironic-${set}-${i * 7 + set}`);
  return list.sort().map((name) => ({ name, weight: 1 }));
}

/** Runs the study and returns its rows. */
export function runStudy(): StudyRow[] {
  const rows: StudyRow[] = [];
  const keys = uuidKeys(100_000, 1);
  for (const tableBits of TABLE_BITS) {
    for (const points of POINTS) {
      const maxMean: StudyRow['maxMean'] = {};
      for (const n of HOST_COUNTS) {
        const figures = Array.from({ length: NAME_SETS }, (_, set) => {
          const shares = new BalancedPlacement(names(set, n), points, tableBits).shares();
          return Math.max(...shares) * n;
        });
        maxMean[n] = {
          worst: round(Math.max(...figures), 4),
          average: round(figures.reduce((s, f) => s + f, 0) / figures.length, 4),
        };
      }
      const hosts = names(0, 100);
      const times: number[] = [];
      let placement: BalancedPlacement | undefined;
      for (let i = 0; i < 5; i++) {
        const start = process.cpuUsage();
        placement = new BalancedPlacement(hosts, points, tableBits);
        times.push(cpuMs(start));
      }
      let best = 0;
      let sink = 0;
      for (let pass = 0; pass < 4; pass++) {
        const start = process.cpuUsage();
        for (const key of keys) sink += placement!.owner(key).length;
        best = Math.max(best, keys.length / (cpuMs(start) / 1000));
      }
      if (sink === 0) throw new Error('no lookups ran');
      rows.push({ points, tableBits, maxMean, buildMs100: round(Math.min(...times), 1), lookups100: Math.round(best) });
    }
  }
  return rows;
}

/** The study as a markdown table. */
export function studyTable(rows: readonly StudyRow[]): string {
  const head = `| points/host | table | ${HOST_COUNTS.map((n) => `${n} hosts: worst / avg max/mean`).join(' | ')} | build, 100 hosts | lookups/s, 100 hosts |`;
  const rule = `|${' --- |'.repeat(HOST_COUNTS.length + 4)}`;
  const body = rows.map(
    (r) =>
      `| ${r.points} | 2^${r.tableBits} | ${HOST_COUNTS.map((n) => `${r.maxMean[n]!.worst.toFixed(4)} / ${r.maxMean[n]!.average.toFixed(4)}`).join(' | ')} | ${r.buildMs100} ms | ${r.lookups100.toLocaleString('en')} |`,
  );
  return [head, rule, ...body].join('\n');
}
