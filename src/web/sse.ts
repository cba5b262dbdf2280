/**
 * Server-Sent Events for the dashboard: `GET /ui/events` streams events named for what changed, and
 * htmx elements refetch their fragment when one arrives. No polling loop runs in the browser.
 *
 * Events: `nodes` (any node created, changed or deleted), `node-<uuid>` (that node changed),
 * `conductors` (a heartbeat, a conductor joined, stopped or died), `ring` (the live membership of a
 * ring changed), `compute` (a compute service or server changed; PostgreSQL notifications, and
 * whatever a page module watches). Data is a short text; fragments never read it, they refetch.
 *
 * Where changes come from: the hub checks the database for them (one small query per concern: nodes
 * whose `updated_at` passed the last seen one, the conductors' liveness by the database clock) at
 * once on every PostgreSQL notification the processes already send (`ironring_nodes`,
 * `ironring_conductors`, the compute channels), when SQLite's change token moves (checked every
 * 200 ms: another process committed), and every second in any case — which covers writes of this
 * very process (its own commits do not move SQLite's token, and `ironring up` shares one
 * connection) and a conductor that dies silently. So an event is at most about a second late. The
 * hub does nothing while no stream is open.
 *
 * For page modules (the API to use):
 *
 *   // in a page: one stream per page, opened by the layout (`page({ live: true })`, the default);
 *   // a fragment that refetches itself on an event:
 *   html`<section ${liveAttrs('/ui/ring/fragment', 'ring')}>…</section>`
 *   // a change detector for events the hub does not know: polled with the others, the event is
 *   // sent whenever the fingerprint differs from the previous one (the first one sends nothing):
 *   deps.events.watch('timeline', async () => String(await lastTakeoverId(deps.store)));
 *   // or send an event at once:
 *   deps.events.publish('timeline');
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../common/logger.js';
import { MEMBERSHIP_CHANNEL, listConductors } from '../cluster/membership.js';
import { NODES_CHANNEL } from '../cluster/task.js';
import { INSTANCES_CHANNEL } from '../compute/instances.js';
import { SERVICES_CHANNEL } from '../compute/services.js';
import type { Store } from '../db/connect.js';
import type { Listener } from '../db/notifications.js';
import { html } from './html.js';
import type { Html } from './html.js';

/** What a page module may do with the event stream. */
export interface EventHub {
  /** Sends `event` (letters, digits, `-`, `_`, `.`) to every open stream now. */
  publish(event: string, data?: string): void;
  /**
   * Polls `fingerprint` with the hub's checks (about every second while a stream is open, and at
   * once after a notification) and sends `event` whenever its value differs from the last one.
   */
  watch(event: string, fingerprint: () => Promise<string>): void;
  /** Open streams now. */
  readonly streams: number;
}

export interface EventHubOptions {
  store: Store;
  heartbeatTimeout: number;
  logger: Logger;
  /** Streams served at once; beyond, 503 (default 100). */
  maxStreams?: number;
  /** The check's period (default 1000 ms). */
  pollMs?: number;
  /** Comment heartbeat period, keeping proxies from closing an idle stream (default 15 s). */
  heartbeatMs?: number;
}

const EVENT_NAME = /^[A-Za-z0-9_.-]{1,100}$/;
/** Changed nodes named one by one per check; a bigger burst sends only `nodes`. */
const NODE_BURST = 200;

/**
 * Attributes for an element that refetches `url` (a fragment: the element itself, outerHTML) when
 * one of `events` arrives. Put it inside a page made with `live` on. An event that arrives while a
 * refetch is under way replaces it (`hx-sync`): the last state always lands, which a throttle
 * (dropping the events inside its window) would not promise.
 */
export function liveAttrs(url: string, events: string | readonly string[]): Html {
  const names = typeof events === 'string' ? [events] : events;
  const trigger = names.map((e) => `sse:${e}`).join(', ');
  return html`hx-get="${url}" hx-trigger="${trigger}" hx-swap="outerHTML" hx-sync="this:replace"`;
}

export class SseHub implements EventHub {
  private readonly clients = new Set<ServerResponse>();
  private readonly watchers = new Map<string, { fingerprint: () => Promise<string>; last: string | undefined }>();
  private readonly maxStreams: number;
  private timers: NodeJS.Timeout[] = [];
  private listeners: Listener[] = [];
  private running: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private token: string | null = null;
  /** Nodes: the highest `updated_at` seen (ms), the stamps of the nodes at or after it, the count. */
  private nodeMark: Date | null = null;
  private nodeStamps = new Map<string, number>();
  private nodeCount = -1;
  private conductorsSeen: { ring: string; all: string } | null = null;

  constructor(private readonly options: EventHubOptions) {
    this.maxStreams = options.maxStreams ?? 100;
  }

  get streams(): number {
    return this.clients.size;
  }

  publish(event: string, data = ''): void {
    if (!EVENT_NAME.test(event)) throw new Error(`SSE event name ${JSON.stringify(event)}: letters, digits, - _ . only`);
    const frame = `event: ${event}\ndata: ${data.replace(/[\r\n]+/g, ' ')}\n\n`;
    for (const res of this.clients) res.write(frame);
  }

  watch(event: string, fingerprint: () => Promise<string>): void {
    if (!EVENT_NAME.test(event)) throw new Error(`SSE event name ${JSON.stringify(event)}: letters, digits, - _ . only`);
    this.watchers.set(event, { fingerprint, last: undefined });
  }

  /** Registers `GET /ui/events` and the close of every stream when the app closes. */
  register(app: FastifyInstance): void {
    app.get('/ui/events', (request, reply) => {
      if (this.closed || this.clients.size >= this.maxStreams) {
        void reply.code(503).header('Retry-After', '10').type('text/plain; charset=utf-8').send(`too many event streams (${this.maxStreams}); try again later\n`);
        return;
      }
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Accel-Buffering': 'no',
        'X-Content-Type-Options': 'nosniff',
      });
      // A browser reconnects 2 s after a drop; the first comment flushes the headers.
      res.write('retry: 2000\n: connected\n\n');
      this.clients.add(res);
      const gone = (): void => {
        this.clients.delete(res);
        if (this.clients.size === 0) void this.idle();
      };
      res.on('close', gone);
      if (this.clients.size === 1) void this.wake();
    });
    // Before the server stops accepting: open streams would otherwise hold close() forever.
    app.addHook('preClose', async () => {
      this.closed = true;
      for (const res of this.clients) res.end();
      this.clients.clear();
      await this.idle();
    });
  }

  /** Starts the timers and listeners (the first stream opened). */
  private async wake(): Promise<void> {
    if (this.timers.length > 0 || this.closed) return;
    const { store, pollMs = 1000, heartbeatMs = 15_000 } = this.options;
    this.timers.push(setInterval(() => this.check(), pollMs));
    this.timers.push(setInterval(() => { for (const res of this.clients) res.write(': ping\n\n'); }, heartbeatMs));
    if (store.changeToken) {
      this.token = store.changeToken();
      this.timers.push(
        setInterval(() => {
          const token = store.changeToken?.() ?? null;
          if (token !== this.token) {
            this.token = token;
            this.check();
          }
        }, 200),
      );
    }
    for (const t of this.timers) t.unref();
    this.check();
    const channels: Array<[string, string | null]> = [[NODES_CHANNEL, null], [MEMBERSHIP_CHANNEL, null], [SERVICES_CHANNEL, 'compute'], [INSTANCES_CHANNEL, 'compute']];
    for (const [channel, event] of channels) {
      const listener = await store
        .listen(channel, {
          onMessage: () => {
            if (event !== null) this.publish(event);
            this.check();
          },
          onReconnect: () => this.check(),
          onError: (err) => this.options.logger.debug({ err: err.message, channel }, 'dashboard events: notifications interrupted'),
        })
        .catch(() => null);
      if (listener === null) continue;
      if (this.timers.length === 0) await listener.close();
      else this.listeners.push(listener);
    }
  }

  /** Stops the timers and listeners (the last stream closed, or the app closes). */
  private async idle(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    const listeners = this.listeners;
    this.listeners = [];
    await Promise.all(listeners.map((l) => l.close().catch(() => undefined)));
    await this.running;
  }

  /** Runs the checks now, or once more after the one running. */
  check(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.runChecks()
      .catch((err: unknown) => this.options.logger.warn({ err: (err as Error).message }, 'dashboard events: change check failed'))
      .finally(() => {
        this.running = null;
        if (this.again && this.timers.length > 0) {
          this.again = false;
          this.check();
        }
      });
  }

  private async runChecks(): Promise<void> {
    await this.checkNodes();
    await this.checkConductors();
    for (const [event, w] of this.watchers) {
      const value = await w.fingerprint();
      if (w.last !== undefined && value !== w.last) this.publish(event);
      w.last = value;
    }
  }

  /** Nodes whose `updated_at` reached the last mark: `node-<uuid>` for each that changed, then `nodes`. */
  private async checkNodes(): Promise<void> {
    const { db } = this.options.store;
    const count = Number((await db.selectFrom('nodes').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    let q = db.selectFrom('nodes').select(['uuid', 'updated_at']).where('updated_at', 'is not', null);
    if (this.nodeMark !== null) q = q.where('updated_at', '>=', this.nodeMark);
    const rows = await q.orderBy('updated_at', 'desc').limit(NODE_BURST + 1).execute();
    const first = this.nodeMark === null;
    const stamps = new Map<string, number>();
    for (const r of rows) stamps.set(r.uuid, new Date(r.updated_at as unknown as string | Date).getTime());
    const changed = first ? [] : [...stamps].filter(([uuid, at]) => this.nodeStamps.get(uuid) !== at).map(([uuid]) => uuid);
    const top = rows.length > 0 ? Math.max(...stamps.values()) : null;
    if (top !== null) {
      this.nodeMark = new Date(top);
      this.nodeStamps = new Map([...stamps].filter(([, at]) => at === top));
    } else if (first) {
      this.nodeMark = new Date(0);
    }
    if (rows.length <= NODE_BURST) for (const uuid of changed) this.publish(`node-${uuid}`);
    if (changed.length > 0 || (this.nodeCount !== -1 && count !== this.nodeCount)) this.publish('nodes');
    this.nodeCount = count;
  }

  /** `conductors` on any heartbeat or flag; `ring` when a live membership (who, group, weight) changed. */
  private async checkConductors(): Promise<void> {
    const rows = await listConductors(this.options.store, this.options.heartbeatTimeout);
    const ring = rows.filter((c) => c.alive).map((c) => `${c.conductorGroup}/${c.hostname}/${c.weight}`).join(',');
    const all = rows.map((c) => `${c.hostname}/${c.online}/${c.alive}/${c.updatedAt.getTime()}`).join(',');
    const seen = this.conductorsSeen;
    this.conductorsSeen = { ring, all };
    if (seen === null) return;
    if (seen.ring !== ring) this.publish('ring');
    if (seen.all !== all) this.publish('conductors');
  }
}
