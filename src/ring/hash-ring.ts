/**
 * `HashRing`: who owns a key (a node UUID) among a set of weighted hosts (conductors, compute
 * services), and who holds its replicas. Pure and synchronous: no I/O, no clock, no randomness —
 * the answer depends only on the set of (name, weight) pairs, the options and the key, so every
 * process that sees the same live members computes the same owner (DESIGN §1, invariant 1).
 */
import { BALANCED_DEFAULT_POINTS, BALANCED_MAX_HOSTS, BalancedPlacement, TABLE_BITS } from './balanced.js';
import {
  DuplicateHostError,
  InvalidHostError,
  InvalidReplicasError,
  InvalidRingOptionError,
  InvalidWeightError,
  NoHostsError,
  UnknownHostError,
} from './errors.js';
import type { KeyPlacement, WeightedHost } from './key-placement.js';
import { TOOZ_DEFAULT_PARTITIONS, ToozPlacement } from './tooz.js';

/** Placement algorithms: `balanced` (ironring's default) and `tooz` (what OpenStack uses). */
export const RING_MODES = ['balanced', 'tooz'] as const;
/** A placement algorithm; see `RING_MODES`. */
export type RingMode = (typeof RING_MODES)[number];

/** A host as callers give it: a name (weight 1) or a name with an integer weight ≥ 1. */
export type HostInput = string | { readonly name: string; readonly weight?: number };

/** A host as the ring holds it. */
export interface RingHost {
  readonly name: string;
  readonly weight: number;
}

/** Options of `new HashRing(hosts, options)`. */
export interface HashRingOptions {
  /** Placement algorithm; `balanced` unless given. */
  readonly mode?: RingMode;
  /**
   * Points per unit of weight. In `tooz` mode: tooz's `partitions` (default 32, Ironic's
   * `2 ** hash_partition_exponent`), any integer ≥ 1. In `balanced` mode: a power of two from 1 to
   * 2^22 (default 16384); fewer points build faster and balance worse (docs/ring.md).
   */
  readonly partitions?: number;
}

/** Options of `ring.lookup(key, options)`. */
export interface LookupOptions {
  /** How many distinct hosts to return, owner first; an integer ≥ 1, default 1. */
  readonly replicas?: number;
  /** Hosts to skip, as if they were not in the ring (names not in the ring are ignored). */
  readonly ignore?: readonly string[];
}

/** The default `partitions` of each mode. */
export const DEFAULT_PARTITIONS: Readonly<Record<RingMode, number>> = {
  balanced: BALANCED_DEFAULT_POINTS,
  tooz: TOOZ_DEFAULT_PARTITIONS,
};

const MAX_BALANCED_PARTITIONS = 2 ** TABLE_BITS;

/**
 * A consistent hash ring over weighted hosts.
 *
 * ```ts
 * const ring = new HashRing(['c1', 'c2', { name: 'c3', weight: 2 }]);
 * ring.lookup(node.uuid, { replicas: 2 }); // ['c3', 'c1']: owner first, then a replica
 * ```
 *
 * @throws NoHostsError when `hosts` is empty.
 * @throws DuplicateHostError, InvalidHostError, InvalidWeightError, InvalidRingOptionError naming
 *   the bad value.
 */
export class HashRing {
  /** The placement algorithm this ring uses. */
  readonly mode: RingMode;
  /** Points per unit of weight (see `HashRingOptions.partitions`). */
  readonly partitions: number;
  private readonly weights = new Map<string, number>();
  private placement: KeyPlacement;

  constructor(hosts: readonly HostInput[], options: HashRingOptions = {}) {
    const resolved = resolveRingOptions(options);
    this.mode = resolved.mode;
    this.partitions = resolved.partitions;
    for (const host of normalizeHosts(hosts)) this.weights.set(host.name, host.weight);
    this.placement = this.build();
  }

  /** Host names in name order (UTF-16 code unit order, like `Array.prototype.sort`). */
  get hosts(): string[] {
    return [...this.placement.names];
  }

  /** Hosts with their weights, in name order. */
  get members(): RingHost[] {
    return this.placement.names.map((name) => ({ name, weight: this.weights.get(name)! }));
  }

  /** Number of hosts. */
  get size(): number {
    return this.weights.size;
  }

  /** Whether `name` is one of the ring's hosts. */
  has(name: string): boolean {
    return this.weights.has(name);
  }

  /**
   * The hosts for `key`, in order: the owner first, then `replicas - 1` more distinct hosts (as many
   * as the ring has after `ignore`; an empty list when every host is ignored).
   *
   * @throws InvalidReplicasError when `replicas` is not an integer ≥ 1.
   */
  lookup(key: string, options?: LookupOptions): string[] {
    const replicas = options?.replicas ?? 1;
    // The common call — one owner, nothing ignored — takes the shortest path.
    if (replicas === 1 && (options?.ignore === undefined || options.ignore.length === 0)) return [this.placement.owner(key)];
    if (!Number.isInteger(replicas) || replicas < 1) throw new InvalidReplicasError(replicas);
    const ignore = options?.ignore ?? [];
    if (ignore.length === 0) {
      if (replicas === 1) return [this.placement.owner(key)];
      return this.placement.walk(key, Math.min(replicas, this.size), null);
    }
    const names = this.placement.names;
    const mask = new Uint8Array(names.length);
    let ignored = 0;
    for (const name of ignore) {
      const index = indexOf(names, name);
      if (index >= 0 && mask[index] === 0) {
        mask[index] = 1;
        ignored++;
      }
    }
    const count = Math.min(replicas, this.size - ignored);
    return count === 0 ? [] : this.placement.walk(key, count, mask);
  }

  /** The owner of `key`: `lookup(key)[0]` without the array. */
  owner(key: string): string {
    return this.placement.owner(key);
  }

  /**
   * Adds a host and rebuilds the placement.
   *
   * @throws DuplicateHostError when a host of that name is already in the ring.
   */
  add(host: HostInput): void {
    const normalized = normalizeHost(host);
    if (this.weights.has(normalized.name)) throw new DuplicateHostError(normalized.name);
    this.weights.set(normalized.name, normalized.weight);
    try {
      this.placement = this.build();
    } catch (err) {
      this.weights.delete(normalized.name);
      throw err;
    }
  }

  /**
   * Removes a host and rebuilds the placement.
   *
   * @throws UnknownHostError when the ring has no such host.
   * @throws NoHostsError when it is the last host (a ring always has at least one).
   */
  remove(name: string): void {
    const weight = this.weights.get(name);
    if (weight === undefined) throw new UnknownHostError(name);
    if (this.weights.size === 1) throw new NoHostsError(`cannot remove ${JSON.stringify(name)}: it is the last host`);
    this.weights.delete(name);
    this.placement = this.build();
  }

  /**
   * The exact fraction of the key space each host owns, computed from the ring's points (tooz) or
   * table (balanced), not by sampling keys. The values sum to 1.
   */
  shares(): Map<string, number> {
    const shares = this.placement.shares();
    return new Map(this.placement.names.map((name, i) => [name, shares[i]!]));
  }

  private build(): KeyPlacement {
    if (this.weights.size === 0) throw new NoHostsError();
    const hosts: WeightedHost[] = [...this.weights].map(([name, weight]) => ({ name, weight })).sort(byName);
    if (this.mode === 'tooz') return new ToozPlacement(hosts, this.partitions);
    if (hosts.length > BALANCED_MAX_HOSTS) {
      throw new InvalidRingOptionError('host count', hosts.length, `at most ${BALANCED_MAX_HOSTS} in balanced mode`);
    }
    return new BalancedPlacement(hosts, this.partitions);
  }
}

/**
 * Validates ring options and fills in the defaults.
 *
 * @throws InvalidRingOptionError naming the bad value.
 */
export function resolveRingOptions(options: HashRingOptions = {}): Required<HashRingOptions> {
  const mode = validateMode(options.mode);
  return { mode, partitions: validatePartitions(mode, options.partitions) };
}

/**
 * Validates a host list and returns it as `{ name, weight }` in name order — the canonical form a
 * ring's placement depends on.
 *
 * @throws DuplicateHostError, InvalidHostError, InvalidWeightError naming the bad value.
 */
export function normalizeHosts(hosts: readonly HostInput[]): RingHost[] {
  if (!Array.isArray(hosts)) throw new InvalidHostError(hosts);
  const seen = new Set<string>();
  const normalized: RingHost[] = [];
  for (const input of hosts) {
    const host = normalizeHost(input);
    if (seen.has(host.name)) throw new DuplicateHostError(host.name);
    seen.add(host.name);
    normalized.push(host);
  }
  return normalized.sort(byName);
}

function byName(a: RingHost, b: RingHost): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function validateMode(mode: unknown): RingMode {
  if (mode === undefined) return 'balanced';
  if (typeof mode === 'string' && (RING_MODES as readonly string[]).includes(mode)) return mode as RingMode;
  throw new InvalidRingOptionError('mode', mode, `one of ${RING_MODES.join(', ')}`);
}

function validatePartitions(mode: RingMode, partitions: unknown): number {
  if (partitions === undefined) return DEFAULT_PARTITIONS[mode];
  if (mode === 'tooz') {
    if (Number.isInteger(partitions) && (partitions as number) >= 1) return partitions as number;
    throw new InvalidRingOptionError('partitions', partitions, 'an integer ≥ 1');
  }
  // Balanced strata must tile the table exactly (see balanced.ts), hence a power of two.
  if (
    Number.isInteger(partitions) &&
    (partitions as number) >= 1 &&
    (partitions as number) <= MAX_BALANCED_PARTITIONS &&
    Number.isInteger(Math.log2(partitions as number))
  ) {
    return partitions as number;
  }
  throw new InvalidRingOptionError('partitions', partitions, `a power of two from 1 to ${MAX_BALANCED_PARTITIONS}`);
}

function normalizeHost(input: unknown): RingHost {
  if (typeof input === 'string') {
    if (input.length === 0) throw new InvalidHostError(input);
    return { name: input, weight: 1 };
  }
  if (typeof input !== 'object' || input === null) throw new InvalidHostError(input);
  const { name, weight } = input as { name?: unknown; weight?: unknown };
  if (typeof name !== 'string' || name.length === 0) throw new InvalidHostError(input);
  if (weight === undefined) return { name, weight: 1 };
  // Weights multiply point counts, so they must be whole; the cap keeps a build bounded.
  if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 1 || weight > MAX_WEIGHT) {
    throw new InvalidWeightError(name, weight, `an integer from 1 to ${MAX_WEIGHT}`);
  }
  return { name, weight };
}

/** Largest accepted weight: beyond it a ring's point count (and build time) gets unreasonable. */
const MAX_WEIGHT = 1000;

/** Binary search in the name-ordered host list. */
function indexOf(names: readonly string[], name: string): number {
  let lo = 0;
  let hi = names.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const candidate = names[mid]!;
    if (candidate === name) return mid;
    if (candidate < name) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
