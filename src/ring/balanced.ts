/**
 * The balanced placement (ironring's default): a consistent-hash ring with many points per host,
 * stratified, where a position belongs to the host of the *nearest* point (either direction), and
 * which is quantised into a table of 2^22 slots so that a lookup is one hash and one array read.
 * docs/ring.md explains the choice and shows the measurements behind the constants.
 *
 * - Each host has `pointsPerWeight × weight` points. The circle of 32-bit positions is cut into
 *   `pointsPerWeight` equal strata and every host puts `weight` points in each stratum, at positions
 *   derived from a hash of its name. Stratifying lets the build visit the table one stratum at a
 *   time, in a scratch window that stays in the CPU cache.
 * - Slot `s` covers positions `[s·2^10, (s+1)·2^10)` and belongs to the host whose point is nearest
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
export const TABLE_BITS = 22;

/** Default points per unit of weight in balanced mode (chosen by measurement, docs/ring.md). */
export const BALANCED_DEFAULT_POINTS = 16_384;

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
  /** Slot → host index; bytes when the hosts fit, which halves the memory a lookup touches. */
  private readonly table: Uint8Array | Uint16Array;
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
 * the host first in name order. Only those two points of a slot can be nearest to a slot start, so
 * walking the slots that hold points yields the ring's gaps in order; each gap's slots go to the
 * nearer of its two ends (`fillGap`). Positions are plain numbers, so the gap that wraps around the
 * end of the ring is handled by seeing its first end one turn back (a negative position).
 */
function buildTable(
  hosts: readonly WeightedHost[],
  pointsPerWeight: number,
  tableBits: number,
): Uint8Array | Uint16Array {
  const size = 2 ** tableBits;
  const slots = size / pointsPerWeight;
  const slotWidth = 2 ** (32 - tableBits);
  const seeds: Seeds = {
    a: Int32Array.from(hosts, (h) => murmur3(h.name, SEED_A)),
    b: Int32Array.from(hosts, (h) => murmur3(h.name, SEED_B)),
    weights: Int32Array.from(hosts, (h) => h.weight),
  };
  const table = hosts.length <= 0x100 ? new Uint8Array(size) : new Uint16Array(size);
  const first = new Int32Array(slots).fill(NO_FIRST);
  const last = new Int32Array(slots).fill(NO_LAST);

  // Every stratum holds a point of every host, so the ring's last point is in the last stratum;
  // seen from the first slot it lies one turn back, in slot `l - size`.
  scatter(pointsPerWeight - 1, pointsPerWeight, tableBits, seeds, first, last);
  let l = slots - 1;
  while (last[l] === NO_LAST) l--;
  let previousSlot = (pointsPerWeight - 1) * slots + l - size;
  let previousOffset = last[l]! >>> 16;
  let previousHost = 0xffff - (last[l]! & 0xffff);
  first.fill(NO_FIRST);
  last.fill(NO_LAST);

  let ringFirstSlot = -1;
  let ringFirstOffset = 0;
  let ringFirstHost = 0;
  for (let stratum = 0; stratum < pointsPerWeight; stratum++) {
    scatter(stratum, pointsPerWeight, tableBits, seeds, first, last);
    const base = stratum * slots;
    for (let i = 0; i < slots; i++) {
      const packedFirst = first[i]!;
      if (packedFirst === NO_FIRST) continue;
      const slot = base + i;
      const offset = packedFirst >>> 16;
      const host = packedFirst & 0xffff;
      fillGap(table, previousSlot, previousOffset, previousHost, slot, offset, host, slotWidth);
      if (ringFirstSlot < 0) {
        ringFirstSlot = slot;
        ringFirstOffset = offset;
        ringFirstHost = host;
      }
      const packedLast = last[i]!;
      previousSlot = slot;
      previousOffset = packedLast >>> 16;
      previousHost = 0xffff - (packedLast & 0xffff);
      first[i] = NO_FIRST;
      last[i] = NO_LAST;
    }
  }
  // The gap that wraps around: from the last point to the first one, one turn ahead.
  fillGap(table, previousSlot, previousOffset, previousHost, ringFirstSlot + size, ringFirstOffset, ringFirstHost, slotWidth);
  return table;
}

/**
 * Gives the slots whose starts lie between two consecutive points p (in slot `pSlot`, `pOffset`
 * positions in) and q — slots `pSlot + 1` to `qSlot` — to the host of the nearer point: p's host
 * when `start - p < q - start`, i.e. below the midpoint, else q's (ties go to the successor). In
 * integers: slot s is p's when `(2s - pSlot - qSlot) · width < pOffset + qOffset`. Slot numbers
 * may lie one turn outside the table at the wrap-around; writes are clamped to the table.
 */
function fillGap(
  table: Uint8Array | Uint16Array,
  pSlot: number,
  pOffset: number,
  pHost: number,
  qSlot: number,
  qOffset: number,
  qHost: number,
  width: number,
): void {
  const slotSum = pSlot + qSlot;
  // slotSum = 2k + r; the first slot that is q's is k + ceil((r·width + offsets) / (2·width)).
  const excess = (slotSum & 1) * width + pOffset + qOffset;
  const split = (slotSum >> 1) + (excess === 0 ? 0 : excess <= 2 * width ? 1 : 2);
  const from = pSlot + 1 < 0 ? 0 : pSlot + 1;
  const to = qSlot >= table.length ? table.length - 1 : qSlot;
  const middle = split < from ? from : split > to + 1 ? to + 1 : split;
  for (let s = from; s < middle; s++) table[s] = pHost;
  for (let s = middle; s <= to; s++) table[s] = qHost;
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
