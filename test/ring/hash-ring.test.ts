import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DuplicateHostError,
  HashRing,
  InvalidHostError,
  InvalidReplicasError,
  InvalidRingOptionError,
  InvalidWeightError,
  NoHostsError,
  RingError,
  UnknownHostError,
  murmur3,
} from '../../src/ring/index.js';
import type { RingMode } from '../../src/ring/index.js';
import { BalancedPlacement, TABLE_BITS } from '../../src/ring/balanced.js';
import { normalizeHosts } from '../../src/ring/hash-ring.js';
import { murmur3Bytes } from '../../src/ring/hash.js';

const MODES: readonly { mode: RingMode; partitions: number }[] = [
  { mode: 'tooz', partitions: 32 },
  // A small balanced ring keeps these behaviour tests fast; the default size is benchmarked.
  { mode: 'balanced', partitions: 1024 },
];

const KEYS = Array.from({ length: 200 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);

describe('HashRing input validation', () => {
  it('throws NoHostsError (HTTP 503) for an empty host list', () => {
    const error = catchError(() => new HashRing([]));
    expect(error).toBeInstanceOf(NoHostsError);
    expect(error).toBeInstanceOf(RingError);
    expect((error as NoHostsError).httpStatus).toBe(503);
    expect((error as NoHostsError).name).toBe('NoHostsError');
  });

  it('names a duplicate host, whether given as a string or an object', () => {
    const error = catchError(() => new HashRing(['c1', 'c2', { name: 'c1', weight: 2 }], { mode: 'tooz' }));
    expect(error).toBeInstanceOf(DuplicateHostError);
    expect((error as DuplicateHostError).host).toBe('c1');
    expect((error as DuplicateHostError).message).toContain('"c1"');
    expect((error as DuplicateHostError).httpStatus).toBe(400);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '2', null, 1001])('rejects weight %s naming it', (weight) => {
    const error = catchError(() => new HashRing([{ name: 'c1', weight: weight as number }], { mode: 'tooz' }));
    expect(error).toBeInstanceOf(InvalidWeightError);
    expect((error as InvalidWeightError).weight).toBe(weight);
    expect((error as InvalidWeightError).host).toBe('c1');
    expect((error as InvalidWeightError).message).toContain(String(weight === '2' ? '"2"' : weight));
    expect((error as InvalidWeightError).httpStatus).toBe(400);
  });

  it.each(['', 42, null, { weight: 2 }, { name: '' }])('rejects host %j', (host) => {
    expect(() => new HashRing([host as string], { mode: 'tooz' })).toThrow(InvalidHostError);
  });

  it.each([0, -2, 1.5, Number.NaN])('rejects replicas %s naming it', (replicas) => {
    const ring = new HashRing(['c1', 'c2'], { mode: 'tooz' });
    const error = catchError(() => ring.lookup('k', { replicas }));
    expect(error).toBeInstanceOf(InvalidReplicasError);
    expect((error as InvalidReplicasError).replicas).toBe(replicas);
    expect((error as InvalidReplicasError).message).toContain(String(replicas));
    expect((error as InvalidReplicasError).httpStatus).toBe(400);
  });

  it('rejects an unknown mode and bad partitions, naming the value', () => {
    expect(() => new HashRing(['c1'], { mode: 'ketama' as RingMode })).toThrow(/invalid mode "ketama"/);
    expect(() => new HashRing(['c1'], { mode: 'tooz', partitions: 0 })).toThrow(InvalidRingOptionError);
    expect(() => new HashRing(['c1'], { mode: 'balanced', partitions: 1000 })).toThrow(/invalid partitions 1000.*power of two/);
    expect(() => new HashRing(['c1'], { mode: 'balanced', partitions: 2 ** 23 })).toThrow(InvalidRingOptionError);
  });
});

describe.each(MODES)('HashRing in $mode mode', ({ mode, partitions }) => {
  const options = { mode, partitions };

  it('returns the requested number of distinct hosts, capped at the ring size', () => {
    const ring = new HashRing(['c1', 'c2', 'c3', 'c4'], options);
    for (const key of KEYS.slice(0, 50)) {
      for (const replicas of [1, 2, 3, 4, 7]) {
        const hosts = ring.lookup(key, { replicas });
        expect(hosts).toHaveLength(Math.min(replicas, 4));
        expect(new Set(hosts).size).toBe(hosts.length);
      }
    }
  });

  it('extends the replica list rather than reshuffling it when more replicas are asked for', () => {
    const ring = new HashRing(['c1', 'c2', 'c3', 'c4', 'c5'], options);
    for (const key of KEYS.slice(0, 50)) {
      const all = ring.lookup(key, { replicas: 5 });
      for (let r = 1; r <= 5; r++) expect(ring.lookup(key, { replicas: r })).toEqual(all.slice(0, r));
    }
  });

  it('returns an empty list when every host is ignored, and ignores names it does not hold', () => {
    const ring = new HashRing(['c1', 'c2'], options);
    expect(ring.lookup(KEYS[0]!, { replicas: 2, ignore: ['c1', 'c2'] })).toEqual([]);
    expect(ring.lookup(KEYS[0]!, { replicas: 2, ignore: ['nope'] })).toEqual(ring.lookup(KEYS[0]!, { replicas: 2 }));
  });

  it('adds and removes hosts, and refuses duplicates, unknown hosts and removing the last host', () => {
    const ring = new HashRing(['c1'], options);
    ring.add({ name: 'c2', weight: 2 });
    expect(ring.hosts).toEqual(['c1', 'c2']);
    expect(ring.members).toEqual([
      { name: 'c1', weight: 1 },
      { name: 'c2', weight: 2 },
    ]);
    expect(() => ring.add('c2')).toThrow(DuplicateHostError);
    expect(() => ring.remove('c9')).toThrow(UnknownHostError);
    ring.remove('c1');
    expect(ring.size).toBe(1);
    expect(ring.lookup(KEYS[0]!)).toEqual(['c2']);
    const error = catchError(() => ring.remove('c2'));
    expect(error).toBeInstanceOf(NoHostsError);
    expect(ring.hosts).toEqual(['c2']);
  });

  it('gives a ring changed by add/remove the same placement as one built from the final set', () => {
    const grown = new HashRing(['c1', 'c2'], options);
    grown.add('c3');
    grown.remove('c1');
    const built = new HashRing(['c3', 'c2'], options);
    for (const key of KEYS) expect(grown.lookup(key, { replicas: 2 })).toEqual(built.lookup(key, { replicas: 2 }));
  });

  it('reports exact shares that sum to 1, one per host', () => {
    const ring = new HashRing(['a', 'b', 'c', { name: 'd', weight: 3 }], options);
    const shares = ring.shares();
    expect([...shares.keys()]).toEqual(['a', 'b', 'c', 'd']);
    const total = [...shares.values()].reduce((sum, s) => sum + s, 0);
    expect(total).toBeCloseTo(1, 12);
    for (const s of shares.values()) expect(s).toBeGreaterThan(0);
  });
});

describe('non-ASCII host names and keys hash as their UTF-8 bytes', () => {
  /** The non-ASCII ring of test/fixtures/tooz/wraparound.json, recorded from python3-tooz (see its README). */
  const recorded = (
    JSON.parse(readFileSync(new URL('../fixtures/tooz/wraparound.json', import.meta.url), 'utf8')) as {
      cases: { label: string; hosts: { name: string; weight: number }[]; partitions: number; lookups: { key: string; replicas: number; ignore: string[]; result: string[] }[] }[];
    }
  ).cases.find((c) => c.label === 'non-ASCII hosts and keys')!;

  // tooz-vectors.test.ts shows that Latin-1 hashing would move most of these keys.
  it('places them in tooz mode exactly where tooz does', () => {
    expect(recorded.hosts.map((h) => h.name)).toContain('узел-1');
    const ring = new HashRing(recorded.hosts, { mode: 'tooz', partitions: recorded.partitions });
    const got = recorded.lookups.map((l) => ({ key: l.key, result: ring.lookup(l.key, { replicas: l.replicas, ignore: l.ignore }).sort() }));
    expect(got).toEqual(recorded.lookups.map((l) => ({ key: l.key, result: l.result })));
  });

  it('places a key in balanced mode at the slot of MurmurHash3 of its UTF-8 bytes, not its Latin-1 bytes', () => {
    const hosts = recorded.hosts;
    const ring = new HashRing(hosts, { mode: 'balanced', partitions: 64 });
    // The same placement, read slot by slot: the owner of key k is the slot of murmur3(UTF-8 of k).
    const table = new BalancedPlacement(normalizeHosts(hosts), 64);
    const slotOwner = (bytes: Uint8Array): string => table.names[table.ownerOfSlot(murmur3Bytes(bytes) >>> (32 - TABLE_BITS))]!;
    let latin1Differs = 0;
    for (const { key } of recorded.lookups) {
      expect(ring.owner(key)).toBe(slotOwner(new TextEncoder().encode(key)));
      if (slotOwner(Buffer.from(key, 'latin1')) !== ring.owner(key)) latin1Differs++;
    }
    // These keys tell the two encodings apart, so the assertion above can fail.
    expect(latin1Differs).toBeGreaterThanOrEqual(recorded.lookups.length / 4);
  });
});

describe('balanced mode', () => {
  it('spreads the key space within 3 % of even over 10 hosts at the default size', () => {
    const ring = new HashRing(Array.from({ length: 10 }, (_, i) => `conductor-${i}`));
    const shares = [...ring.shares().values()];
    // Default points per host give a standard deviation of ~0.6 % per host; 3 % is ≥ 5 sigma.
    expect(Math.max(...shares) * 10).toBeLessThan(1.03);
    expect(Math.min(...shares) * 10).toBeGreaterThan(0.97);
  });

  it('gives a host a share of keys that matches its exact share', () => {
    const ring = new HashRing(['a', 'b', { name: 'c', weight: 2 }], { partitions: 4096 });
    const counts = new Map<string, number>();
    const n = 40_000;
    for (let i = 0; i < n; i++) {
      const owner = ring.owner(`key-${i}`);
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    // 40,000 samples: the standard error of a ~0.25 share is ~0.0022; allow 0.012 (> 5 sigma).
    for (const [host, share] of ring.shares()) expect(Math.abs((counts.get(host) ?? 0) / n - share)).toBeLessThan(0.012);
  });
});

describe('murmur3', () => {
  it.each([
    ['', 0, 0],
    ['', 1, 0x514e28b7],
    ['test', 0, 0xba6bd213],
    ['Hello, world!', 1234, 0xfaf6cdb3],
    ['The quick brown fox jumps over the lazy dog', 0, 0x2e4ff723],
  ])('matches the reference MurmurHash3_x86_32 for %j seed %i', (input, seed, expected) => {
    expect(murmur3(input, seed)).toBe(expected);
  });

  it('hashes a non-ASCII string as its UTF-8 bytes', () => {
    expect(murmur3('é-😀', 7)).toBe(murmur3Bytes(Uint8Array.of(0xc3, 0xa9, 0x2d, 0xf0, 0x9f, 0x98, 0x80), 7));
    expect(murmur3('é')).not.toBe(murmur3Bytes(Uint8Array.of(0xe9)));
  });

  // ASCII keys are hashed from their code units, others by encoding a copy: either way the hash
  // must be that of the UTF-8 bytes (what another language's MurmurHash3 would see).
  it('hashes the UTF-8 bytes of any string, ASCII or not', () => {
    const encoder = new TextEncoder();
    const text = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ minLength: 10, maxLength: 40, unit: 'grapheme' }),
      fc.string({ minLength: 14, maxLength: 20, unit: 'binary' }),
      fc.string({ minLength: 1000, maxLength: 1100 }),
      fc.uuid(),
    );
    fc.assert(
      fc.property(text, fc.integer(), (input, seed) => {
        expect(murmur3(input, seed)).toBe(murmur3Bytes(encoder.encode(input), seed));
      }),
      { numRuns: 300 },
    );
    // Lone surrogates encode as U+FFFD; non-ASCII in the last block or the tail.
    for (const input of ['\ud800', `${'a'.repeat(20)}\udc00`, `${'x'.repeat(1023)}é`, 'é'.repeat(1025)]) {
      expect(murmur3(input)).toBe(murmur3Bytes(encoder.encode(input)));
    }
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
