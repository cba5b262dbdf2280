import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BALANCED_DEFAULT_POINTS, BalancedPlacement } from '../../src/ring/balanced.js';
import { mix32, murmur3 } from '../../src/ring/hash.js';
import type { WeightedHost } from '../../src/ring/key-placement.js';

/**
 * The balanced placement's specification, written the slow and obvious way: generate every point,
 * sort them, and give each slot start to the host of the nearest point (the successor on a tie,
 * the host first in name order on equal positions). The fast build must agree slot for slot.
 */
function referenceTable(hosts: readonly WeightedHost[], strata: number, tableBits: number): Uint16Array {
  const width = 2 ** 32 / strata;
  const points: { position: number; host: number }[] = [];
  hosts.forEach((host, index) => {
    const seedA = murmur3(host.name, 0x5bd1e995);
    const seedB = murmur3(host.name, 0x1b873593);
    for (let stratum = 0; stratum < strata; stratum++) {
      for (let copy = 0; copy < host.weight; copy++) {
        const r = mix32((mix32((stratum * host.weight + copy) ^ seedA) + seedB) | 0);
        points.push({ position: stratum * width + Math.floor(r / strata), host: index });
      }
    }
  });
  points.sort((a, b) => a.position - b.position || a.host - b.host);
  const size = 2 ** tableBits;
  const slotWidth = 2 ** (32 - tableBits);
  const table = new Uint16Array(size);
  let next = 0;
  for (let slot = 0; slot < size; slot++) {
    const start = slot * slotWidth;
    while (next < points.length && points[next]!.position < start) next++;
    const succ = points[next % points.length]!;
    const toSucc = next < points.length ? succ.position - start : succ.position + 2 ** 32 - start;
    // The predecessor is the last point before `start`; among equal positions the first host wins.
    let p = (next + points.length - 1) % points.length;
    const predPosition = points[p]!.position;
    while (points[(p + points.length - 1) % points.length]!.position === predPosition && p !== next % points.length) {
      p = (p + points.length - 1) % points.length;
    }
    const pred = points[p]!;
    const fromPred = next > 0 ? start - pred.position : start + 2 ** 32 - pred.position;
    table[slot] = fromPred < toSucc ? pred.host : succ.host;
  }
  return table;
}

const hostSets = fc
  .uniqueArray(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 })
  .chain((names) =>
    fc.tuple(
      fc.constant([...names].sort()),
      fc.array(fc.integer({ min: 1, max: 3 }), { minLength: names.length, maxLength: names.length }),
    ),
  )
  .map(([names, weights]) => names.map((name, i) => ({ name, weight: weights[i]! })));

describe('balanced placement table', () => {
  it('matches the slow reference slot for slot', () => {
    fc.assert(
      fc.property(hostSets, fc.constantFrom(1, 2, 16, 256), (hosts, strata) => {
        const fast = new BalancedPlacement(hosts, strata, 20);
        const slow = referenceTable(hosts, strata, 20);
        let mismatches = 0;
        for (let slot = 0; slot < slow.length; slot++) if (fast.ownerOfSlot(slot) !== slow[slot]) mismatches++;
        expect(mismatches).toBe(0);
      }),
      { numRuns: 12 },
    );
  });

  it('matches the slow reference with 16-bit entries (more than 256 hosts)', () => {
    const hosts = Array.from({ length: 300 }, (_, i) => ({ name: `h${String(i).padStart(3, '0')}`, weight: 1 + (i % 3) }));
    const fast = new BalancedPlacement(hosts, 8, 20);
    const slow = referenceTable(hosts, 8, 20);
    let mismatches = 0;
    for (let slot = 0; slot < slow.length; slot++) if (fast.ownerOfSlot(slot) !== slow[slot]) mismatches++;
    expect(mismatches).toBe(0);
  });

  it('gives each of 100 hosts within 2 % of an even share at the default size', () => {
    const hosts = Array.from({ length: 100 }, (_, i) => ({ name: `conductor-${String(i).padStart(2, '0')}`, weight: 1 }));
    const shares = new BalancedPlacement(hosts, BALANCED_DEFAULT_POINTS).shares();
    // The benchmark tracks this figure; here it guards against a build that silently degrades.
    expect(Math.max(...shares) * 100).toBeLessThanOrEqual(1.02);
    expect(Math.min(...shares) * 100).toBeGreaterThanOrEqual(0.98);
  });
});
