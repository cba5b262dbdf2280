import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HashRing } from '../../src/ring/index.js';

/** The shape of test/fixtures/tooz/hashring.json, recorded from Debian's python3-tooz 3.1.0 (see its README). */
interface ToozVectors {
  cases: {
    hosts: { name: string; weight: number }[];
    partitions: number;
    hash: string;
    lookups: { key: string; replicas: number; ignore: string[]; result: string[] }[];
  }[];
}

// A fixture of this repository: tests never read files from outside it (a fresh clone has no ../shared).
const VECTORS_PATH = new URL('../fixtures/tooz/hashring.json', import.meta.url);
const vectors = JSON.parse(readFileSync(VECTORS_PATH, 'utf8')) as ToozVectors;

describe('tooz mode reproduces tooz.hashring.HashRing', () => {
  it('has the eight recorded cases', () => {
    expect(vectors.cases).toHaveLength(8);
  });

  describe.each(vectors.cases.map((c, i) => [i, c] as const))('case %i', (_, c) => {
    const label = `${c.hosts.length} hosts (${c.hosts.slice(0, 3).map((h) => `${h.name}×${h.weight}`).join(', ')}…), ${c.partitions} partitions`;

    it(`returns tooz's set for every lookup: ${label}`, () => {
      expect(c.hash).toBe('md5');
      const ring = new HashRing(c.hosts, { mode: 'tooz', partitions: c.partitions });
      const got = c.lookups.map((l) => [...ring.lookup(l.key, { replicas: l.replicas, ignore: l.ignore })].sort());
      expect(got).toEqual(c.lookups.map((l) => l.result));
    });

    it(`gives the same answers whatever order the hosts are listed in: ${label}`, () => {
      const forward = new HashRing(c.hosts, { mode: 'tooz', partitions: c.partitions });
      const reversed = new HashRing([...c.hosts].reverse(), { mode: 'tooz', partitions: c.partitions });
      for (const l of c.lookups) {
        expect(reversed.lookup(l.key, { replicas: l.replicas, ignore: l.ignore })).toEqual(
          forward.lookup(l.key, { replicas: l.replicas, ignore: l.ignore }),
        );
      }
    });

    it(`puts the owner first and agrees with owner(): ${label}`, () => {
      const ring = new HashRing(c.hosts, { mode: 'tooz', partitions: c.partitions });
      for (const l of c.lookups.filter((x) => x.ignore.length === 0)) {
        const owner = ring.owner(l.key);
        expect(ring.lookup(l.key, { replicas: l.replicas })[0]).toBe(owner);
        // With replicas = 1 and nothing ignored, tooz's one-element set is the owner.
        if (l.replicas === 1) expect([owner]).toEqual(l.result);
      }
    });
  });
});
