/**
 * `npm run bench:ring -- --maglev`: why balanced mode is not Maglev hashing (Eisenbud et al., NSDI
 * 2016). A Maglev table of prime size M is filled by the hosts in turn (in name order), each taking
 * the next free slot of its own permutation (offset and skip from two hashes of its name). It is
 * near-perfectly balanced and small, but a host joining or leaving also moves keys between hosts
 * that stay, which breaks the ring's contract (removing a host moves only the keys it owned). This
 * measures that, on the benchmark's keys, next to the ideal movement.
 */
import { murmur3 } from '../src/ring/hash.js';
import { hostNames, uuidKeys } from './ring-keys.js';
import { cpuMs, round } from './ring-measure.js';

const SIZES = [65_537, 131_071, 262_139, 524_287] as const;
const HOST_COUNTS = [3, 10, 30, 100] as const;

/** One row: a table size and host count. */
export interface MaglevRow {
  size: number;
  hosts: number;
  buildMs: number;
  maxMean: number;
  /** Keys moved on a join / leave, as a ratio to the ideal 1/(n+1) or 1/n. */
  joinRatio: number;
  leaveRatio: number;
  /** Fraction of all keys that moved between two hosts present before and after. */
  joinBetweenSurvivors: number;
  leaveBetweenSurvivors: number;
}

/** Maglev's table: slot → host name. */
function maglev(names: readonly string[], size: number): string[] {
  const hosts = [...names].sort();
  const offset = hosts.map((h) => murmur3(h, 0x2545f491) % size);
  const skip = hosts.map((h) => (murmur3(h, 0x9e3779b9) % (size - 1)) + 1);
  const next = new Array<number>(hosts.length).fill(0);
  const table = new Int32Array(size).fill(-1);
  let filled = 0;
  for (;;) {
    for (let i = 0; i < hosts.length; i++) {
      let slot = (offset[i]! + next[i]! * skip[i]!) % size;
      while (table[slot] !== -1) {
        next[i]!++;
        slot = (offset[i]! + next[i]! * skip[i]!) % size;
      }
      table[slot] = i;
      next[i]!++;
      if (++filled === size) return Array.from(table, (h) => hosts[h]!);
    }
  }
}

/** Runs the study. */
export function runMaglev(): MaglevRow[] {
  const keys = uuidKeys(100_000, 1);
  const hashes = keys.map((k) => murmur3(k));
  const rows: MaglevRow[] = [];
  for (const size of SIZES) {
    for (const n of HOST_COUNTS) {
      const hosts = hostNames(n);
      const joiner = hostNames(1, n)[0]!;
      const start = process.cpuUsage();
      const base = maglev(hosts, size);
      const buildMs = cpuMs(start);
      const counts = new Map<string, number>();
      for (const h of base) counts.set(h, (counts.get(h) ?? 0) + 1);
      const owners = (table: readonly string[]): string[] => hashes.map((h) => table[Math.floor((h * size) / 2 ** 32)]!);
      const before = owners(base);
      const joined = owners(maglev([...hosts, joiner], size));
      const left = owners(maglev(hosts.slice(1), size));
      let join = 0;
      let joinBad = 0;
      let leave = 0;
      let leaveBad = 0;
      for (let i = 0; i < before.length; i++) {
        if (before[i] !== joined[i]) {
          join++;
          if (joined[i] !== joiner) joinBad++;
        }
        if (before[i] !== left[i]) {
          leave++;
          if (before[i] !== hosts[0]) leaveBad++;
        }
      }
      rows.push({
        size,
        hosts: n,
        buildMs: round(buildMs, 1),
        maxMean: round((Math.max(...counts.values()) * n) / size, 4),
        joinRatio: round(((join / keys.length) * (n + 1)), 3),
        leaveRatio: round((leave / keys.length) * n, 3),
        joinBetweenSurvivors: round(joinBad / keys.length, 5),
        leaveBetweenSurvivors: round(leaveBad / keys.length, 5),
      });
    }
  }
  return rows;
}

/** The study as a markdown table. */
export function maglevTable(rows: readonly MaglevRow[]): string {
  const pct = (f: number): string => `${(f * 100).toFixed(3)} %`;
  return [
    '| M | hosts | build ms | max/mean | moved on join (× ideal) | moved on leave (× ideal) | join: moved between staying hosts | leave: moved between staying hosts |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.size} | ${r.hosts} | ${r.buildMs} | ${r.maxMean.toFixed(4)} | ${r.joinRatio.toFixed(2)} | ${r.leaveRatio.toFixed(2)} | ${pct(r.joinBetweenSurvivors)} | ${pct(r.leaveBetweenSurvivors)} |`,
    ),
  ].join('\n');
}
