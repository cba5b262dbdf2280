/**
 * The take-over checker's own judges (issue #21): who is live and who owns a node, worked out without
 * any of ironring's membership or ring code, so that a bug shared by the product and its checker
 * cannot hide itself.
 *
 * - Liveness: plain SQL written here (online flag, heartbeat age by the database's own clock).
 * - tooz mode: tooz's algorithm written out again from tooz's source (md5 through node:crypto, not
 *   ironring's md5.ts; points and `bisect_right` over BigInts), checked against the recorded vectors
 *   of Debian's python3-tooz and against live python3-tooz (test/helpers/take-over-judge.test.ts).
 * - balanced mode: docs/ring.md's definition (a slot belongs to the host of the point nearest its
 *   start) computed by brute force over the sorted points, with a MurmurHash3 written here from the
 *   reference; checked against MurmurHash3's published vectors and against placements recorded from
 *   ironring at 8fb7c28 (test/fixtures/balanced/placements.json), so a later change of the product's
 *   table builder cannot move its checker with it.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Store } from '../../src/db/connect.js';

/** A live conductor as the checker judges it. */
export interface LiveConductor {
  id: number;
  hostname: string;
  group: string;
  weight: number;
}

/**
 * Conductors that are `online` with a heartbeat younger than `timeout` seconds, both judged by the
 * database clock (the conductors' own clocks may be skewed on purpose in some tests).
 */
export async function liveConductorsBySql(store: Store, timeout: number): Promise<LiveConductor[]> {
  // SQLite keeps timestamps as ISO-8601 text and booleans as 0/1; julianday() reads the text as UTC.
  const query =
    store.engine === 'postgres'
      ? sql<{ id: number; hostname: string; conductor_group: string; weight: number }>`
          select id, hostname, conductor_group, weight from conductors
          where online = true and updated_at >= now() - ${timeout} * interval '1 second' order by hostname`
      : sql<{ id: number; hostname: string; conductor_group: string; weight: number }>`
          select id, hostname, conductor_group, weight from conductors
          where online = 1 and julianday(updated_at) >= julianday('now') - ${timeout} / 86400.0 order by hostname`;
  const { rows } = await query.execute(store.db);
  return rows.map((r) => ({ id: Number(r.id), hostname: r.hostname, group: r.conductor_group, weight: Number(r.weight) }));
}

/**
 * Provision states in which a node boots from its owner's files, spelled out here rather than
 * imported (DESIGN §1 invariant 2: the instance for `active`, the deploy ramdisk otherwise).
 */
export const NEEDS_BOOT_FILES: ReadonlySet<string> = new Set([
  'active',
  'wait call-back',
  'clean wait',
  'inspect wait',
  'rescue wait',
  'rescue',
  'deploying',
  'cleaning',
  'inspecting',
  'rescuing',
]);

/**
 * Of those, the states in which the node boots its instance (its `kernel` and `ramdisk`, the
 * `boot_ramdisk` label); in every other one it boots the deploy ramdisk (`deploy_kernel`,
 * `deploy_ramdisk`, the `deploy` label) — spelled out here too, not imported.
 */
export const BOOTS_INSTANCE: ReadonlySet<string> = new Set(['active']);

/** A host of a judge ring. */
export interface JudgeHost {
  name: string;
  weight: number;
}

/** Which placement the conductors use: `balanced`, or `tooz` with its points per unit of weight. */
export type JudgeRingMode = { mode: 'balanced' } | { mode: 'tooz'; partitions: number };

/** A ring that answers "owner first, then replicas" for a key. */
export interface JudgeRing {
  lookup(key: string, replicas: number): string[];
}

/** Builds the judge ring of `hosts` (any order) in `mode`. */
export function judgeRing(hosts: readonly JudgeHost[], mode: JudgeRingMode): JudgeRing {
  const sorted = [...hosts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return mode.mode === 'tooz' ? new ToozJudge(sorted, mode.partitions) : new BalancedJudge(sorted);
}

// ---------------------------------------------------------------------------------------------
// tooz

function md5Int(data: Buffer): bigint {
  return BigInt(`0x${createHash('md5').update(data).digest('hex')}`);
}

/**
 * tooz.hashring.HashRing (tooz 3.1.0): host `h` gets `partitions × weight` points, point `r` being
 * the md5 of `h` repeated `r + 2` times (one hasher updated once more per point); a dict keyed by
 * point, so a later host overwrites an equal point; a key's partition is `bisect_right` of its md5
 * over the sorted points, wrapping to 0; `get_nodes` walks on from there over distinct hosts.
 */
class ToozJudge implements JudgeRing {
  private readonly points: bigint[];
  private readonly hostOf: string[];

  constructor(hosts: readonly JudgeHost[], partitions: number) {
    const ring = new Map<bigint, string>();
    for (const host of hosts) {
      const name = Buffer.from(host.name, 'utf8');
      let input = name;
      for (let r = 0; r < partitions * host.weight; r++) {
        input = Buffer.concat([input, name]);
        ring.set(md5Int(input), host.name);
      }
    }
    this.points = [...ring.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    this.hostOf = this.points.map((p) => ring.get(p)!);
  }

  lookup(key: string, replicas: number): string[] {
    const x = md5Int(Buffer.from(key, 'utf8'));
    // bisect_right: the first point strictly greater than x.
    let lo = 0;
    let hi = this.points.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.points[mid]! > x) hi = mid;
      else lo = mid + 1;
    }
    let i = lo < this.points.length ? lo : 0;
    const distinct = new Set(this.hostOf).size;
    const found: string[] = [];
    while (found.length < Math.min(replicas, distinct)) {
      const host = this.hostOf[i]!;
      if (!found.includes(host)) found.push(host);
      i = i + 1 < this.points.length ? i + 1 : 0;
    }
    return found;
  }
}

// ---------------------------------------------------------------------------------------------
// balanced

/** MurmurHash3_x86_32 of `bytes`, from the reference implementation (SMHasher), as an unsigned integer. */
export function murmurHash3(bytes: Uint8Array, seed = 0): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));
  let h1 = seed | 0;
  const nblocks = Math.floor(bytes.length / 4);
  for (let b = 0; b < nblocks; b++) {
    const o = b * 4;
    let k1 = bytes[o]! | (bytes[o + 1]! << 8) | (bytes[o + 2]! << 16) | (bytes[o + 3]! << 24);
    k1 = Math.imul(k1, c1);
    k1 = rotl(k1, 15);
    k1 = Math.imul(k1, c2);
    h1 ^= k1;
    h1 = rotl(h1, 13);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
  }
  const tail = nblocks * 4;
  // The 1–3 trailing bytes, little-endian (the reference's fall-through switch).
  const rest = bytes.length & 3;
  if (rest > 0) {
    let k1 = 0;
    for (let j = rest - 1; j >= 0; j--) k1 = (k1 << 8) | bytes[tail + j]!;
    k1 = Math.imul(k1, c1);
    k1 = rotl(k1, 15);
    k1 = Math.imul(k1, c2);
    h1 ^= k1;
  }
  h1 ^= bytes.length;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1 >>> 0;
}

/** lowbias32 (Chris Wellons' integer hash), unsigned. */
function lowbias32(value: number): number {
  let x = value | 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/** docs/ring.md's constants: points per unit of weight, slot table bits, the two name seeds. */
const POINTS_PER_WEIGHT = 16_384;
const STRATA_BITS = 14;
const SLOT_SHIFT = 32 - 22;
const SLOTS = 2 ** 22;
const SEED_A = 0x5bd1e995;
const SEED_B = 0x1b873593;

/**
 * The balanced placement by its definition: `pointsPerWeight` strata, host `h` (index i in name
 * order) putting point `c` of its `weight` in stratum `s` at `s·2^18 + (lowbias32(lowbias32((s·w + c)
 * ^ murmur(h, A)) + murmur(h, B)) >> 14)`; slot `k` (start `k·2^10`) belongs to the host of the
 * nearest point — the first at or after the start, unless the last one before it is strictly
 * closer; equal points go to the host first in name order; a key's slot is `murmur(key) >> 10`, and
 * replicas are the next distinct hosts of the following slots.
 */
class BalancedJudge implements JudgeRing {
  /** Sorted `position · 2^16 + host index` (exact in a double: under 2^48). */
  private readonly points: Float64Array;
  private readonly names: string[];
  private readonly owners = new Map<number, number>();

  constructor(hosts: readonly JudgeHost[]) {
    this.names = hosts.map((h) => h.name);
    const total = hosts.reduce((n, h) => n + h.weight, 0) * POINTS_PER_WEIGHT;
    this.points = new Float64Array(total);
    const enc = new TextEncoder();
    let n = 0;
    hosts.forEach((h, i) => {
      const a = murmurHash3(enc.encode(h.name), SEED_A);
      const b = murmurHash3(enc.encode(h.name), SEED_B);
      for (let s = 0; s < POINTS_PER_WEIGHT; s++) {
        for (let c = 0; c < h.weight; c++) {
          const x = lowbias32(lowbias32(((s * h.weight + c) ^ a) >>> 0) + b);
          const position = s * 2 ** (32 - STRATA_BITS) + (x >>> STRATA_BITS);
          this.points[n++] = position * 65536 + i;
        }
      }
    });
    this.points.sort();
  }

  /** Host index owning slot `slot`. */
  private slotOwner(slot: number): number {
    const cached = this.owners.get(slot);
    if (cached !== undefined) return cached;
    const start = slot * 2 ** SLOT_SHIFT;
    const pts = this.points;
    // First entry whose position is ≥ start (entries of one position sort by host index).
    let lo = 0;
    let hi = pts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (Math.floor(pts[mid]! / 65536) >= start) hi = mid;
      else lo = mid + 1;
    }
    const ring = 2 ** 32;
    const nextEntry = lo < pts.length ? pts[lo]! : pts[0]!;
    const nextPos = Math.floor(nextEntry / 65536) + (lo < pts.length ? 0 : ring);
    const prevIndex = lo > 0 ? lo - 1 : pts.length - 1;
    const prevPos = Math.floor(pts[prevIndex]! / 65536) - (lo > 0 ? 0 : ring);
    // The host first in name order among the points at the previous position.
    let j = prevIndex;
    while (j > 0 && Math.floor(pts[j - 1]! / 65536) === Math.floor(pts[prevIndex]! / 65536)) j--;
    const owner = start - prevPos < nextPos - start ? pts[j]! % 65536 : nextEntry % 65536;
    this.owners.set(slot, owner);
    return owner;
  }

  lookup(key: string, replicas: number): string[] {
    let slot = murmurHash3(new TextEncoder().encode(key)) >>> SLOT_SHIFT;
    const want = Math.min(replicas, this.names.length);
    const found: number[] = [];
    for (let steps = 0; steps < SLOTS && found.length < want; steps++, slot = (slot + 1) % SLOTS) {
      const host = this.slotOwner(slot);
      if (!found.includes(host)) found.push(host);
    }
    return found.map((i) => this.names[i]!);
  }
}
