/**
 * The key placement a ring algorithm (balanced or tooz) builds for `HashRing`: the host list it was
 * built from, lookups of keys, and the exact share of the key space each host owns.
 */

/** A host as a placement sees it: validated name and integer weight ≥ 1. */
export interface WeightedHost {
  readonly name: string;
  readonly weight: number;
}

/**
 * A built, immutable placement. Hosts are held in name order (compared by UTF-16 code units, like
 * `Array.prototype.sort`), so the same set of hosts gives the same placement whatever order it was
 * listed in.
 */
export interface KeyPlacement {
  /** Host names in name order; host indices below refer to this list. */
  readonly names: readonly string[];
  /** The owner of `key` (first entry of `walk`). */
  owner(key: string): string;
  /**
   * Up to `count` distinct hosts for `key` in preference order, skipping hosts whose index is set
   * in `ignored`. `count` is already capped at the number of hosts not ignored.
   */
  walk(key: string, count: number, ignored: Uint8Array | null): string[];
  /** The exact fraction of the key space each host owns, by host index; sums to 1. */
  shares(): Float64Array;
}
