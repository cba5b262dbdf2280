/**
 * Live rings: the one place a process learns which members of a cluster are live and which of them
 * owns what — conductors per conductor group (`conductor-rings.ts`), compute services per cell.
 * Every role asks this service; none keeps rings of its own.
 *
 * Liveness is the database's answer (heartbeat age by the database clock, as the membership source
 * reads it), never this process's clock. Membership is re-read when a member announces a change
 * (PostgreSQL NOTIFY, within milliseconds), when a live member's heartbeat is about to expire (by
 * the database clock), and every `pollIntervalMs` (the only way on SQLite). Rings are rebuilt only
 * when a group's member set changes, and every change reaches subscribers with the new version.
 *
 * Two ways to use it:
 * - a long-running member (a conductor, a compute service) starts it with a poll interval and
 *   reads the rings synchronously (`ring`, `owner`, `version`, `subscribe`);
 * - a process that only answers questions (the API) awaits `current()`, which re-reads when a
 *   notification came in since the last read (PostgreSQL) or another process committed anything
 *   since (SQLite's change token), when neither is known (the listener is down), or when the last
 *   read is older than `maxAgeMs` — which bounds how late a member that stopped heartbeating is
 *   seen dead, and on SQLite how late a membership write of this very process is seen (in `up`,
 *   where the API shares its conductor's connection); `fresh()` always re-reads.
 *
 * A member passes itself as `self`: it stays in its own view while it runs, even when its own
 * heartbeat write was slow — Ironic drops itself then and fails its own nodes.
 */
import { RingManager } from '../ring/index.js';
import type { HashRing, HashRingOptions, HostInput, RingChange, RingListener } from '../ring/index.js';
import type { Logger } from '../common/logger.js';
import { SerialWork } from '../common/serial-work.js';
import type { Store } from '../db/connect.js';
import type { Listener } from '../db/notifications.js';

/** A member as the rings see it. */
export interface LiveMember {
  /** Its name on the ring. */
  readonly name: string;
  /** The ring it belongs to (conductor group, cell). */
  readonly group: string;
  readonly weight: number;
  /** Live by the database clock. */
  readonly alive: boolean;
  /** Its last heartbeat (database clock); null when it never sent one. */
  readonly heartbeatAt: Date | null;
}

/** The member this process is, kept in its own ring while it runs. */
export interface SelfMember {
  name: string;
  group: string;
  weight: number;
}

/** Where members and their liveness come from. */
export interface MembershipSource<M extends LiveMember> {
  /** The NOTIFY channel on which members announce that they joined or left. */
  readonly channel: string;
  /** Seconds without a heartbeat, by the database clock, after which a member is dead. */
  readonly timeoutSeconds: number;
  /** Every member row with its liveness by the database clock. */
  read(): Promise<M[]>;
  /** The member that stands for `self`: its own row (`row`, maybe stale) made live, or a stand-in when it has none. */
  asSelf(self: SelfMember, row: M | undefined): M;
}

export interface LiveRingsOptions {
  /** Longest time between two reads of membership once started (ms); 0: only when asked. */
  pollIntervalMs?: number;
  /** `current()` re-reads when the last read is older than this (ms); by default only when notified (polling) or always (on demand). */
  maxAgeMs?: number;
  ring?: HashRingOptions;
  logger: Logger;
}

export class LiveRings<M extends LiveMember = LiveMember> {
  private readonly manager: RingManager;
  private rows: readonly M[] = [];
  private live: readonly M[] = [];
  private self: SelfMember | null = null;
  private expiryTimer: NodeJS.Timeout | undefined;
  private listener: Listener | null = null;
  private starting: Promise<void> | null = null;
  /** Membership reads: one at a time, a burst of asks coalesced, and every `pollIntervalMs` once started. */
  private readonly reads: SerialWork;
  private stopped = false;
  private lastError: string | null = null;
  /** Whether notifications are known to arrive: only then can a read be reused without a period. */
  private listening = false;
  /** +1 per notification: a read begun before one is out of date. */
  private generation = 0;
  /**
   * The generation, the store's change token (SQLite) and the time (performance.now) at which the
   * last successful read began; null: none yet.
   */
  private lastRead: { generation: number; token: string | null; at: number } | null = null;
  private readonly pollIntervalMs: number;
  private readonly maxAgeMs: number;

  constructor(
    private readonly store: Store,
    private readonly source: MembershipSource<M>,
    private readonly options: LiveRingsOptions,
  ) {
    this.manager = new RingManager(options.ring ?? {});
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.maxAgeMs = options.maxAgeMs ?? (this.pollIntervalMs > 0 ? Infinity : 0);
    this.reads = new SerialWork({
      name: 'membership read',
      run: () => this.readOnce(),
      logger: options.logger,
      intervalMs: this.pollIntervalMs,
      unref: true,
    });
  }

  /** The ring version this process is on: +1 per ring change it has seen, in any group. */
  get version(): number {
    return this.manager.version;
  }

  /** Live members as last read (self included while it runs), in the source's order. */
  members(): readonly M[] {
    return this.live;
  }

  /** Every member row as last read, live or not (to name a member by its row id). */
  rowsRead(): readonly M[] {
    return this.rows;
  }

  /** Groups that have a ring (at least one live member), in name order. */
  groups(): string[] {
    return this.manager.groups();
  }

  /** The ring of `group`; undefined when the group has no live member. */
  ring(group: string): HashRing | undefined {
    return this.manager.tryRing(group);
  }

  /** The live member that owns `key` in `group`; null when the group has no live member. */
  owner(group: string, key: string): string | null {
    return this.manager.tryRing(group)?.owner(key) ?? null;
  }

  /** Up to `count` live members for `key` in `group`, owner first, in ring order. */
  owners(group: string, key: string, count: number): string[] {
    return this.manager.tryRing(group)?.lookup(key, { replicas: count }) ?? [];
  }

  /**
   * The owner of each item, by its key: one ring lookup each, items of groups without a live member
   * left out. Also how many items each live member owns (every live member listed, zero included).
   */
  ownersMap<T>(items: Iterable<T>, place: (item: T) => { group: string; key: string }): { owners: Map<string, string>; counts: Map<string, number> } {
    const owners = new Map<string, string>();
    const counts = new Map<string, number>();
    for (const group of this.manager.groups()) for (const host of this.manager.tryRing(group)!.hosts) counts.set(host, 0);
    for (const item of items) {
      const { group, key } = place(item);
      const owner = this.owner(group, key);
      if (owner === null) continue;
      owners.set(key, owner);
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    return { owners, counts };
  }

  /** Keeps `self` in its group's ring regardless of its heartbeat's age; null removes it (at the next read). */
  setSelf(self: SelfMember | null): void {
    this.self = self;
  }

  subscribe(listener: RingListener): () => void {
    return this.manager.subscribe(listener);
  }

  /** Reads membership, then follows notifications and (when set) the poll interval. Idempotent. */
  start(): Promise<void> {
    this.starting ??= this.doStart();
    return this.starting;
  }

  private async doStart(): Promise<void> {
    await this.refresh();
    if (this.stopped) return;
    await this.listen();
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

  /** The rings, re-read first unless the last read is known to be current (see the header). */
  async current(): Promise<this> {
    await this.start();
    const last = this.lastRead;
    // Without notifications, another process's commit since the last read (SQLite's change token) is the signal.
    const token = this.listening ? null : this.changeToken();
    const watched = this.listening || token !== null;
    const stale = !watched || last === null || last.generation !== this.generation || last.token !== token || performance.now() - last.at >= this.maxAgeMs;
    if (stale) await this.refresh();
    return this;
  }

  /** The rings after a read begun now: for decisions that must not act on a membership a second old. */
  async fresh(): Promise<this> {
    await this.start();
    await this.refresh();
    return this;
  }

  private async listen(): Promise<void> {
    const notified = () => {
      this.generation += 1;
      void this.refresh();
    };
    // Until the first LISTEN has answered, notifications are not known to arrive.
    let healthy = true;
    try {
      this.listener = await this.store.listen(this.source.channel, {
        onMessage: notified,
        onReconnect: () => {
          healthy = true;
          this.listening = !this.stopped;
          notified();
        },
        onError: (err) => {
          healthy = false;
          this.listening = false;
          this.generation += 1;
          this.options.logger.warn({ err: err.message }, 'membership notifications interrupted; polling until they resume');
        },
      });
    } catch (err) {
      this.options.logger.warn({ err: (err as Error).message }, 'cannot listen for membership notifications; polling');
      return;
    }
    this.listening = this.listener !== null && healthy && !this.stopped;
    if (this.stopped) {
      await this.listener?.close();
      this.listener = null;
    }
  }

  private changeToken(): string | null {
    try {
      return this.store.changeToken?.() ?? null;
    } catch {
      return null;
    }
  }

  private async readOnce(): Promise<void> {
    const began = { generation: this.generation, token: this.listening ? null : this.changeToken(), at: performance.now() };
    let rows: M[];
    try {
      rows = await this.source.read();
      if (this.lastError) this.options.logger.info('membership readable again');
      this.lastError = null;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.lastError) this.options.logger.warn({ err: message }, 'cannot read membership; keeping the last known rings');
      this.lastError = message;
      return;
    }
    this.lastRead = began;
    this.rows = rows;
    const self = this.self;
    const isSelf = (r: M) => self !== null && r.name === self.name;
    // Self counts as live while it runs, whatever the age of its last heartbeat write.
    const live = rows.filter((r) => r.alive || isSelf(r)).map((r) => (isSelf(r) ? this.source.asSelf(self!, r) : r));
    if (self !== null && !live.some(isSelf)) live.push(this.source.asSelf(self, undefined));
    this.live = live;
    if (this.pollIntervalMs > 0) await this.watchExpiry(rows);
    const byGroup = new Map<string, HostInput[]>();
    // Groups that lost every member must reach the ring manager as empty, to be reported as removed.
    for (const group of this.manager.groups()) byGroup.set(group, []);
    const seen = new Set<string>();
    for (const m of live) {
      // Two rows with one ring name (a compute host registered twice in different case) count once.
      if (seen.has(`${m.group}\0${m.name}`)) continue;
      seen.add(`${m.group}\0${m.name}`);
      const members = byGroup.get(m.group) ?? [];
      members.push({ name: m.name, weight: m.weight });
      byGroup.set(m.group, members);
    }
    const changes: RingChange[] = this.manager.sync(byGroup);
    for (const change of changes) {
      this.options.logger.info(
        { group: change.group, version: change.version, added: change.added, removed: change.removed, hosts: change.hosts },
        'ring changed',
      );
    }
  }

  /**
   * Schedules a read for the moment the next live member's heartbeat expires (by the database
   * clock), so a crash is noticed at the heartbeat timeout, not up to a poll interval later.
   */
  private async watchExpiry(rows: readonly M[]): Promise<void> {
    let now: number;
    try {
      now = (await this.store.now()).getTime();
    } catch {
      return;
    }
    let soonest = Infinity;
    for (const r of rows) {
      if (!r.alive || r.heartbeatAt === null || r.name === this.self?.name) continue;
      soonest = Math.min(soonest, r.heartbeatAt.getTime() + this.source.timeoutSeconds * 1000 - now);
    }
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    if (soonest >= this.pollIntervalMs || this.stopped) return;
    this.expiryTimer = setTimeout(() => void this.refresh(), Math.max(0, soonest) + 20);
    this.expiryTimer.unref();
  }

  /** Stops reading and listening; waits for a read in flight. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.listening = false;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    const reading = this.reads.stop();
    await this.starting?.catch(() => undefined);
    await this.listener?.close();
    this.listener = null;
    await reading;
  }
}
