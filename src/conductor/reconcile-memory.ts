/**
 * What a conductor remembers about each node between reconcile passes, in one place: the
 * reconciler's planner reads it, its executor and the take-over update it, and nothing else keeps
 * per-node state of its own.
 *
 * - **current**: the fingerprint (see `fingerprint` in `reconcile-inputs.ts`) of each owned node
 *   whose boot state this process made current, so a pass over unchanged nodes touches no file;
 * - **failures**: owned nodes whose take-over failed, with an exponential back-off that holds while
 *   their inputs (fingerprint) are unchanged;
 * - **cached**: replica nodes as of their last pre-cache (stamp and image fields as stored);
 * - **orphans**: when a node directory with no node in the database was first seen, so it is kept
 *   for a grace period (a node being moved between groups shows up again).
 *
 * Memory is only ever a shortcut: a fresh process (empty memory) re-checks everything, which is
 * what the start pass does anyway.
 */

/** A node whose take-over failed: retried after `until` (ms since the epoch) while its fingerprint is `fp`. */
export interface TakeOverFailure {
  fp: string;
  /** Failures in a row with this fingerprint. */
  count: number;
  until: number;
}

/** Longest back-off between take-over tries of a node whose inputs do not change (ms). */
export const MAX_BACKOFF_MS = 60_000;

/** What the planner reads; the executor and the take-over write through `NodeMemory` itself. */
export interface NodeMemoryView {
  /** The fingerprint this process made current for an owned node, if any. */
  current(uuid: string): string | undefined;
  /** The node's last take-over failure, if its take-over is failing. */
  failure(uuid: string): Readonly<TakeOverFailure> | undefined;
  /** The node's stamp as of its last pre-cache here, if it was pre-cached. */
  cachedStamp(uuid: string): string | undefined;
  /** When a directory with no node in the database was first seen, if it was. */
  orphanSince(uuid: string): number | undefined;
  /** Every directory with an orphan mark. */
  orphans(): Iterable<string>;
}

/** The memory changes a pass's plan makes before anything is carried out. */
export interface MemoryUpdates {
  /** Nodes no longer current here: not owned, or owned but no longer booting from the network. */
  forgetCurrent: string[];
  /** Nodes whose take-over failures no longer matter: this conductor does not own them. */
  forgetFailures: string[];
  /** Nodes this conductor no longer keeps images for. */
  forgetCached: string[];
  /** Directories seen for the first time without a node in the database, and when. */
  orphansSeen: Array<{ uuid: string; since: number }>;
  /** Orphan marks to drop: their node is back in the list, or their directory is gone. */
  forgetOrphans: string[];
}

export class NodeMemory implements NodeMemoryView {
  readonly #current = new Map<string, string>();
  readonly #failures = new Map<string, TakeOverFailure>();
  readonly #cachedStamp = new Map<string, string>();
  readonly #cachedImages = new Map<string, string>();
  readonly #orphanSince = new Map<string, number>();

  current(uuid: string): string | undefined {
    return this.#current.get(uuid);
  }

  failure(uuid: string): Readonly<TakeOverFailure> | undefined {
    return this.#failures.get(uuid);
  }

  cachedStamp(uuid: string): string | undefined {
    return this.#cachedStamp.get(uuid);
  }

  /** The image fields (as stored) of a replica node as of its last pre-cache here. */
  cachedImages(uuid: string): string | undefined {
    return this.#cachedImages.get(uuid);
  }

  orphanSince(uuid: string): number | undefined {
    return this.#orphanSince.get(uuid);
  }

  orphans(): Iterable<string> {
    return this.#orphanSince.keys();
  }

  /** The node's boot state here is current as of fingerprint `fp`. */
  markCurrent(uuid: string, fp: string): void {
    this.#current.set(uuid, fp);
  }

  forgetCurrent(uuid: string): void {
    this.#current.delete(uuid);
  }

  /**
   * Records a failed take-over and its back-off (1 s, doubling per failure in a row with the same
   * fingerprint, at most `MAX_BACKOFF_MS`); a changed fingerprint starts the count again. The node
   * is not current any more. Returns the failures in a row, this one included.
   */
  recordFailure(uuid: string, fp: string, now = Date.now()): number {
    this.#current.delete(uuid);
    const before = this.#failures.get(uuid);
    const count = before && before.fp === fp ? before.count + 1 : 1;
    this.#failures.set(uuid, { fp, count, until: now + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (count - 1)) });
    return count;
  }

  /** The node's take-over worked (or no longer needs trying). */
  clearFailure(uuid: string): void {
    this.#failures.delete(uuid);
  }

  /** When the first backed-off node may be tried again (ms since the epoch), or undefined when none is. */
  nextRetryAt(): number | undefined {
    let first: number | undefined;
    for (const f of this.#failures.values()) if (first === undefined || f.until < first) first = f.until;
    return first;
  }

  /** A replica node's images are cached here as of `stamp` (and, when fetched, of image fields `images`). */
  markCached(uuid: string, stamp: string, images?: string): void {
    this.#cachedStamp.set(uuid, stamp);
    if (images !== undefined) this.#cachedImages.set(uuid, images);
  }

  forgetCached(uuid: string): void {
    this.#cachedStamp.delete(uuid);
    this.#cachedImages.delete(uuid);
  }

  /** The node's local boot state was removed: nothing here is current for it, and it is no orphan. */
  cleanedUp(uuid: string): void {
    this.#current.delete(uuid);
    this.#orphanSince.delete(uuid);
  }

  /** Applies a plan's memory changes. */
  apply(updates: MemoryUpdates): void {
    for (const uuid of updates.forgetCurrent) this.#current.delete(uuid);
    for (const uuid of updates.forgetFailures) this.#failures.delete(uuid);
    for (const uuid of updates.forgetCached) this.forgetCached(uuid);
    for (const { uuid, since } of updates.orphansSeen) this.#orphanSince.set(uuid, since);
    for (const uuid of updates.forgetOrphans) this.#orphanSince.delete(uuid);
  }
}
