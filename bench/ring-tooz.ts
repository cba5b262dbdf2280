/**
 * The reference column: `tooz.hashring.HashRing` itself, run by Debian's `/usr/bin/python3` (the
 * `python3-tooz` package) on the same keys and host names, measuring the same figures with the
 * ring's own public calls (`HashRing(...)`, `get_nodes`). Exact shares come from its sorted points.
 * Times are CPU time of the interpreter (`time.process_time`), like the JavaScript side's.
 */
import { spawnSync } from 'node:child_process';
import type { RingFigures } from './ring-measure.js';

const PYTHON = '/usr/bin/python3';

const SCRIPT = String.raw`
import hashlib, json, statistics, sys, time
from tooz import hashring

cfg = json.load(sys.stdin)
keys = [k.encode() for k in open(cfg["keys"]).read().split()]
sample = [k.encode() for k in open(cfg["sample"]).read().split()]

def owner(ring, key):
    return next(iter(ring.get_nodes(key)))

def balance(values):
    mean = sum(values) / len(values)
    return {"maxMean": round(max(values) / mean, 4), "minMean": round(min(values) / mean, 4)}

def moved(before, after, ideal):
    fraction = sum(1 for a, b in zip(before, after) if a != b) / len(before)
    return {"fraction": round(fraction, 5), "ideal": round(ideal, 5), "ratio": round(fraction / ideal, 3)}

out = []
for run in cfg["runs"]:
    hosts, joiner = run["hosts"], run["joiner"]
    n = len(hosts)
    hashring.HashRing(hosts)
    times = []
    for _ in range(cfg["builds"]):
        t = time.process_time()
        ring = hashring.HashRing(hosts)
        times.append((time.process_time() - t) * 1000)
    best, spent, passes = 0.0, 0.0, 0
    while passes < 2 or spent < cfg["lookupMs"]:
        t = time.process_time()
        for k in keys:
            ring.get_nodes(k)
        dt = time.process_time() - t
        spent += dt * 1000
        passes += 1
        best = max(best, len(keys) / dt)
    owners = [owner(ring, k) for k in keys]
    points = ring._partitions
    arcs = {h: 0 for h in hosts}
    for i, p in enumerate(points):
        arcs[ring._ring[p]] += (p - points[i - 1]) % (1 << 128)
    counts = {h: 0 for h in hosts}
    for k in sample:
        counts[owner(ring, k)] += 1
    joined = hashring.HashRing(hosts + [joiner])
    left = hashring.HashRing(hosts[1:])
    out.append({
        "hosts": n,
        "buildMs": round(min(times), 3),
        "buildMsMedian": round(statistics.median(times), 3),
        "lookupsPerSec": round(best),
        "exact": balance([a / (1 << 128) for a in arcs.values()]),
        "sampled": balance(list(counts.values())),
        "join": moved(owners, [owner(joined, k) for k in keys], 1 / (n + 1)),
        "leave": moved(owners, [owner(left, k) for k in keys], 1 / n),
        "ownersDigest": hashlib.sha256("\n".join(owners).encode()).hexdigest(),
    })
json.dump(out, sys.stdout)
`;

/** What the Python side needs. */
export interface ToozRunConfig {
  keys: string;
  sample: string;
  builds: number;
  lookupMs: number;
  runs: { hosts: string[]; joiner: string }[];
}

/** Whether Debian's python3-tooz is importable; the reason when it is not. */
export function toozAvailable(): { ok: true } | { ok: false; reason: string } {
  const probe = spawnSync(PYTHON, ['-c', 'import tooz.hashring'], { encoding: 'utf8' });
  if (probe.error) return { ok: false, reason: `${PYTHON} not runnable (${probe.error.message})` };
  if (probe.status !== 0) return { ok: false, reason: `${PYTHON} cannot import tooz.hashring (apt-get install python3-tooz)` };
  return { ok: true };
}

/** Runs tooz on every host count at once (one interpreter start) and returns its figures. */
export function runTooz(config: ToozRunConfig): RingFigures[] {
  const result = spawnSync(PYTHON, ['-c', SCRIPT], {
    input: JSON.stringify(config),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`tooz benchmark failed: ${result.stderr || result.error?.message}`);
  return JSON.parse(result.stdout) as RingFigures[];
}
