/**
 * The figures measured for every ring, whatever its implementation: build time, single-replica
 * lookups per second, exact and sampled balance, and the keys moved when one host joins or leaves.
 */
import { createHash } from 'node:crypto';

/** One built ring, as the benchmark drives it. */
export interface BenchRing {
  /** The owner of a key through the ring's public lookup (what a caller pays for). */
  lookup(key: string): string;
  /** The exact share of the key space per host, from the ring's geometry; null if unknown. */
  exactShares(): number[] | null;
}

/** A ring implementation under test. */
export interface RingImpl {
  readonly id: string;
  readonly label: string;
  build(hosts: readonly string[]): BenchRing;
}

/** max/mean and min/mean of a set of shares (or counts). */
export interface Balance {
  maxMean: number;
  minMean: number;
}

/** Keys moved by a membership change, next to the minimum possible. */
export interface Moved {
  fraction: number;
  ideal: number;
  ratio: number;
}

/** The figures for one ring at one host count. */
export interface RingFigures {
  hosts: number;
  buildMs: number;
  buildMsMedian: number;
  lookupsPerSec: number;
  exact: Balance | null;
  sampled: Balance;
  join: Moved;
  leave: Moved;
  /** sha256 of the owners of the benchmark keys, one per line: equal digests, equal placements. */
  ownersDigest: string;
}

/** Inputs shared by every measurement. */
export interface Workload {
  keys: readonly string[];
  sample: readonly string[];
  hosts: readonly string[];
  joiner: string;
  /** Minimum wall time to spend timing lookups (repeating passes over the keys). */
  lookupMs: number;
  builds: number;
}

/** Measures one ring implementation at one host count. */
export function measure(impl: RingImpl, w: Workload): RingFigures {
  const n = w.hosts.length;
  impl.build(w.hosts); // warm-up: JIT and any lazy initialisation
  const times: number[] = [];
  let ring: BenchRing | undefined;
  for (let i = 0; i < w.builds; i++) {
    const start = process.cpuUsage();
    ring = impl.build(w.hosts);
    times.push(cpuMs(start));
  }
  const built = ring!;
  const owners = w.keys.map((k) => built.lookup(k));
  const exact = built.exactShares();
  const joined = impl.build([...w.hosts, w.joiner]);
  const left = impl.build(w.hosts.slice(1));
  return {
    hosts: n,
    buildMs: round(Math.min(...times), 3),
    buildMsMedian: round(median(times), 3),
    lookupsPerSec: Math.round(lookupRate(built, w.keys, w.lookupMs)),
    exact: exact === null ? null : balance(exact),
    sampled: balance(countOwners(built, w.sample, w.hosts)),
    join: moved(owners, w.keys.map((k) => joined.lookup(k)), 1 / (n + 1)),
    leave: moved(owners, w.keys.map((k) => left.lookup(k)), 1 / n),
    ownersDigest: digest(owners),
  };
}

/**
 * Best pass rate over repeated passes through `keys` lasting at least `minMs` of CPU time in total.
 * Rates are per CPU second of this process (user + system), not per wall-clock second: on a shared
 * machine the process is descheduled at times, and "lookups per second on one core" is what the
 * targets ask for.
 */
function lookupRate(ring: BenchRing, keys: readonly string[], minMs: number): number {
  let best = 0;
  let spent = 0;
  let sink = 0;
  for (let pass = 0; pass < 3 || spent < minMs; pass++) {
    const start = process.cpuUsage();
    for (let i = 0; i < keys.length; i++) sink += ring.lookup(keys[i]!).length;
    const ms = cpuMs(start);
    spent += ms;
    best = Math.max(best, keys.length / (ms / 1000));
  }
  if (sink === 0) throw new Error('no lookups ran');
  return best;
}

/** CPU milliseconds (user + system) of this process since `start`. */
export function cpuMs(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function countOwners(ring: BenchRing, sample: readonly string[], hosts: readonly string[]): number[] {
  const counts = new Map<string, number>(hosts.map((h) => [h, 0]));
  for (const key of sample) {
    const owner = ring.lookup(key);
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return [...counts.values()];
}

/** Balance of shares or counts (a host with nothing counts as 0). */
export function balance(values: readonly number[]): Balance {
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  return { maxMean: round(Math.max(...values) / mean, 4), minMean: round(Math.min(...values) / mean, 4) };
}

/** Fraction of keys whose owner differs, against the ideal fraction. */
export function moved(before: readonly string[], after: readonly string[], ideal: number): Moved {
  let changed = 0;
  for (let i = 0; i < before.length; i++) if (before[i] !== after[i]) changed++;
  const fraction = changed / before.length;
  return { fraction: round(fraction, 5), ideal: round(ideal, 5), ratio: round(fraction / ideal, 3) };
}

/** sha256 hex of the owners, one per line (the Python side computes the same). */
export function digest(owners: readonly string[]): string {
  return createHash('sha256').update(owners.join('\n')).digest('hex');
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Rounds to `digits` decimal places. */
export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
