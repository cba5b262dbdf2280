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
import type { KeyPlacement, WeightedHost } from './key-placement.js';

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
export class BalancedPlacement implements KeyPlacement {
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
    this.table = new TableBuilder(hosts, pointsPerWeight, tableBits).build();
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

/**
 * What the point generator needs for each of the `weight` points a host has in every stratum, as
 * flat typed arrays for the hot loop: the host's index, which of its points (0 … weight - 1), its
 * weight, and its two name seeds.
 */
interface Seeds {
  readonly host: Int32Array;
  readonly copy: Int32Array;
  readonly weight: Int32Array;
  readonly seedA: Int32Array;
  readonly seedB: Int32Array;
}

function seedsOf(hosts: readonly WeightedHost[]): Seeds {
  const count = hosts.reduce((sum, h) => sum + h.weight, 0);
  const seeds = {
    host: new Int32Array(count),
    copy: new Int32Array(count),
    weight: new Int32Array(count),
    seedA: new Int32Array(count),
    seedB: new Int32Array(count),
  };
  let point = 0;
  hosts.forEach((h, index) => {
    const a = murmur3(h.name, SEED_A);
    const b = murmur3(h.name, SEED_B);
    for (let c = 0; c < h.weight; c++, point++) {
      seeds.host[point] = index;
      seeds.copy[point] = c;
      seeds.weight[point] = h.weight;
      seeds.seedA[point] = a;
      seeds.seedB[point] = b;
    }
  });
  return seeds;
}

/**
 * Strata per call of `TableBuilder.block`: short enough calls that V8 optimises the build's hot
 * path as ordinary functions instead of replacing one long-running loop on the stack.
 */
const STRATA_PER_BLOCK = 64;

/** Whether this platform stores multi-byte typed-array elements little-endian. */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/**
 * Fills the slot table, stratum by stratum. For each stratum the points are scattered into two
 * windows (one entry per slot): the first point of each slot, packed `offset << 16 | host`, and the
 * last, packed `offset << 16 | (0xffff - host)`, so that plain min/max pick them with ties going to
 * the host first in name order, and a bitmap records which slots got a point. Only those two points
 * of a slot can be nearest to a slot start, so visiting the marked slots in order (lowest set bit
 * first) yields the ring's gaps in order; each gap's slots go to the nearer of its two ends.
 * Positions are plain numbers, so the gap that wraps around the end of the ring is handled by
 * seeing its first end one turn back (a negative position).
 *
 * Speed (docs/ring.md): the per-stratum work is a method called once per stratum, so V8 optimises
 * it as a whole function rather than through on-stack replacement of one long loop (which ran the
 * build up to 1.8 times slower); gaps are painted four bytes at a time through a DataView, each
 * write allowed to run past the gap's end because the next gap, painted later, overwrites it (the
 * buffer has a few bytes of slack after the table for the last one).
 */
class TableBuilder {
  private readonly size: number;
  private readonly slots: number;
  private readonly strataBits: number;
  private readonly widthBits: number;
  private readonly seeds: Seeds;
  /** log2 of the bytes per table entry (0: bytes, 1: 16-bit entries). */
  private readonly shift: number;
  /** Multiplier that repeats a host index across a 32-bit word (4 bytes or 2 halves). */
  private readonly repeat: number;
  private readonly buffer: ArrayBuffer;
  private readonly view: DataView;
  private readonly first: Int32Array;
  private readonly last: Int32Array;
  private readonly occupied: Int32Array;
  // The point the next gap starts from (the last point seen so far) and the ring's first point.
  private previousSlot = 0;
  private previousOffset = 0;
  private previousWord = 0;
  private ringFirstSlot = -1;
  private ringFirstOffset = 0;
  private ringFirstWord = 0;

  constructor(hosts: readonly WeightedHost[], pointsPerWeight: number, tableBits: number) {
    this.size = 2 ** tableBits;
    this.slots = this.size / pointsPerWeight;
    this.strataBits = Math.log2(pointsPerWeight);
    this.widthBits = 32 - tableBits;
    this.seeds = seedsOf(hosts);
    const wide = hosts.length > 0x100;
    this.shift = wide ? 1 : 0;
    this.repeat = wide ? 0x00010001 : 0x01010101;
    this.buffer = new ArrayBuffer((this.size << this.shift) + 8);
    this.view = new DataView(this.buffer);
    this.first = new Int32Array(this.slots).fill(NO_FIRST);
    this.last = new Int32Array(this.slots).fill(NO_LAST);
    this.occupied = new Int32Array(Math.ceil(this.slots / 32));
  }

  build(): Uint8Array | Uint16Array {
    const strata = 2 ** this.strataBits;
    // Every stratum holds a point of every host, so the ring's last point is in the last stratum;
    // seen from the first slot it lies one turn back, in slot `l - size`.
    this.scatter(strata - 1);
    let l = this.slots - 1;
    while (this.last[l] === NO_LAST) l--;
    const packed = this.last[l]!;
    this.previousSlot = (strata - 1) * this.slots + l - this.size;
    this.previousOffset = packed >>> 16;
    this.previousWord = Math.imul(0xffff - (packed & 0xffff), this.repeat);
    this.first.fill(NO_FIRST);
    this.last.fill(NO_LAST);
    this.occupied.fill(0);
    for (let stratum = 0; stratum < strata; stratum += STRATA_PER_BLOCK) {
      this.block(stratum, Math.min(stratum + STRATA_PER_BLOCK, strata));
    }
    // The gap that wraps around: from the last point to the first one, one turn ahead.
    this.edgeGap(this.ringFirstSlot + this.size, this.ringFirstOffset, this.ringFirstWord);
    return this.shift === 0 ? new Uint8Array(this.buffer, 0, this.size) : new Uint16Array(this.buffer, 0, this.size);
  }

  /** Scatters and sweeps strata `from` to `to - 1`. */
  private block(from: number, to: number): void {
    for (let stratum = from; stratum < to; stratum++) {
      this.scatter(stratum);
      this.sweep(stratum);
    }
  }

  /**
   * Scatters the points of one stratum into the first/last windows. Point `c` of host `i` in the
   * stratum is at the stratum's start plus the high bits of two rounds of lowbias32 (see `mix32`
   * in hash.ts, written out because this loop runs millions of times per build) over `c` and the
   * host's two name seeds.
   */
  private scatter(stratum: number): void {
    const { first, last, occupied, strataBits, widthBits } = this;
    const { host, copy, weight, seedA, seedB } = this.seeds;
    const windowMask = this.slots - 1;
    const lowMask = (1 << widthBits) - 1;
    // `<< 32` is a no-op in JavaScript, hence the special case of a single stratum.
    const start = strataBits === 0 ? 0 : stratum << (32 - strataBits);
    for (let point = 0; point < host.length; point++) {
      const i = host[point]!;
      let x = (Math.imul(stratum, weight[point]!) + copy[point]!) ^ seedA[point]!;
      x ^= x >>> 16;
      x = Math.imul(x, 0x7feb352d);
      x ^= x >>> 15;
      x = Math.imul(x, 0x846ca68b);
      x ^= x >>> 16;
      x = (x + seedB[point]!) | 0;
      x ^= x >>> 16;
      x = Math.imul(x, 0x7feb352d);
      x ^= x >>> 15;
      x = Math.imul(x, 0x846ca68b);
      x ^= x >>> 16;
      // Kept as a signed 32-bit value: `>>> 0` here would make V8 carry doubles through the loop.
      const position = start | (x >>> strataBits);
      const slot = (position >>> widthBits) & windowMask;
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
      occupied[slot >> 5]! |= 1 << (slot & 31);
    }
  }

  /**
   * Paints the gaps that end in this stratum and clears its windows. A gap from point p (in slot
   * `pSlot`, `pOffset` positions in) to the next point q covers slots `pSlot + 1` to `qSlot`; a
   * slot is p's when its start is nearer to p (`start - p < q - start`, ties to q), i.e. below the
   * midpoint. In integers, with `pSlot + qSlot = 2k + r`, the first slot that is q's is
   * `k + ceil((r·width + pOffset + qOffset) / (2·width))`.
   */
  private sweep(stratum: number): void {
    const { first, last, occupied, view, shift, repeat, widthBits } = this;
    const base = stratum * this.slots;
    const round = (2 << widthBits) - 1;
    let previousSlot = this.previousSlot;
    let previousOffset = this.previousOffset;
    let previousWord = this.previousWord;
    let atRingStart = this.ringFirstSlot < 0;
    for (let w = 0; w < occupied.length; w++) {
      let bits = occupied[w]!;
      if (bits === 0) continue;
      occupied[w] = 0;
      do {
        const i = (w << 5) | (31 - Math.clz32(bits & -bits));
        bits &= bits - 1;
        const packedFirst = first[i]!;
        const packedLast = last[i]!;
        first[i] = NO_FIRST;
        last[i] = NO_LAST;
        const slot = base + i;
        const offset = packedFirst >>> 16;
        const word = Math.imul(packedFirst & 0xffff, repeat);
        if (atRingStart) {
          atRingStart = false;
          // The ring's first point: the gap before it starts one turn back, so it is clamped.
          this.ringFirstSlot = slot;
          this.ringFirstOffset = offset;
          this.ringFirstWord = word;
          this.previousSlot = previousSlot;
          this.previousOffset = previousOffset;
          this.previousWord = previousWord;
          this.edgeGap(slot, offset, word);
        } else {
          const slotSum = previousSlot + slot;
          const split = (slotSum >> 1) + ((((slotSum & 1) << widthBits) + previousOffset + offset + round) >> (widthBits + 1));
          const middle = split << shift;
          const end = (slot + 1) << shift;
          let at = (previousSlot + 1) << shift;
          view.setUint32(at, previousWord, LITTLE_ENDIAN);
          for (at += 4; at < middle; at += 4) view.setUint32(at, previousWord, LITTLE_ENDIAN);
          view.setUint32(middle, word, LITTLE_ENDIAN);
          for (at = middle + 4; at < end; at += 4) view.setUint32(at, word, LITTLE_ENDIAN);
        }
        previousSlot = slot;
        previousOffset = packedLast >>> 16;
        previousWord = Math.imul(0xffff - (packedLast & 0xffff), repeat);
      } while (bits !== 0);
    }
    this.previousSlot = previousSlot;
    this.previousOffset = previousOffset;
    this.previousWord = previousWord;
  }

  /**
   * The two gaps at the ends of the table, where slot numbers lie one turn outside it: the same
   * split as `sweep`, slot by slot, with the writes clamped to the table.
   */
  private edgeGap(qSlot: number, qOffset: number, qWord: number): void {
    const pSlot = this.previousSlot;
    const width = 2 ** this.widthBits;
    const slotSum = pSlot + qSlot;
    const excess = (slotSum & 1) * width + this.previousOffset + qOffset;
    const split = Math.floor(slotSum / 2) + (excess === 0 ? 0 : excess <= 2 * width ? 1 : 2);
    const from = Math.max(pSlot + 1, 0);
    const to = Math.min(qSlot, this.size - 1);
    const middle = Math.min(Math.max(split, from), to + 1);
    for (let s = from; s <= to; s++) this.set(s, s < middle ? this.previousWord : qWord);
  }

  private set(slot: number, word: number): void {
    if (this.shift === 0) this.view.setUint8(slot, word & 0xff);
    else this.view.setUint16(slot << 1, word & 0xffff, LITTLE_ENDIAN);
  }
}
