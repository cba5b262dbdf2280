/**
 * `npm run bench:ring [-- --json] [-- --study] [-- --maglev]`: the hash ring side by side with the rings it is
 * compared against, on the same 100,000 random UUID keys (DESIGN §8, issue #3):
 *
 * - ironring `balanced` (the default) and `tooz` modes;
 * - `tooz.hashring.HashRing` itself through Debian's /usr/bin/python3 (skipped with a note when
 *   python3-tooz is missing);
 * - the npm `hashring` package (ketama).
 *
 * For 3, 10, 30 and 100 hosts: lookups per second (one replica, one core), build time (best and
 * median of several builds: the best is the machine's capability, the median shows interference
 * from other processes), exact max/mean and min/mean share from each ring's geometry, the same
 * over 1,000,000 sampled keys, and the fraction of keys moved when one host joins or leaves next
 * to the ideal. With `--json` the last line is one JSON object with every figure and the targets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { HashRing, murmur3 } from '../src/ring/index.js';
import { hostNames, uuidKeys, writeKeys } from './ring-keys.js';
import { cpuMs, measure, round } from './ring-measure.js';
import type { BenchRing, RingFigures, RingImpl } from './ring-measure.js';
import { maglevTable, runMaglev } from './ring-maglev.js';
import { runStudy, studyTable } from './ring-study.js';
import { runTooz, toozAvailable } from './ring-tooz.js';

const args = process.argv.slice(2);
const asJson = args.includes('--json');
const HOST_COUNTS = numberList(option('--hosts') ?? '3,10,30,100');
const KEY_COUNT = Number(option('--keys') ?? 100_000);
const SAMPLE_COUNT = Number(option('--sample') ?? 1_000_000);
const LOOKUP_MS = 400;
const BUILDS = 7;

/** The npm `hashring` package's surface that the benchmark uses (it ships no types). */
interface KetamaRing {
  get(key: string): string;
  ring: { value: number; server: string }[];
}
const require = createRequire(import.meta.url);
const Ketama = require('hashring') as new (servers: string[]) => KetamaRing;

function ironring(mode: 'balanced' | 'tooz'): RingImpl {
  return {
    id: mode,
    label: `ironring ${mode}`,
    build(hosts): BenchRing {
      const ring = new HashRing(hosts, { mode });
      return { lookup: (key) => ring.lookup(key)[0]!, exactShares: () => [...ring.shares().values()] };
    },
  };
}

const ketama: RingImpl = {
  id: 'hashring',
  label: 'npm hashring (ketama)',
  build(hosts): BenchRing {
    const ring = new Ketama([...hosts]);
    return {
      lookup: (key) => ring.get(key),
      exactShares: () => {
        // A key hashing to v belongs to the first point ≥ v, wrapping to the first point.
        const points = ring.ring;
        const shares = new Map<string, number>(hosts.map((h) => [h, 0]));
        points.forEach((p, i) => {
          const arc = i === 0 ? p.value + 2 ** 32 - points[points.length - 1]!.value : p.value - points[i - 1]!.value;
          shares.set(p.server, shares.get(p.server)! + arc / 2 ** 32);
        });
        return [...shares.values()];
      },
    };
  },
};

function main(): void {
  if (args.includes('--maglev')) {
    const rows = runMaglev();
    process.stdout.write(`${maglevTable(rows)}\n`);
    if (asJson) process.stdout.write(`${JSON.stringify({ bench: 'ring-maglev', rows })}\n`);
    return;
  }
  if (args.includes('--study')) {
    const rows = runStudy();
    process.stdout.write(`${studyTable(rows)}\n`);
    if (asJson) process.stdout.write(`${JSON.stringify({ bench: 'ring-study', rows })}\n`);
    return;
  }
  const keys = uuidKeys(KEY_COUNT, 1);
  const sample = uuidKeys(SAMPLE_COUNT, 2);
  const results: Record<string, RingFigures[]> = {};
  const notes: string[] = [];
  for (const impl of [ironring('balanced'), ironring('tooz'), ketama]) {
    results[impl.id] = HOST_COUNTS.map((n) =>
      measure(impl, { keys, sample, hosts: hostNames(n), joiner: hostNames(1, n)[0]!, lookupMs: LOOKUP_MS, builds: BUILDS }),
    );
  }
  const tooz = toozAvailable();
  if (tooz.ok) {
    const dir = mkdtempSync(join(tmpdir(), 'ironring-bench-'));
    try {
      writeKeys(join(dir, 'keys'), keys);
      writeKeys(join(dir, 'sample'), sample);
      results['tooz-python'] = runTooz({
        keys: join(dir, 'keys'),
        sample: join(dir, 'sample'),
        builds: BUILDS,
        lookupMs: LOOKUP_MS,
        runs: HOST_COUNTS.map((n) => ({ hosts: hostNames(n), joiner: hostNames(1, n)[0]! })),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    notes.push(`tooz (Python) column skipped: ${tooz.reason}`);
  }
  const keyHashPerSec = hashRate(keys);
  notes.push(
    `balanced lookups, anatomy: the key hash alone (MurmurHash3 of a UUID) runs at ${keyHashPerSec.toLocaleString('en')}/s; the rest of a lookup is mostly one read in the 4 MiB table`,
  );
  const targets = evaluate(results);
  process.stdout.write(`${report(results, targets, notes)}\n`);
  if (asJson) {
    const summary = {
      bench: 'ring',
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      keys: KEY_COUNT,
      sampleKeys: SAMPLE_COUNT,
      hostCounts: HOST_COUNTS,
      keyHashPerSec,
      targets,
      results,
      notes,
    };
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  }
}

/** Best rate, per CPU second, of MurmurHash3 alone over the keys (what a lookup pays before its table read). */
function hashRate(keys: readonly string[]): number {
  let best = 0;
  let sink = 0;
  for (let pass = 0; pass < 5; pass++) {
    const start = process.cpuUsage();
    for (let i = 0; i < keys.length; i++) sink ^= murmur3(keys[i]!);
    best = Math.max(best, keys.length / (cpuMs(start) / 1000));
  }
  if (sink === 0.5) throw new Error('unreachable');
  return Math.round(best);
}

/** A target with the measured value it is judged on. */
interface Target {
  what: string;
  target: string;
  measured: number | boolean | null;
  ok: boolean | null;
}

function evaluate(results: Record<string, RingFigures[]>): Record<string, Target> {
  const balanced = results['balanced']!;
  const toozMode = results['tooz']!;
  const python = results['tooz-python'];
  const at100 = balanced.find((r) => r.hosts === 100);
  const worstMove = Math.max(...balanced.flatMap((r) => [r.join.ratio, r.leave.ratio]));
  const speedup = python ? Math.min(...toozMode.map((r, i) => r.lookupsPerSec / python[i]!.lookupsPerSec)) : null;
  const agree = python ? toozMode.every((r, i) => r.ownersDigest === python[i]!.ownersDigest) : null;
  const minLookups = Math.min(...balanced.map((r) => r.lookupsPerSec));
  const worstExact = Math.max(...balanced.map((r) => r.exact!.maxMean));
  return {
    balancedLookups: { what: 'balanced lookups/s, worst host count', target: '≥ 5,000,000', measured: minLookups, ok: minLookups >= 5e6 },
    balancedBalance: { what: 'balanced exact max/mean, worst host count', target: '≤ 1.02', measured: worstExact, ok: worstExact <= 1.02 },
    balancedMoved: { what: 'balanced keys moved on join/leave, worst ratio to ideal', target: '≤ 1.1', measured: worstMove, ok: worstMove <= 1.1 },
    balancedBuild100: {
      what: 'balanced build at 100 hosts, best of 7 (ms)',
      target: '≤ 50',
      measured: at100?.buildMs ?? null,
      ok: at100 ? at100.buildMs <= 50 : null,
    },
    toozSpeedup: { what: 'tooz mode lookups/s ÷ tooz (Python), worst host count', target: '≥ 2', measured: speedup === null ? null : round(speedup, 2), ok: speedup === null ? null : speedup >= 2 },
    toozAgreement: { what: 'tooz mode owners identical to tooz (Python) on every key', target: 'true', measured: agree, ok: agree },
  };
}

function report(results: Record<string, RingFigures[]>, targets: Record<string, Target>, notes: readonly string[]): string {
  const labels: Record<string, string> = {
    balanced: 'ironring balanced',
    tooz: 'ironring tooz',
    'tooz-python': 'tooz (Python)',
    hashring: 'npm hashring',
  };
  const order = ['balanced', 'tooz', 'tooz-python', 'hashring'].filter((id) => results[id]);
  const lines = [
    `ring benchmark: ${KEY_COUNT.toLocaleString('en')} keys, ${SAMPLE_COUNT.toLocaleString('en')} sampled; node ${process.version}; ${cpus()[0]?.model ?? ''}`,
    '',
    '| ring | hosts | lookups/s | build ms (best / median) | exact max/mean | exact min/mean | sampled max/mean | sampled min/mean | moved on join (× ideal) | moved on leave (× ideal) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const id of order) {
    for (const r of results[id]!) {
      lines.push(
        `| ${labels[id]} | ${r.hosts} | ${r.lookupsPerSec.toLocaleString('en')} | ${r.buildMs.toFixed(2)} / ${r.buildMsMedian.toFixed(2)} | ${fmt(r.exact?.maxMean)} | ${fmt(r.exact?.minMean)} | ${fmt(r.sampled.maxMean)} | ${fmt(r.sampled.minMean)} | ${pct(r.join.fraction)} (${r.join.ratio.toFixed(2)}) | ${pct(r.leave.fraction)} (${r.leave.ratio.toFixed(2)}) |`,
      );
    }
  }
  lines.push('', '| target | required | measured | holds |', '| --- | --- | --- | --- |');
  for (const t of Object.values(targets)) {
    lines.push(`| ${t.what} | ${t.target} | ${t.measured === null ? 'n/a' : String(t.measured)} | ${t.ok === null ? 'n/a' : t.ok ? 'yes' : 'NO'} |`);
  }
  for (const note of notes) lines.push('', `note: ${note}`);
  return lines.join('\n');
}

function fmt(value: number | undefined): string {
  return value === undefined ? 'n/a' : value.toFixed(4);
}

function pct(fraction: number): string {
  return `${(fraction * 100).toFixed(2)} %`;
}

function option(name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

function numberList(text: string): number[] {
  return text.split(',').map(Number);
}

main();
