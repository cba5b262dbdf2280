/**
 * Owners and replicas of nodes as the API shows them (`conductor`, `conductor_replicas`,
 * `conductor_affinity` names), from the live conductors — read once and shared by the requests of
 * the next second instead of once per request.
 *
 * On PostgreSQL every `GET /v1/nodes/{id}` otherwise costs a second round trip (the conductors)
 * beside the node itself: about a third of the database's and the API's work per request. The
 * snapshot is dropped at once when a conductor joins or leaves (the membership NOTIFY the
 * conductors send), and at the latest after `maxAgeMs`, which is far below any heartbeat timeout,
 * so a dead conductor leaves the view at most that much later than it leaves the ring. Without
 * notifications (SQLite, or while the listening connection is down) nothing is kept: each request
 * reads the conductors, which on SQLite costs microseconds.
 *
 * Only for showing. Routing a node operation to its conductor reads the conductors afresh.
 */
import { ownerLookup } from '../cluster/placement.js';
import type { PlacementOptions } from '../cluster/placement.js';
import { MEMBERSHIP_CHANNEL } from '../cluster/membership.js';
import type { Store } from '../db/connect.js';
import type { Listener } from '../db/notifications.js';

export type OwnerLookup = Awaited<ReturnType<typeof ownerLookup>>;

export class LiveOwners {
  private snapshot: { at: number; generation: number; lookup: Promise<OwnerLookup> } | null = null;
  /** +1 per membership notification: a read started before one is not kept. */
  private generation = 0;
  /** Whether notifications arrive: only then is a snapshot kept. */
  private listening = false;
  private listener: Promise<Listener | null> | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly options: Pick<PlacementOptions, 'heartbeatTimeout' | 'ring'> & { replicas?: number },
    private readonly maxAgeMs = 1000,
  ) {}

  /** The current owners; a snapshot at most `maxAgeMs` old and newer than the last membership change. */
  async get(): Promise<OwnerLookup> {
    if (this.store.engine !== 'postgres' || this.maxAgeMs <= 0) return ownerLookup(this.store, this.options);
    this.listener ??= this.listen();
    await this.listener;
    const now = performance.now();
    const s = this.snapshot;
    if (this.listening && s !== null && s.generation === this.generation && now - s.at < this.maxAgeMs) return s.lookup;
    const generation = this.generation;
    const lookup = ownerLookup(this.store, this.options);
    this.snapshot = { at: now, generation, lookup };
    lookup.catch(() => {
      if (this.snapshot?.lookup === lookup) this.snapshot = null;
    });
    return lookup;
  }

  private async listen(): Promise<Listener | null> {
    const invalidate = () => {
      this.generation += 1;
      this.snapshot = null;
    };
    // Until the first LISTEN has answered, notifications are not known to arrive.
    let healthy = true;
    try {
      const listener = await this.store.listen(MEMBERSHIP_CHANNEL, {
        onMessage: invalidate,
        onReconnect: () => {
          invalidate();
          healthy = true;
          this.listening = !this.closed;
        },
        onError: () => {
          invalidate();
          healthy = false;
          this.listening = false;
        },
      });
      this.listening = listener !== null && healthy && !this.closed;
      if (this.closed) await listener?.close();
      return listener;
    } catch {
      return null;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    const listener = await this.listener;
    this.listener = null;
    await listener?.close();
  }
}
