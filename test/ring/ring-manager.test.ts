import { describe, expect, it } from 'vitest';
import { DuplicateHostError, InvalidRingOptionError, NoHostsError, RingManager } from '../../src/ring/index.js';
import type { RingChange } from '../../src/ring/index.js';

// tooz mode keeps these rings tiny; the manager does not care which placement it caches.
const OPTIONS = { mode: 'tooz', partitions: 16 } as const;

function recorder(manager: RingManager): RingChange[] {
  const changes: RingChange[] = [];
  manager.subscribe((change) => changes.push(change));
  return changes;
}

describe('RingManager', () => {
  it('builds a ring per group and reports who joined, with increasing versions', () => {
    const manager = new RingManager(OPTIONS);
    const changes = recorder(manager);
    manager.update('', ['c2', 'c1']);
    manager.update('rack-b', ['b1']);
    expect(changes.map((c) => [c.group, c.version, c.added, c.removed])).toEqual([
      ['', 1, ['c1', 'c2'], []],
      ['rack-b', 2, ['b1'], []],
    ]);
    expect(manager.version).toBe(2);
    expect(manager.groups()).toEqual(['', 'rack-b']);
    expect(manager.ring('').hosts).toEqual(['c1', 'c2']);
    expect(manager.lookup('rack-b', 'node-1')).toEqual(['b1']);
  });

  it('emits nothing and keeps the same ring when the member set is unchanged', () => {
    const manager = new RingManager(OPTIONS);
    manager.update('g', ['c1', { name: 'c2', weight: 2 }]);
    const ring = manager.ring('g');
    const changes = recorder(manager);
    expect(manager.update('g', [{ name: 'c2', weight: 2 }, 'c1'])).toBeNull();
    expect(changes).toEqual([]);
    expect(manager.ring('g')).toBe(ring);
    expect(manager.version).toBe(1);
  });

  it('reports added, removed and reweighted hosts in one change', () => {
    const manager = new RingManager(OPTIONS);
    manager.update('g', ['c1', 'c2', 'c3']);
    const change = manager.update('g', ['c1', { name: 'c3', weight: 2 }, 'c4']);
    expect(change).toMatchObject({ group: 'g', version: 2, added: ['c4'], removed: ['c2'], reweighted: ['c3'] });
    expect(change?.hosts).toEqual(['c1', 'c3', 'c4']);
    expect(change?.ring).toBe(manager.ring('g'));
    expect(change?.ring?.lookup('node', { replicas: 3 }).sort()).toEqual(['c1', 'c3', 'c4']);
  });

  it('drops the ring of a group whose last member left, and answers NoHostsError for it', () => {
    const manager = new RingManager(OPTIONS);
    manager.update('g', ['c1']);
    const change = manager.update('g', []);
    expect(change).toMatchObject({ removed: ['c1'], added: [], hosts: [], ring: null, version: 2 });
    expect(manager.tryRing('g')).toBeUndefined();
    expect(() => manager.ring('g')).toThrow(NoHostsError);
    expect(() => manager.lookup('nope', 'node')).toThrow(/no live hosts in group "nope"/);
    expect(manager.update('g', [])).toBeNull();
  });

  it('applies a full snapshot: new groups, changed groups, and groups that disappeared', () => {
    const manager = new RingManager(OPTIONS);
    manager.sync({ a: ['a1'], b: ['b1'] });
    const changes = recorder(manager);
    const result = manager.sync(new Map([['b', ['b1', 'b2']], ['c', ['c1']]]));
    expect(result.map((c) => [c.group, c.added, c.removed, c.version])).toEqual([
      ['a', [], ['a1'], 3],
      ['b', ['b2'], [], 4],
      ['c', ['c1'], [], 5],
    ]);
    expect(changes).toEqual(result);
    expect(manager.groups()).toEqual(['b', 'c']);
  });

  it('leaves every ring untouched when a snapshot holds a bad member list', () => {
    const manager = new RingManager(OPTIONS);
    manager.sync({ a: ['a1'], b: ['b1'] });
    const changes = recorder(manager);
    expect(() => manager.sync({ a: ['a1', 'a2'], b: ['b1', 'b1'] })).toThrow(DuplicateHostError);
    expect(changes).toEqual([]);
    expect(manager.ring('a').hosts).toEqual(['a1']);
    expect(manager.version).toBe(2);
  });

  it('stops telling a listener that unsubscribed, and tells all listeners even if one throws', () => {
    const manager = new RingManager(OPTIONS);
    const seen: number[] = [];
    const unsubscribe = manager.subscribe((c) => seen.push(c.version));
    manager.subscribe(() => {
      throw new Error('listener bug');
    });
    const later: number[] = [];
    manager.subscribe((c) => later.push(c.version));
    expect(() => manager.update('g', ['c1'])).toThrow('listener bug');
    expect(seen).toEqual([1]);
    expect(later).toEqual([1]);
    expect(manager.ring('g').hosts).toEqual(['c1']);
    unsubscribe();
    expect(() => manager.update('g', ['c1', 'c2'])).toThrow('listener bug');
    expect(seen).toEqual([1]);
    expect(later).toEqual([1, 2]);
  });

  it('rejects bad ring options when it is created', () => {
    expect(() => new RingManager({ mode: 'tooz', partitions: 0 })).toThrow(InvalidRingOptionError);
  });
});
