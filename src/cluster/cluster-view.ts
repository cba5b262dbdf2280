/**
 * A process's view of the live conductors and the rings built from them.
 *
 * The view re-reads membership when told something changed (PostgreSQL NOTIFY, within
 * milliseconds) and at least every `pollIntervalMs` (the only way on SQLite, and the way expired
 * heartbeats are noticed on both). Rings are rebuilt only when the member set changes, and every
 * change reaches subscribers with the new ring version.
 *
 * A conductor passes itself as `self`: it stays in its own view while it runs, even when its own
 * heartbeat write was slow — Ironic drops itself then and fails its own nodes.
 */
import { RingManager } from '../ring/index.js';
import type { HashRingOptions, HostInput, RingChange, RingListener } from '../ring/index.js';
import type { Logger } from '../common/logger.js';
import { SerialWork } from '../common/serial-work.js';
import type { Store } from '../db/connect.js';
import type { Listener } from '../db/notifications.js';
import { MEMBERSHIP_CHANNEL, listConductors, membersByGroup } from './membership.js';
import type { ConductorState } from './membership.js';

export interface SelfMember {
  hostname: string;
  group: string;
  weight: number;
}

export interface ClusterViewOptions {
  /** Seconds without a heartbeat, by the database clock, after which a conductor is dead. */
  heartbeatTimeout: number;
  /** Longest time between two reads of membership (ms). */
  pollIntervalMs?: number;
  ring?: HashRingOptions;
  logger: Logger;
}

export class ClusterView {
  readonly rings: RingManager;
  private live: ConductorState[] = [];
  private self: SelfMember | null = null;
  private expiryTimer: NodeJS.Timeout | undefined;
  private listener: Listener | null = null;
  /** Membership reads: one at a time, a burst of asks coalesced, and every `pollIntervalMs` once started. */
  private readonly reads: SerialWork;
  private stopped = false;
  private lastError: string | null = null;

  constructor(
    private readonly store: Store,
    private readonly options: ClusterViewOptions,
  ) {
    this.rings = new RingManager(options.ring ?? {});
    this.reads = new SerialWork({
      name: 'membership read',
      run: () => this.readOnce(),
      logger: options.logger,
      intervalMs: options.pollIntervalMs ?? 1000,
      unref: true,
    });
  }

  /** The ring version this process is on: +1 per membership change it has seen. */
  get version(): number {
    return this.rings.version;
  }

  /** Live conductors as last read (self included while it runs), by hostname. */
  members(): readonly ConductorState[] {
    return this.live;
  }

  /** Keeps `self` in its own group's ring regardless of its heartbeat's age; null removes it. */
  setSelf(self: SelfMember | null): void {
    this.self = self;
  }

  subscribe(listener: RingListener): () => void {
    return this.rings.subscribe(listener);
  }

  async start(): Promise<void> {
    await this.refresh();
    this.listener = await this.store.listen(MEMBERSHIP_CHANNEL, {
      onMessage: () => void this.refresh(),
      onReconnect: () => void this.refresh(),
      onError: (err) => this.options.logger.warn({ err: err.message }, 'membership notifications interrupted; polling until they resume'),
    });
    this.reads.start();
  }

  /**
   * Re-reads membership and updates the rings. Calls made while a read is running are coalesced
   * into one more read after it, so a burst of notifications costs two queries, not a hundred.
   * Never rejects: an unreadable membership keeps the last known rings.
   */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return this.reads.request();
  }

  private async readOnce(): Promise<void> {
    let rows: ConductorState[];
    try {
      rows = await listConductors(this.store, this.options.heartbeatTimeout);
      if (this.lastError) this.options.logger.info('membership readable again');
      this.lastError = null;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.lastError) this.options.logger.warn({ err: message }, 'cannot read membership; keeping the last known rings');
      this.lastError = message;
      return;
    }
    const self = this.self;
    // Self counts as live while it runs, whatever the age of its last heartbeat write.
    const live = rows
      .filter((r) => r.alive || (self !== null && r.hostname === self.hostname))
      .map((r) => (self !== null && r.hostname === self.hostname ? { ...r, alive: true, weight: self.weight, conductorGroup: self.group } : r));
    if (self !== null && !live.some((c) => c.hostname === self.hostname)) {
      live.push({ id: -1, hostname: self.hostname, conductorGroup: self.group, online: true, alive: true, drivers: [], weight: self.weight, rpcUrl: null, createdAt: new Date(0), updatedAt: new Date(0) });
    }
    this.live = live;
    await this.watchExpiry(rows);
    const byGroup = new Map<string, HostInput[]>();
    // Groups that lost every member must reach the ring manager as empty, to be reported as removed.
    for (const groupName of this.rings.groups()) byGroup.set(groupName, []);
    for (const [groupName, members] of membersByGroup(live)) byGroup.set(groupName, members);
    const changes: RingChange[] = this.rings.sync(byGroup);
    for (const change of changes) {
      this.options.logger.info(
        { group: change.group, version: change.version, added: change.added, removed: change.removed, hosts: change.hosts },
        'ring changed',
      );
    }
  }

  /**
   * Schedules a read for the moment the next live conductor's heartbeat expires (by the database
   * clock), so a crash is noticed at heartbeat_timeout, not up to a poll interval later.
   */
  private async watchExpiry(rows: readonly ConductorState[]): Promise<void> {
    const interval = this.options.pollIntervalMs ?? 1000;
    let now: number;
    try {
      now = (await this.store.now()).getTime();
    } catch {
      return;
    }
    let soonest = Infinity;
    for (const r of rows) {
      if (!r.alive || r.hostname === this.self?.hostname) continue;
      soonest = Math.min(soonest, r.updatedAt.getTime() + this.options.heartbeatTimeout * 1000 - now);
    }
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    if (soonest >= interval || this.stopped) return;
    this.expiryTimer = setTimeout(() => void this.refresh(), Math.max(0, soonest) + 20);
    this.expiryTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    const reading = this.reads.stop();
    await this.listener?.close();
    this.listener = null;
    await reading;
  }
}
