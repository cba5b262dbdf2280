/**
 * Ring behaviour that mutants of scripts/mutants.json showed untested (issue #21; docs/testing.md):
 * each case names the mutant it kills.
 */
import { describe, expect, it } from 'vitest';
import { BALANCED_MAX_HOSTS, BalancedPlacement, TABLE_BITS } from '../../src/ring/balanced.js';
import { NoHostsError } from '../../src/ring/errors.js';
import { mix32, murmur3 } from '../../src/ring/hash.js';
import { HashRing, resolveRingOptions } from '../../src/ring/hash-ring.js';
import { RingManager } from '../../src/ring/ring-manager.js';

describe('ring edges found by the mutation run', () => {
  it('refuses to remove the last host and keeps it (H4)', () => {
    for (const mode of ['balanced', 'tooz'] as const) {
      const ring = new HashRing(['only'], { mode });
      expect(() => ring.remove('only')).toThrow(NoHostsError);
      expect(ring.size).toBe(1);
      expect(ring.owner('node-1')).toBe('only');
    }
  });

  it('accepts every power of two up to the table size as balanced partitions, and nothing above (H7)', () => {
    const max = 2 ** TABLE_BITS;
    expect(resolveRingOptions({ mode: 'balanced', partitions: max })).toEqual({ mode: 'balanced', partitions: max });
    expect(() => resolveRingOptions({ mode: 'balanced', partitions: max * 2 })).toThrow(/partitions/);
  });

  it('leaves the ring as it was when adding a host fails (H8)', () => {
    // The one way a balanced build fails: one host more than its table can name.
    const hosts = Array.from({ length: BALANCED_MAX_HOSTS }, (_, i) => `h${i}`);
    const ring = new HashRing(hosts, { mode: 'balanced', partitions: 1 });
    const before = ring.owner('node-1');
    expect(() => ring.add('one-too-many')).toThrow(/host count/);
    expect(ring.has('one-too-many')).toBe(false);
    expect(ring.size).toBe(BALANCED_MAX_HOSTS);
    expect(ring.owner('node-1')).toBe(before);
  });

  it('walks the whole balanced table: a host holding a single slot is found on the last step (B1)', () => {
    // With 65,535 hosts of one point each, h10104 holds one slot of the 2^22-slot table, and
    // node-896136 starts the walk on the slot just after it (owned by h9049): with every other host
    // ignored, the walk reaches h10104 only on its very last step (found with the table, once).
    const hosts = Array.from({ length: BALANCED_MAX_HOSTS }, (_, i) => `h${i}`);
    const ring = new HashRing(hosts, { mode: 'balanced', partitions: 1 });
    const keep = new Set(['h9049', 'h10104']);
    expect(ring.shares().get('h10104')).toBe(1 / 2 ** TABLE_BITS);
    expect(ring.lookup('node-896136', { replicas: 2, ignore: hosts.filter((h) => !keep.has(h)) })).toEqual(['h9049', 'h10104']);
  });

  it('rebuilds a group whose only change is a weight, and says which host was reweighted (R1)', () => {
    const manager = new RingManager();
    manager.update('', ['a', 'b']);
    const change = manager.update('', ['a', { name: 'b', weight: 3 }]);
    expect(change).toMatchObject({ group: '', added: [], removed: [], reweighted: ['b'], version: 2 });
    expect(manager.ring('').members).toEqual([{ name: 'a', weight: 1 }, { name: 'b', weight: 3 }]);
  });

  it('tells subscribers nothing when a sync changes nothing (R3 itself is equivalent: see docs/testing.md)', () => {
    const manager = new RingManager();
    manager.sync({ '': ['a', 'b'], rack2: ['c'] });
    const seen: unknown[] = [];
    manager.subscribe((changes) => seen.push(changes));
    expect(manager.sync({ '': ['b', 'a'], rack2: ['c'] })).toEqual([]);
    expect(seen).toEqual([]);
    expect(manager.version).toBe(2);
  });

  it('decides a key whose md5 shares its top 32 bits with a point on the remaining 96 bits, as tooz does (T2)', () => {
    // Keys found (and owners computed) by an independent Python model of tooz's ring (hashlib md5
    // points, bisect_right): each ties a point of this ring on the first word, which the fast
    // search compares first; ~1 key in 10^6 does, so the recorded vectors hold none.
    const ring = new HashRing(['a', 'b'], { mode: 'tooz', partitions: 2048 });
    const cases: Array<[string, string]> = [
      ['node-7072857', 'b'],
      ['node-8017919', 'a'],
      ['node-8528149', 'a'],
      ['node-11008832', 'b'],
    ];
    for (const [key, owner] of cases) expect(ring.owner(key), key).toBe(owner);
  });

  it('splits the wrap-around gap like every other gap when the split falls exactly between two slots (B4)', () => {
    // Two hosts of one point each: the gap from the last point to the first (across the table's
    // end) has its midpoint exactly on a slot boundary here (found by searching host names). The
    // owner of each slot, the slow way: the nearer of the two points, ties to the successor.
    const hosts = [{ name: 'a10839', weight: 1 }, { name: 'b10839', weight: 1 }];
    const bits = 20;
    const width = 2 ** (32 - bits);
    const position = (name: string) => mix32((mix32(0 ^ murmur3(name, 0x5bd1e995)) + murmur3(name, 0x1b873593)) | 0);
    const [p0, p1] = hosts.map((h) => position(h.name)) as [number, number];
    const first = Math.min(p0, p1);
    const last = Math.max(p0, p1);
    const owner = (slot: number): number => {
      const start = slot * width;
      // Slots past the last point or before the first lie in the wrap-around gap.
      const pred = start >= last ? last : start >= first ? first : last - 2 ** 32;
      const succ = start >= last ? first + 2 ** 32 : start >= first ? last : first;
      const nearer = start - pred < succ - start ? pred : succ;
      return nearer === first || nearer === first + 2 ** 32 ? (first === p0 ? 0 : 1) : last === p0 ? 0 : 1;
    };
    const placement = new BalancedPlacement(hosts, 1, bits);
    for (let slot = 943_100; slot <= 943_115; slot++) expect(placement.ownerOfSlot(slot), `slot ${slot}`).toBe(owner(slot));
  });
});
