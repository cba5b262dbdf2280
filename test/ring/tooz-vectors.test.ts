import { createHash } from 'node:crypto';
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

/** The shape of test/fixtures/tooz/wraparound.json, recorded by scripts/record-tooz-vectors.py (see the README). */
interface WrapVectors {
  source: string;
  cases: {
    label: string;
    hosts: { name: string; weight: number }[];
    partitions: number;
    hash: string;
    points: number;
    firstOwner: string;
    lastOwner: string;
    lookups: { key: string; replicas: number; ignore: string[]; result: string[]; pastLast: boolean }[];
  }[];
}

const wrap = JSON.parse(readFileSync(new URL('../fixtures/tooz/wraparound.json', import.meta.url), 'utf8')) as WrapVectors;

/**
 * tooz's ring written the slow and obvious way, independent of src/ring: each point is the md5 of the
 * host's bytes repeated r + 2 times, read as a 128-bit integer; a key goes to the first point strictly
 * greater than its md5, or past the last point. `encoding` lets a test show what Latin-1 hashing
 * (JavaScript's `Buffer.from(s, 'latin1')`: each UTF-16 unit's low byte) would do instead.
 */
function referenceRing(hosts: readonly { name: string; weight: number }[], partitions: number, encoding: BufferEncoding = 'utf8') {
  const points: { at: bigint; host: string }[] = [];
  for (const host of hosts) {
    const bytes = Buffer.from(host.name, encoding);
    for (let r = 0; r < partitions * host.weight; r++) {
      points.push({ at: md5Int(Buffer.concat(Array.from({ length: r + 2 }, () => bytes))), host: host.name });
    }
  }
  points.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return {
    first: points[0]!.host,
    last: points[points.length - 1]!.host,
    points: points.length,
    /** Index of the first point after `key`; `points.length` when past the last point. */
    position(key: string): number {
      const x = md5Int(Buffer.from(key, encoding));
      const i = points.findIndex((p) => p.at > x);
      return i === -1 ? points.length : i;
    },
    owner(key: string): string {
      const i = this.position(key);
      return points[i === points.length ? 0 : i]!.host;
    },
  };
}

function md5Int(bytes: Buffer): bigint {
  return BigInt(`0x${createHash('md5').update(bytes).digest('hex')}`);
}

describe('tooz mode wraps keys past the last point to the first, as tooz does', () => {
  it('has vectors whose first and last points belong to different hosts, most of them past the last point', () => {
    expect(wrap.source).toMatch(/python3-tooz 3\.1\.0/);
    expect(wrap.cases.length).toBeGreaterThanOrEqual(8);
    let pastLast = 0;
    for (const c of wrap.cases) {
      // Checked with the independent reference ring, not taken from the file's own fields on trust.
      const ref = referenceRing(c.hosts, c.partitions);
      expect(ref.points).toBe(c.points);
      expect([ref.first, ref.last]).toEqual([c.firstOwner, c.lastOwner]);
      expect(ref.first).not.toBe(ref.last);
      for (const l of c.lookups) {
        expect(ref.position(l.key) === ref.points).toBe(l.pastLast);
        if (l.pastLast && l.replicas === 1 && l.ignore.length === 0) expect(l.result).toEqual([c.firstOwner]);
      }
      pastLast += c.lookups.filter((l) => l.pastLast).length;
    }
    expect(pastLast).toBeGreaterThanOrEqual(300);
  });

  describe.each(wrap.cases.map((c) => [c.label, c] as const))('%s', (_, c) => {
    it("returns tooz's set for every lookup past the last point", () => {
      const ring = new HashRing(c.hosts, { mode: 'tooz', partitions: c.partitions });
      const past = c.lookups.filter((l) => l.pastLast);
      expect(past.length).toBeGreaterThan(0);
      const got = past.map((l) => ({ key: l.key, result: [...ring.lookup(l.key, { replicas: l.replicas, ignore: l.ignore })].sort() }));
      expect(got).toEqual(past.map((l) => ({ key: l.key, result: l.result })));
    });

    it("returns tooz's set for every lookup inside the ring", () => {
      const ring = new HashRing(c.hosts, { mode: 'tooz', partitions: c.partitions });
      const inside = c.lookups.filter((l) => !l.pastLast);
      const got = inside.map((l) => ({ key: l.key, result: [...ring.lookup(l.key, { replicas: l.replicas, ignore: l.ignore })].sort() }));
      expect(got).toEqual(inside.map((l) => ({ key: l.key, result: l.result })));
    });

    it('gives a key past the last point to the first point’s host, owner first in a walk', () => {
      const ring = new HashRing(c.hosts, { mode: 'tooz', partitions: c.partitions });
      for (const l of c.lookups.filter((x) => x.pastLast)) {
        expect(ring.owner(l.key)).toBe(c.firstOwner);
        expect(ring.lookup(l.key, { replicas: c.hosts.length })[0]).toBe(c.firstOwner);
      }
    });
  });
});

/** Whether `s` has a character outside ASCII (whose UTF-8 and Latin-1 bytes differ). */
const nonAscii = (s: string): boolean => [...s].some((ch) => ch.codePointAt(0)! > 0x7f);

describe('tooz mode hashes non-ASCII host names and keys as UTF-8', () => {
  const c = wrap.cases.find((x) => x.hosts.some((h) => nonAscii(h.name)))!;

  it('has recorded non-ASCII vectors that Latin-1 hashing would place differently', () => {
    expect(c.lookups.every((l) => nonAscii(l.key))).toBe(true);
    const utf8 = referenceRing(c.hosts, c.partitions, 'utf8');
    const latin1 = referenceRing(c.hosts, c.partitions, 'latin1');
    // The reference agrees with tooz in UTF-8, and Latin-1 would move most owners: these vectors can tell them apart.
    for (const l of c.lookups.filter((x) => x.replicas === 1 && x.ignore.length === 0)) expect([utf8.owner(l.key)]).toEqual(l.result);
    const moved = c.lookups.filter((l) => latin1.owner(l.key) !== utf8.owner(l.key)).length;
    expect(moved).toBeGreaterThanOrEqual(c.lookups.length / 4);
  });
});
