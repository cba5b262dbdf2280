/**
 * `GET /ui/timeline`: the take-over timeline — ring events (a conductor joined, left, died) and the
 * reconcile passes that followed, from the durable record the conductors write
 * (`cluster/ring-events.ts`) — as a chart and a table. For each ring event: the nodes the passes
 * after it took over, and the time to converge (until every conductor of the group that passed
 * after it had a pass with nothing pending). `GET /ui/timeline/fragment` is the live part,
 * refetched on the `timeline` event (a new ring event, watched here: every ring change writes one).
 */
import type { FastifyInstance } from 'fastify';
import { listRingEvents } from '../../cluster/ring-events.js';
import type { RingEvent } from '../../cluster/ring-events.js';
import type { Store } from '../../db/connect.js';
import type { PageModule, WebDeps } from '../deps.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { liveAttrs } from '../sse.js';
import { timelineChart } from '../svg.js';
import { BadParameter, answer, badge, duration, integer, isoTime, millis, queryString, single } from './page-kit.js';
import type { Query } from './page-kit.js';

/** A ring event with what followed it. */
export interface Episode {
  event: RingEvent;
  passes: RingEvent[];
  nodesMoved: number;
  /** Seconds from the event to the end of the pass that converged last; null: not converged yet. */
  convergedAfter: number | null;
}

/**
 * Groups the passes under the ring event before them in their group (passes before any event are
 * left out), up to the next event of that group. A conductor that left or died is not waited for.
 */
export function episodes(events: readonly RingEvent[]): Episode[] {
  const out: Episode[] = [];
  const open = new Map<string, Episode>();
  for (const e of events) {
    if (e.kind !== 'pass') {
      const episode: Episode = { event: e, passes: [], nodesMoved: 0, convergedAfter: null };
      open.set(e.conductorGroup, episode);
      out.push(episode);
      continue;
    }
    const episode = open.get(e.conductorGroup);
    if (!episode) continue;
    if ((episode.event.kind === 'left' || episode.event.kind === 'died') && e.hostname === episode.event.hostname) continue;
    episode.passes.push(e);
    episode.nodesMoved += e.nodesMoved ?? 0;
  }
  for (const ep of out) {
    // Per conductor: the first pass with nothing pending; converged once every conductor had one.
    const settled = new Map<string, number | null>();
    for (const p of ep.passes) {
      if (typeof settled.get(p.hostname) === 'number') continue;
      settled.set(p.hostname, (p.pending ?? 0) === 0 ? p.at.getTime() : null);
    }
    const times = [...settled.values()];
    if (times.length > 0 && times.every((t) => t !== null)) ep.convergedAfter = (Math.max(...(times as number[])) - ep.event.at.getTime()) / 1000;
  }
  return out;
}

interface TimelineQuery {
  group: string | undefined;
  limit: number;
}

function parseQuery(query: Query): TimelineQuery {
  const group = single(query, 'group');
  if (group !== undefined && group.length > 255) throw new BadParameter('group', 'longer than 255 characters');
  return { group, limit: integer(query, 'limit', 10, 1000, 300) };
}

const KIND_TONE = { joined: 'ok', left: 'warn', died: 'bad', pass: 'info' } as const;

function episodeRows(list: readonly Episode[]): Html {
  return html`${[...list].reverse().map(
    (ep) => html`<tr><td>${isoTime(ep.event.at)}</td><td>${ep.event.conductorGroup === '' ? html`<span class="muted">(default)</span>` : ep.event.conductorGroup}</td><th scope="row">${ep.event.hostname}</th><td>${badge(ep.event.kind, KIND_TONE[ep.event.kind])}${ep.event.kind === 'died' && typeof ep.event.detail.observer === 'string' ? html` <span class="muted">(seen by ${ep.event.detail.observer})</span>` : ''}</td><td>${ep.passes.length}</td><td>${ep.nodesMoved}</td><td>${ep.convergedAfter === null ? (ep.passes.length === 0 ? html`<span class="muted">no pass yet</span>` : badge('not yet', 'warn')) : duration(ep.convergedAfter)}</td></tr>`,
  )}`;
}

function passRows(passes: readonly RingEvent[]): Html {
  return html`${[...passes].reverse().map(
    (p) => html`<tr><td>${isoTime(p.at)}</td><th scope="row">${p.hostname}</th><td>${typeof p.detail.trigger === 'string' ? p.detail.trigger : ''}</td><td>${p.nodesMoved ?? 0}</td><td>${p.pending ?? 0}</td><td>${p.durationMs === null ? '—' : millis(p.durationMs)}</td></tr>`,
  )}`;
}

async function section(store: Store, q: TimelineQuery, url: string): Promise<Html> {
  const [events, now] = await Promise.all([listRingEvents(store, { limit: q.limit, ...(q.group !== undefined ? { group: q.group } : {}) }), store.now()]);
  const list = episodes(events);
  const passes = events.filter((e) => e.kind === 'pass');
  const marks = events.filter((e) => e.kind !== 'pass');
  const from = events[0]?.at ?? new Date(now.getTime() - 60_000);
  const recent = passes.slice(-50);
  return html`<section id="timeline" aria-labelledby="timeline-h" ${liveAttrs(url, 'timeline')}>
<h2 id="timeline-h">${marks.length} ring event(s), ${passes.length} pass(es)${q.group !== undefined ? html` in group ${q.group}` : ''}</h2>
<p class="live-note">The last ${q.limit} events, times by the database clock (UTC), as of ${now.toISOString()}. Updates by itself when a conductor joins, leaves or dies and as the passes after it finish.</p>
${events.length === 0 ? html`<p>No ring event recorded yet: conductors record them as they join, leave or die and as their passes run.</p>` : timelineChart({ id: 'tl', from, to: now, marks: marks.map((m) => ({ at: m.at, kind: m.kind, hostname: m.hostname })), passes: passes.map((p) => ({ at: p.at, durationMs: p.durationMs ?? 0, nodesMoved: p.nodesMoved ?? 0, hostname: p.hostname, pending: p.pending ?? 0 })) })}
<div class="table-wrap" tabindex="0" role="region" aria-label="Ring events and the passes that followed (newest first)"><table>
<caption>Ring events and the passes that followed (newest first)</caption>
<thead><tr><th scope="col">When</th><th scope="col">Group</th><th scope="col">Conductor</th><th scope="col">Event</th><th scope="col">Passes after</th><th scope="col">Nodes taken over</th><th scope="col">Converged after</th></tr></thead>
<tbody>${episodeRows(list)}</tbody>
</table></div>
<details><summary>The last ${recent.length} reconcile passes</summary>
<div class="table-wrap" tabindex="0" role="region" aria-label="Reconcile passes (newest first)"><table>
<caption>Reconcile passes (newest first)</caption>
<thead><tr><th scope="col">Ended</th><th scope="col">Conductor</th><th scope="col">Trigger</th><th scope="col">Taken over</th><th scope="col">Pending after</th><th scope="col">Duration</th></tr></thead>
<tbody>${passRows(recent)}</tbody>
</table></div></details>
</section>`;
}

function filterForm(q: TimelineQuery): Html {
  return html`<form class="filters" method="get" action="/ui/timeline">
<label>Conductor group <input name="group" maxlength="255" value="${q.group ?? ''}"></label>
<label>Events shown <input name="limit" type="number" min="10" max="1000" value="${q.limit}"></label>
<button type="submit">Show</button>
</form>`;
}

export const timelinePages: PageModule = (app: FastifyInstance, deps: WebDeps) => {
  const { store } = deps;
  deps.events.watch('timeline', async () => {
    const last = await store.db.selectFrom('ring_events').select((eb) => eb.fn.max('id').as('id')).executeTakeFirst();
    return String(last?.id ?? 0);
  });
  const fragmentUrl = (q: TimelineQuery): string => `/ui/timeline/fragment${queryString([['group', q.group], ['limit', q.limit === 300 ? undefined : q.limit]])}`;
  app.get('/ui/timeline', (request, reply) =>
    answer(request, reply, { title: 'Take-over timeline', nav: 'timeline', fragment: false }, async (query) => {
      const q = parseQuery(query);
      return html`${filterForm(q)}${await section(store, q, fragmentUrl(q))}`;
    }),
  );
  app.get('/ui/timeline/fragment', (request, reply) =>
    answer(request, reply, { title: 'Take-over timeline', nav: 'timeline', fragment: true }, async (query) => {
      const q = parseQuery(query);
      return section(store, q, fragmentUrl(q));
    }),
  );
};
