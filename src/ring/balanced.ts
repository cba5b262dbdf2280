/**
 * The balanced placement (ironring's default): a consistent-hash ring with many points per host,
 * stratified, where a position belongs to the host of the *nearest* point (either direction), and
 * which is quantised into a table of 2^21 slots so that a lookup is one hash and one array read.
 * docs/ring.md explains the choice and shows the measurements behind the constants.
 *
 * - Each host has `pointsPerWeight × weight` points. The circle of 32-bit positions is cut into
 *   `pointsPerWeight` equal strata and every host puts `weight` points in each stratum, at positions
 *   derived from a hash of its name. Stratifying lets the build visit the table one stratum at a
 *   time, in a scratch window that stays in the CPU cache.
 * - Slot `s` covers positions `[s·2^11, (s+1)·2^11)` and belongs to the host whose point is nearest
 *   to the slot's start: the first point at or after it, unless the last point before it is
 *   strictly closer. Owning the cell around each point (rather than the arc before it, as tooz and
 *   ketama do) averages two random gaps per point instead of one, which halves the variance of a
 *   host's share for the same number of points.
 * - A key hashes (MurmurHash3 of its UTF-8 bytes) to a position; its slot's host is the owner, and
 *   the next distinct hosts walking clockwise through the slots are its replicas.
 *
 * Every position ranks the hosts by the distance to their nearest point, which depends on each
 * host's own points only. So adding a host only moves slots to it, removing one only moves its own
 * slots, and the table depends on nothing but the set of (name, weight) pairs.
 */
import { murmur3 } from './hash.js';
import type { Placement, WeightedHost } from './placement.js';

/** log2 of the number of slots in the balanced table. */
export const TABLE_BITS = 21;

/** Default points per unit of weight in balanced mode (chosen by measurement, docs/ring.md). */
export const BALANCED_DEFAULT_POINTS = 32_768;

/** Most hosts a balanced ring can hold: host indices are stored in 16 bits. */
export const BALANCED_MAX_HOSTS = 0xffff;

const SEED_A = 0x5bd1e995;
const SEED_B = 0x1b873593;
/** "No point in this slot" for the first-point window (larger than any packed point). */
const NO_FIRST = 0x7fffffff;
/** "No point in this slot" for the last-point window (smaller than any packed point). */
const NO_LAST = -1;

/** Builds the balanced placement of `hosts` (already validated, sorted by name, distinct). */
export class BalancedPlacement implements Placement {
  readonly names: readonly string[];
  private readonly table: Uint16Array;
  private readonly shift: number;
  private readonly mask: number;

  constructor(
    hosts: readonly WeightedHost[],
    pointsPerWeight: number,
    /** log2 of the table size; only the benchmark's trade-off study changes it. */
    tableBits: number = TABLE_BITS,
  ) {
    this.names = hosts.map((h) => h.name);
    this.shift = 32 - tableBits;
    this.mask = (1 << tableBits) - 1;
    this.table = buildTable(hosts, pointsPerWeight, tableBits);
  }

  owner(key: string): string {
    return this.names[this.table[murmur3(key) >>> this.shift]!]!;
  }

  walk(key: string, count: number, ignored: Uint8Array | null): string[] {
    const table = this.table;
    const mask = this.mask;
    let slot = murmur3(key) >>> this.shift;
    const found: number[] = [];
    // A full turn of the table visits every host's slots, so the walk always terminates.
    for (let steps = 0; steps <= mask && found.length < count; steps++, slot = (slot + 1) & mask) {
      const host = table[slot]!;
      if (ignored !== null && ignored[host] === 1) continue;
      if (!found.includes(host)) found.push(host);
    }
    return found.map((i) => this.names[i]!);
  }

  /** Number of slots in the table. */
  get slotCount(): number {
    return this.table.length;
  }

  /** Host index owning slot `slot` (for tests and the benchmark's analysis). */
  ownerOfSlot(slot: number): number {
    return this.table[slot]!;
  }

  shares(): Float64Array {
    const counts = new Float64Array(this.names.length);
    for (const host of this.table) counts[host]! += 1;
    for (let i = 0; i < counts.length; i++) counts[i]! /= this.table.length;
    return counts;
  }
}

/** The host seeds and weights the point generator needs, as typed arrays for the hot loop. */
interface Seeds {
  readonly a: Int32Array;
  readonly b: Int32Array;
  readonly weights: Int32Array;
}

/**
 * Fills the slot table, stratum by stratum. For each stratum the points are scattered into two
 * windows (one entry per slot): the first point of each slot, packed `offset << 16 | host`, and the
 * last, packed `offset << 16 | (0xffff - host)`, so that plain min/max pick them with ties going to
 * the host first in name order. A forward pass then finds each slot start's predecessor and
 * successor points, and the nearer one's host owns the slot (ties: the successor).
 * The stratum after the current one is scattered first, because its first point is the successor
 * of the current stratum's last slots; the ring wraps around between the last and first strata.
 */
function buildTable(hosts: readonly WeightedHost[], pointsPerWeight: number, tableBits: number): Uint16Array {
  const size = 2 ** tableBits;
  const slots = size / pointsPerWeight;
  const seeds: Seeds = {
    a: Int32Array.from(hosts, (h) => murmur3(h.name, SEED_A)),
    b: Int32Array.from(hosts, (h) => murmur3(h.name, SEED_B)),
    weights: Int32Array.from(hosts, (h) => h.weight),
  };
  const shift = 32 - tableBits;
  const table = new Uint16Array(size);
  let first = new Int32Array(slots).fill(NO_FIRST);
  let last = new Int32Array(slots).fill(NO_LAST);
  let nextFirst = new Int32Array(slots).fill(NO_FIRST);
  let nextLast = new Int32Array(slots).fill(NO_LAST);

  // The predecessor of the very first slot is the last point of the last stratum.
  scatter(pointsPerWeight - 1, pointsPerWeight, tableBits, seeds, nextFirst, nextLast);
  let l = slots - 1;
  while (nextLast[l] === NO_LAST) l--;
  let predPosition = (((pointsPerWeight - 1) * slots + l) * 2 ** shift + (nextLast[l]! >>> 16)) >>> 0;
  let predHost = 0xffff - (nextLast[l]! & 0xffff);
  nextFirst.fill(NO_FIRST);
  nextLast.fill(NO_LAST);

  scatter(0, pointsPerWeight, tableBits, seeds, first, last);
  l = 0;
  while (first[l] === NO_FIRST) l++;
  const ringFirstPosition = (l * 2 ** shift + (first[l]! >>> 16)) >>> 0;
  const ringFirstHost = first[l]! & 0xffff;

  for (let stratum = 0; stratum < pointsPerWeight; stratum++) {
    const base = stratum * slots;
    let afterPosition = ringFirstPosition;
    let afterHost = ringFirstHost;
    if (stratum + 1 < pointsPerWeight) {
      scatter(stratum + 1, pointsPerWeight, tableBits, seeds, nextFirst, nextLast);
      l = 0;
      while (nextFirst[l] === NO_FIRST) l++;
      afterPosition = (((base + slots + l) << shift) | (nextFirst[l]! >>> 16)) >>> 0;
      afterHost = nextFirst[l]! & 0xffff;
    }
    // One forward pass: `next` is the first slot at or after `i` holding a point (found lazily),
    // so the successor of slot i's start is that slot's first point, or the next stratum's.
    let next = -1;
    let succPosition = 0;
    let succHost = 0;
    for (let i = 0; i < slots; i++) {
      if (next < i) {
        next = i;
        while (next < slots && first[next] === NO_FIRST) next++;
        if (next < slots) {
          succPosition = (((base + next) << shift) | (first[next]! >>> 16)) >>> 0;
          succHost = first[next]! & 0xffff;
        } else {
          succPosition = afterPosition;
          succHost = afterHost;
        }
      }
      const start = ((base + i) << shift) >>> 0;
      // Unsigned 32-bit differences measure clockwise distances across the wrap-around too.
      const toSucc = (succPosition - start) >>> 0;
      const fromPred = (start - predPosition) >>> 0;
      table[base + i] = fromPred < toSucc ? predHost : succHost;
      const packed = last[i]!;
      if (packed !== NO_LAST) {
        predPosition = (((base + i) << shift) | (packed >>> 16)) >>> 0;
        predHost = 0xffff - (packed & 0xffff);
        last[i] = NO_LAST;
        first[i] = NO_FIRST;
      }
    }
    [first, nextFirst] = [nextFirst, first];
    [last, nextLast] = [nextLast, last];
  }
  return table;
}

/**
 * Scatters the points of one stratum into the first/last windows. Point `c` of host `i` in the
 * stratum is at the stratum's start plus the high bits of two rounds of lowbias32 (see `mix32` in
 * hash.ts, written out because this loop runs millions of times per build) over `c` and the host's
 * two name seeds.
 */
function scatter(
  stratum: number,
  strata: number,
  tableBits: number,
  seeds: Seeds,
  first: Int32Array,
  last: Int32Array,
): void {
  const strataBits = Math.log2(strata);
  const shift = 32 - tableBits;
  const lowMask = (1 << shift) - 1;
  const firstSlot = stratum * (2 ** tableBits / strata);
  // `<< 32` is a no-op in JavaScript, hence the special case of a single stratum.
  const start = strataBits === 0 ? 0 : stratum << (32 - strataBits);
  const { a, b, weights } = seeds;
  for (let i = 0; i < weights.length; i++) {
    const weight = weights[i]!;
    const seedA = a[i]!;
    const seedB = b[i]!;
    for (let copy = 0; copy < weight; copy++) {
      let x = (stratum * weight + copy) ^ seedA;
      x ^= x >>> 16;
      x = Math.imul(x, 0x7feb352d);
      x ^= x >>> 15;
      x = Math.imul(x, 0x846ca68b);
      x ^= x >>> 16;
      x = (x + seedB) | 0;
      x ^= x >>> 16;
      x = Math.imul(x, 0x7feb352d);
      x ^= x >>> 15;
      x = Math.imul(x, 0x846ca68b);
      x ^= x >>> 16;
      // Kept as a signed 32-bit value: `>>> 0` here would make V8 carry doubles through the loop.
      const position = start | (x >>> strataBits);
      const slot = (position >>> shift) - firstSlot;
      const offset = (position & lowMask) << 16;
      const asFirst = offset | i;
      const asLast = offset | (0xffff - i);
      // Branch-free min/max (the sign of the difference as a mask): which point comes first in a
      // slot is a coin toss, and mispredicted branches cost more than these few operations.
      const oldFirst = first[slot]!;
      const takeFirst = (asFirst - oldFirst) >> 31;
      first[slot] = (asFirst & takeFirst) | (oldFirst & ~takeFirst);
      const oldLast = last[slot]!;
      const takeLast = (oldLast - asLast) >> 31;
      last[slot] = (asLast & takeLast) | (oldLast & ~takeLast);
    }
  }
}
