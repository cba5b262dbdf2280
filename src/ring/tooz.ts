/**
 * The `tooz` placement: byte-for-byte the placements of `tooz.hashring.HashRing`, the ring OpenStack
 * Ironic and Nova place nodes with (REFERENCE.md, "tooz hash ring"), so that ironring can take over
 * a fleet without moving a single node.
 *
 * - Host `h` (UTF-8 bytes) gets `partitions × weight` points: point `r` is the md5 of `h` repeated
 *   `r + 2` times, read as a 128-bit big-endian unsigned integer. Two equal points: the host later in
 *   name order keeps it (tooz's "last writer wins", made deterministic).
 * - A key's position is the md5 of its UTF-8 bytes; its owner is the host of the first point strictly
 *   greater than it (Python's `bisect_right`), wrapping to the first point; replicas continue
 *   clockwise over distinct hosts, skipping ignored ones. tooz returns a set; this keeps the walk
 *   order, owner first, which is the order Ironic's single-replica lookup relies on.
 */
import { createHash } from 'node:crypto';
import { md5Words } from './md5.js';
import type { KeyPlacement, WeightedHost } from './key-placement.js';

/** tooz's and Ironic's default points per host: `2 ** hash_partition_exponent` with exponent 5. */
export const TOOZ_DEFAULT_PARTITIONS = 32;

const TWO_128 = 1n << 128n;
/** Scratch for a key's digest: lookups are synchronous, so one buffer serves every ring. */
const KEY_WORDS = new Uint32Array(4);

/** Builds the tooz placement of `hosts` (already validated, sorted by name, distinct). */
export class ToozPlacement implements KeyPlacement {
  readonly names: readonly string[];
  /** The points' most significant 32 bits, ascending: most comparisons end here. */
  private readonly high: Uint32Array;
  /** All four 32-bit words of each point (big-endian order), for ties on the first word. */
  private readonly words: Uint32Array;
  /** Host index of each point. */
  private readonly owners: Uint32Array;

  constructor(hosts: readonly WeightedHost[], partitions: number) {
    this.names = hosts.map((h) => h.name);
    const byPoint = new Map<string, { words: Uint32Array; host: number }>();
    hosts.forEach((host, index) => {
      const name = Buffer.from(host.name, 'utf8');
      // One running hasher per host, as tooz does: each point extends the previous input by `h`.
      const hasher = createHash('md5').update(name);
      for (let r = 0; r < partitions * host.weight; r++) {
        hasher.update(name);
        const digest = hasher.copy().digest();
        byPoint.set(digest.toString('hex'), { words: toWords(digest), host: index });
      }
    });
    // Fixed-width lower-case hex sorts like the 128-bit numbers it spells.
    const sorted = [...byPoint.keys()].sort();
    this.high = new Uint32Array(sorted.length);
    this.words = new Uint32Array(sorted.length * 4);
    this.owners = new Uint32Array(sorted.length);
    sorted.forEach((hex, i) => {
      const point = byPoint.get(hex)!;
      this.high[i] = point.words[0]!;
      this.words.set(point.words, i * 4);
      this.owners[i] = point.host;
    });
  }

  owner(key: string): string {
    return this.names[this.owners[this.firstAfter(key)]!]!;
  }

  walk(key: string, count: number, ignored: Uint8Array | null): string[] {
    const found: number[] = [];
    const points = this.owners.length;
    let i = this.firstAfter(key);
    for (let steps = 0; steps < points && found.length < count; steps++) {
      const host = this.owners[i]!;
      if ((ignored === null || ignored[host] !== 1) && !found.includes(host)) found.push(host);
      i = i + 1 === points ? 0 : i + 1;
    }
    return found.map((h) => this.names[h]!);
  }

  shares(): Float64Array {
    const shares = new Float64Array(this.names.length);
    const points = this.owners.length;
    // Point i owns [point i-1, point i); the first point also owns the wrap-around arc.
    let previous = this.point(points - 1) - TWO_128;
    for (let i = 0; i < points; i++) {
      const current = this.point(i);
      shares[this.owners[i]!]! += Number((current - previous) >> 64n) / 2 ** 64;
      previous = current;
    }
    return shares;
  }

  /** Index of the first point strictly greater than md5(key), wrapping to 0 (`bisect_right`). */
  private firstAfter(key: string): number {
    const x = KEY_WORDS;
    md5Words(key, x);
    const x0 = x[0]!;
    const high = this.high;
    let lo = 0;
    let hi = high.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const h = high[mid]!;
      if (h > x0 || (h === x0 && this.greaterThan(mid, x))) hi = mid;
      else lo = mid + 1;
    }
    return lo === high.length ? 0 : lo;
  }

  /** Whether point `i` is greater than the key's words `x`, given that their first words are equal. */
  private greaterThan(i: number, x: Uint32Array): boolean {
    for (let w = 1; w < 4; w++) {
      const p = this.words[i * 4 + w]!;
      if (p !== x[w]) return p > x[w]!;
    }
    return false;
  }

  private point(i: number): bigint {
    let value = 0n;
    for (let w = 0; w < 4; w++) value = (value << 32n) | BigInt(this.words[i * 4 + w]!);
    return value;
  }
}

function toWords(digest: Buffer): Uint32Array {
  return Uint32Array.of(
    digest.readUInt32BE(0),
    digest.readUInt32BE(4),
    digest.readUInt32BE(8),
    digest.readUInt32BE(12),
  );
}
