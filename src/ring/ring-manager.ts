/**
 * `RingManager`: one `HashRing` per group (conductor group, compute cell), built from the group's
 * live members and rebuilt only when the member set changes, with a change event each time so
 * that derived state (boot files, host mappings) can follow the ring at once (DESIGN §1, §4).
 *
 * It takes plain member lists; where they come from (membership in the database) is the caller's
 * business, which keeps the manager pure and synchronous like the ring.
 */
import { NoHostsError } from './errors.js';
import { HashRing, normalizeHosts, resolveRingOptions } from './hash-ring.js';
import type { HashRingOptions, HostInput, LookupOptions, RingHost } from './hash-ring.js';

/** What changed in one group's ring. */
export interface RingChange {
  /** The group whose ring changed. */
  readonly group: string;
  /**
   * The manager's version after this change: starts at 0, +1 per change in any group, so a
   * subscriber can tell whether it has seen a later state.
   */
  readonly version: number;
  /** Hosts that joined the group, in name order. */
  readonly added: readonly string[];
  /** Hosts that left the group, in name order. */
  readonly removed: readonly string[];
  /** Hosts still present whose weight changed, in name order. */
  readonly reweighted: readonly string[];
  /** The group's hosts after the change, in name order (empty when the group has none left). */
  readonly hosts: readonly string[];
  /** The group's new ring, or null when the group has no hosts left. */
  readonly ring: HashRing | null;
}

/** Receives ring changes; called synchronously by `update`/`sync`. */
export type RingListener = (change: RingChange) => void;

/** Builds and caches one ring per group and tells subscribers what changed. */
export class RingManager {
  private readonly rings = new Map<string, HashRing>();
  private readonly listeners = new Set<RingListener>();
  private currentVersion = 0;

  private readonly options: Required<HashRingOptions>;

  /**
   * @param options ring options (mode, partitions) used for every group's ring.
   * @throws InvalidRingOptionError now rather than at the first membership change.
   */
  constructor(options: HashRingOptions = {}) {
    this.options = resolveRingOptions(options);
  }

  /** Monotonically increasing: the number of changes so far. */
  get version(): number {
    return this.currentVersion;
  }

  /** Groups that currently have a ring, in name order. */
  groups(): string[] {
    return [...this.rings.keys()].sort();
  }

  /** The ring of `group`, or undefined when the group has no live members. */
  tryRing(group: string): HashRing | undefined {
    return this.rings.get(group);
  }

  /**
   * The ring of `group`.
   *
   * @throws NoHostsError when the group has no live members (the API answers 503).
   */
  ring(group: string): HashRing {
    const ring = this.rings.get(group);
    if (ring === undefined) throw new NoHostsError(`no live hosts in group ${JSON.stringify(group)}`);
    return ring;
  }

  /** `ring(group).lookup(key, options)`. */
  lookup(group: string, key: string, options?: LookupOptions): string[] {
    return this.ring(group).lookup(key, options);
  }

  /**
   * Subscribes to changes; returns the function that unsubscribes. A listener that throws does not
   * keep the others from being told; the first error is rethrown once all have been called.
   */
  subscribe(listener: RingListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Sets the live members of one group. Rebuilds its ring and emits a change only when the set of
   * (name, weight) pairs differs from the current one; returns that change, or null.
   *
   * @throws the ring's errors (duplicate host, bad weight) naming the value; nothing changes then.
   */
  update(group: string, members: readonly HostInput[]): RingChange | null {
    const change = this.apply(group, members);
    if (change !== null) this.emit([change]);
    return change;
  }

  /**
   * Sets the live members of every group at once: groups missing from `membersByGroup` lose their
   * ring. Returns the changes (in group name order), emitted after all rings are rebuilt, so that
   * listeners never see a half-applied snapshot.
   */
  sync(membersByGroup: ReadonlyMap<string, readonly HostInput[]> | Readonly<Record<string, readonly HostInput[]>>): RingChange[] {
    const snapshot = membersByGroup instanceof Map ? new Map(membersByGroup) : new Map(Object.entries(membersByGroup));
    const groups = [...new Set([...this.rings.keys(), ...snapshot.keys()])].sort();
    // Build every new ring first: a bad member list then leaves the manager untouched.
    const staged = groups.map((group) => ({ group, next: this.stage(group, snapshot.get(group) ?? []) }));
    const changes: RingChange[] = [];
    for (const { group, next } of staged) {
      const change = this.commit(group, next);
      if (change !== null) changes.push(change);
    }
    if (changes.length > 0) this.emit(changes);
    return changes;
  }

  private apply(group: string, members: readonly HostInput[]): RingChange | null {
    return this.commit(group, this.stage(group, members));
  }

  /** The ring the group should have (null: none), or `undefined` when nothing changes. */
  private stage(group: string, members: readonly HostInput[]): HashRing | null | undefined {
    const current = this.rings.get(group);
    const hosts = normalizeHosts(members);
    if (hosts.length === 0) return current === undefined ? undefined : null;
    // Comparing the canonical member lists first spares a rebuild when nothing changed.
    if (current !== undefined && sameMembers(current.members, hosts)) return undefined;
    return new HashRing(hosts, this.options);
  }

  private commit(group: string, next: HashRing | null | undefined): RingChange | null {
    if (next === undefined) return null;
    const before = new Map((this.rings.get(group)?.members ?? []).map((h) => [h.name, h.weight]));
    const after = new Map((next?.members ?? []).map((h) => [h.name, h.weight]));
    if (next === null) this.rings.delete(group);
    else this.rings.set(group, next);
    this.currentVersion += 1;
    return {
      group,
      version: this.currentVersion,
      added: [...after.keys()].filter((name) => !before.has(name)),
      removed: [...before.keys()].filter((name) => !after.has(name)),
      reweighted: [...after].filter(([name, w]) => before.has(name) && before.get(name) !== w).map(([name]) => name),
      hosts: [...after.keys()],
      ring: next,
    };
  }

  private emit(changes: readonly RingChange[]): void {
    let failure: { error: unknown } | undefined;
    for (const change of changes) {
      for (const listener of [...this.listeners]) {
        try {
          listener(change);
        } catch (error) {
          failure ??= { error };
        }
      }
    }
    if (failure !== undefined) throw failure.error;
  }
}

function sameMembers(a: readonly RingHost[], b: readonly RingHost[]): boolean {
  return a.length === b.length && a.every((h, i) => h.name === b[i]!.name && h.weight === b[i]!.weight);
}
