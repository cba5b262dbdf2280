/**
 * The balanced placement (ironring's default): a consistent-hash ring with many points per host,
 * stratified, and quantised into a table of 2^22 slots so that a lookup is one hash and one array
 * read. docs/ring.md explains the choice and shows the measurements behind the constants.
 *
 * - Each host has `pointsPerWeight × weight` points. The circle of 32-bit positions is cut into
 *   `pointsPerWeight` equal strata and every host puts `weight` points in each stratum, at positions
 *   derived from a hash of its name. Stratifying keeps each host's points spread evenly, and lets
 *   the build visit the table one stratum at a time (cache-friendly).
 * - Slot `s` covers positions `[s·2^10, (s+1)·2^10)` and belongs to the host of the first point at
 *   or after the slot's start, clockwise — exactly what the continuous ring gives that position.
 * - A key hashes (MurmurHash3 of its UTF-8 bytes) to a position; its slot's host is the owner, and
 *   the next distinct hosts walking clockwise through the slots are its replicas.
 *
 * Because a slot's owner is the ring's owner of a fixed position, adding a host only moves slots to
 * it and removing one only moves its own slots, and the table depends on nothing but the set of
 * (name, weight) pairs.
 */
import { murmur3 } from './hash.js';
import type { Placement, WeightedHost } from './placement.js';

/** log2 of the number of slots in the balanced table. */
export const TABLE_BITS = 22;

/** Default points per unit of weight in balanced mode (chosen by measurement, docs/ring.md). */
export const BALANCED_DEFAULT_POINTS = 32_768;

/** Most hosts a balanced ring can hold: host indices are stored in 16 bits. */
export const BALANCED_MAX_HOSTS = 0xffff;

const EMPTY = 0xffffffff;
const SEED_A = 0x5bd1e995;
const SEED_B = 0x1b873593;

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

  shares(): Float64Array {
    const counts = new Float64Array(this.names.length);
    for (const host of this.table) counts[host]! += 1;
    for (let i = 0; i < counts.length; i++) counts[i]! /= this.table.length;
    return counts;
  }
}

/**
 * Fills the slot table, one stratum at a time from the last to the first. Within a stratum, every
 * point `p` of host `i` competes for slot `p >> shift` with the key `(low bits of p) << 16 | i`: the
 * smallest wins, i.e. the first point in the slot, ties going to the host first in name order. A
 * backward sweep over the stratum's slots then gives each slot without a point the owner of the
 * next slot (the ring's successor). The stratum's slots fit in a small scratch array, so the whole
 * build streams through memory once; the slots after the ring's last point wrap around to the owner
 * of its first point, which is known only at the end.
 */
function buildTable(hosts: readonly WeightedHost[], pointsPerWeight: number, tableBits: number): Uint16Array {
  const size = 2 ** tableBits;
  const shift = 32 - tableBits;
  const lowMask = (1 << shift) - 1;
  // Strata are a power of two no larger than the table, so a point's position is its stratum in the
  // high bits and hash bits below, and a stratum is a whole number of slots: integer arithmetic only.
  const strataBits = Math.log2(pointsPerWeight);
  const slotsPerStratum = size / pointsPerWeight;
  const scratch = new Uint32Array(slotsPerStratum).fill(EMPTY);
  const seedsA = Int32Array.from(hosts, (h) => murmur3(h.name, SEED_A));
  const seedsB = Int32Array.from(hosts, (h) => murmur3(h.name, SEED_B));
  const weights = Int32Array.from(hosts, (h) => h.weight);
  const count = hosts.length;
  const table = new Uint16Array(size);
  let carry = -1;
  let wrapFrom = size;
  for (let stratum = pointsPerWeight - 1; stratum >= 0; stratum--) {
    // `<< 32` is a no-op in JavaScript, hence the special case of a single stratum.
    const start = strataBits === 0 ? 0 : stratum << (32 - strataBits);
    const firstSlot = stratum * slotsPerStratum;
    for (let i = 0; i < count; i++) {
      const weight = weights[i]!;
      const seedA = seedsA[i]!;
      const seedB = seedsB[i]!;
      for (let copy = 0; copy < weight; copy++) {
        // Two rounds of lowbias32 (see mix32 in hash.ts), written out because this loop runs
        // millions of times per build.
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
        const position = (start | (x >>> strataBits)) >>> 0;
        const local = (position >>> shift) - firstSlot;
        const candidate = (((position & lowMask) << 16) | i) >>> 0;
        if (candidate < scratch[local]!) scratch[local] = candidate;
      }
    }
    for (let local = slotsPerStratum - 1; local >= 0; local--) {
      const b = scratch[local]!;
      scratch[local] = EMPTY; // ready for the next stratum, cheaper than a fill() per stratum
      if (b !== EMPTY) {
        carry = b & 0xffff;
        if (wrapFrom === size) wrapFrom = firstSlot + local + 1;
      }
      table[firstSlot + local] = carry;
    }
  }
  table.fill(carry, wrapFrom);
  return table;
}
