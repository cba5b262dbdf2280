/**
 * The take-over checker's own rings (take-over-judge.ts) are only as good as what they are checked
 * against: MurmurHash3's published vectors, the balanced placements recorded from ironring at
 * 8fb7c28, the tooz vectors recorded from Debian's python3-tooz, and live python3-tooz itself on the
 * keys where a ring wraps around between two different hosts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { judgeRing, murmurHash3 } from './take-over-judge.js';
import { requirePeer } from './peers.js';

interface Lookup {
  key: string;
  replicas: number;
  ignore?: string[];
  result: string[];
}
interface Case {
  hosts: { name: string; weight: number }[];
  partitions?: number;
  lookups: Lookup[];
}
const read = (file: string) => JSON.parse(readFileSync(new URL(`../fixtures/${file}`, import.meta.url), 'utf8')) as { cases: Case[] };

describe('the take-over judge', () => {
  it('hashes like MurmurHash3_x86_32 (published vectors)', () => {
    const enc = new TextEncoder();
    const vectors: Array<[Uint8Array, number, number]> = [
      [new Uint8Array(0), 0, 0],
      [new Uint8Array(0), 1, 0x514e28b7],
      [new Uint8Array(0), 0xffffffff, 0x81f16f39],
      [Uint8Array.of(0, 0, 0, 0), 0, 0x2362f9de],
      [enc.encode('aaaa'), 0x9747b28c, 0x5a97808a],
      [enc.encode('aaa'), 0x9747b28c, 0x283e0130],
      [enc.encode('aa'), 0x9747b28c, 0x5d211726],
      [enc.encode('a'), 0x9747b28c, 0x7fa09ea6],
      [enc.encode('Hello, world!'), 0x9747b28c, 0x24884cba],
      [enc.encode('The quick brown fox jumps over the lazy dog'), 0x9747b28c, 0x2fa826cd],
    ];
    for (const [bytes, seed, expected] of vectors) expect(murmurHash3(bytes, seed).toString(16)).toBe(expected.toString(16));
  });

  it('places keys like the balanced placements recorded at 8fb7c28, wrap-around included', () => {
    const { cases } = read('balanced/placements.json');
    expect(cases.length).toBeGreaterThanOrEqual(7);
    for (const c of cases) {
      const ring = judgeRing(c.hosts, { mode: 'balanced' });
      const got = c.lookups.map((l) => ring.lookup(l.key, l.replicas));
      expect(got, JSON.stringify(c.hosts)).toEqual(c.lookups.map((l) => l.result));
    }
  });

  it("places keys like the tooz vectors recorded from Debian's python3-tooz", () => {
    const { cases } = read('tooz/hashring.json');
    let checked = 0;
    for (const c of cases) {
      const ring = judgeRing(c.hosts, { mode: 'tooz', partitions: c.partitions! });
      // The checker never ignores hosts, so neither does its judge.
      for (const l of c.lookups.filter((x) => (x.ignore ?? []).length === 0)) {
        expect([...ring.lookup(l.key, l.replicas)].sort(), `${l.key} on ${c.hosts.length} hosts`).toEqual(l.result);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(500);
  });

  // python3-tooz is asked once, for every ring, about random keys and keys past the ring's last
  // point (where tooz wraps to the first one, on rings whose two ends belong to different hosts).
  describe.skipIf(!requirePeer('/usr/bin/python3', 'python3-tooz'))('against live python3-tooz', () => {
    it('agrees with tooz on owners and replica sets, around the wrap as well', () => {
      const rings = [
        { hosts: [{ name: 'c1', weight: 1 }, { name: 'c2', weight: 1 }, { name: 'c3', weight: 1 }], partitions: 32 },
        { hosts: [{ name: 'c1', weight: 1 }, { name: 'c3', weight: 1 }], partitions: 32 },
        { hosts: [{ name: 'c1', weight: 1 }, { name: 'c2', weight: 1 }, { name: 'c3', weight: 1 }, { name: 'c4', weight: 1 }], partitions: 8 },
        { hosts: [{ name: 'a', weight: 2 }, { name: 'b', weight: 1 }, { name: 'kondüktör', weight: 1 }], partitions: 16 },
        { hosts: Array.from({ length: 9 }, (_, i) => ({ name: `conductor-${i}.example.org`, weight: 1 + (i % 2) })), partitions: 4 },
      ];
      const script = `
import hashlib, json, sys, uuid
from tooz import hashring
out = []
for case in json.load(sys.stdin):
    ring = hashring.HashRing([], partitions=case['partitions'])
    for h in case['hosts']:
        ring.add_node(h['name'], weight=h['weight'])
    points = ring._partitions
    first, last = ring._ring[points[0]], ring._ring[points[-1]]
    keys, edge = [str(uuid.uuid4()) for _ in range(300)], []
    while len(edge) < 40:
        k = str(uuid.uuid4())
        x = int(hashlib.md5(k.encode()).hexdigest(), 16)
        if x >= points[-1] or x < points[0]:
            edge.append(k)
    lookups = [{'key': k, 'edge': k in edge, 'owner': sorted(ring.get_nodes(k.encode(), replicas=1)), 'pair': sorted(ring.get_nodes(k.encode(), replicas=2))} for k in keys + edge]
    out.append({'first': first, 'last': last, 'lookups': lookups})
json.dump(out, sys.stdout)
`;
      const res = spawnSync('/usr/bin/python3', ['-c', script], { input: JSON.stringify(rings), encoding: 'utf8', timeout: 120_000 });
      expect(res.stderr).toBe('');
      const answers = JSON.parse(res.stdout) as { first: string; last: string; lookups: { key: string; edge: boolean; owner: string[]; pair: string[] }[] }[];
      let wrapsBetweenHosts = 0;
      answers.forEach((answer, i) => {
        const ring = judgeRing(rings[i]!.hosts, { mode: 'tooz', partitions: rings[i]!.partitions });
        if (answer.first !== answer.last) wrapsBetweenHosts += 1;
        for (const l of answer.lookups) {
          const got = ring.lookup(l.key, 2);
          expect([got[0]], `owner of ${l.key}${l.edge ? ' (past the last point)' : ''}`).toEqual(l.owner);
          expect([...got].sort(), `pair of ${l.key}`).toEqual(l.pair);
        }
      });
      // The wrap-around is only tested when the ring's two ends belong to different hosts somewhere.
      expect(wrapsBetweenHosts).toBeGreaterThan(0);
    });
  });
});
