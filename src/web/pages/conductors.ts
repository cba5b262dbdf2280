/**
 * `GET /ui/conductors`: every conductor — group, alive or dead by the database clock, heartbeat age,
 * the boot endpoints it publishes in its row (TFTP, HTTP, ProxyDHCP), and the counters it publishes on its RPC
 * listener (`conductor-stats.ts`): TFTP transfers, HTTP boot requests by outcome and bytes sent,
 * ProxyDHCP answers, reconcile passes. What a conductor does not publish (an endpoint of a server it
 * does not run, the HTTP boot counters of one that runs no HTTP boot server) is shown as "not reported"; a conductor
 * that does not answer shows why. `GET /ui/conductors/fragment` is the live part.
 */
import type { FastifyInstance } from 'fastify';
import { listConductors } from '../../cluster/membership.js';
import type { PageModule, WebDeps } from '../deps.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { liveAttrs } from '../sse.js';
import { readConductorStats } from './conductor-stats.js';
import type { StatsResult } from './conductor-stats.js';
import { answer, badge, duration, millis } from './page-kit.js';

/** Conductors whose counters are read per view; the rest say so. */
const MAX_READ = 50;
/** Counters read within this long are reused (a heartbeat refetches the fragment). */
const CACHE_MS = 2000;

interface ConductorLine {
  hostname: string;
  group: string;
  online: boolean;
  alive: boolean;
  heartbeatAge: number;
  rpcUrl: string | null;
  tftp: string | null;
  http: string | null;
  proxyDhcp: string | null;
  stats: StatsResult | null;
}

const NOT_REPORTED = html`<span class="muted">not reported</span>`;

function num(n: number | null): Html | number {
  return n === null ? NOT_REPORTED : n;
}

/** A byte count, exact, with MiB beside it once it is large. */
function bytes(n: number): string {
  return n >= 1024 * 1024 ? `${n} bytes, ${(n / (1024 * 1024)).toFixed(1)} MiB` : `${n} bytes`;
}

async function readLines(deps: WebDeps, cache: Map<string, { at: number; result: Promise<StatsResult> }>): Promise<{ lines: ConductorLine[]; now: Date }> {
  const { store, config } = deps;
  const [rows, endpoints, now] = await Promise.all([
    listConductors(store, config.conductor.heartbeat_timeout),
    store.db.selectFrom('conductors').select(['hostname', 'tftp_address', 'http_url', 'proxydhcp_address']).execute(),
    store.now(),
  ]);
  const byHost = new Map(endpoints.map((e) => [e.hostname, e]));
  let read = 0;
  const lines = await Promise.all(
    rows.map(async (c): Promise<ConductorLine> => {
      let stats: StatsResult | null = null;
      if (c.alive && c.rpcUrl !== null) {
        if (read++ < MAX_READ) {
          const cached = cache.get(c.rpcUrl);
          if (cached && performance.now() - cached.at < CACHE_MS) stats = await cached.result;
          else {
            const result = readConductorStats(config, c.rpcUrl);
            cache.set(c.rpcUrl, { at: performance.now(), result });
            stats = await result;
          }
        } else stats = { ok: false, reason: `counters are read for the first ${MAX_READ} live conductors only` };
      }
      return {
        hostname: c.hostname,
        group: c.conductorGroup,
        online: c.online,
        alive: c.alive,
        heartbeatAge: (now.getTime() - c.updatedAt.getTime()) / 1000,
        rpcUrl: c.rpcUrl,
        tftp: byHost.get(c.hostname)?.tftp_address ?? null,
        http: byHost.get(c.hostname)?.http_url ?? null,
        proxyDhcp: byHost.get(c.hostname)?.proxydhcp_address ?? null,
        stats,
      };
    }),
  );
  // Entries of conductors gone for good would keep growing the cache.
  for (const url of cache.keys()) if (!rows.some((r) => r.rpcUrl === url)) cache.delete(url);
  return { lines, now };
}

function state(c: ConductorLine): Html {
  if (c.alive) return badge(c.online ? 'alive' : 'stopping', c.online ? 'ok' : 'warn');
  return badge(c.online ? 'dead (heartbeat expired)' : 'stopped', 'bad');
}

function identityTable(lines: readonly ConductorLine[]): Html {
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Conductors and their boot endpoints"><table>
<caption>Conductors and their boot endpoints</caption>
<thead><tr><th scope="col">Conductor</th><th scope="col">Group</th><th scope="col">State</th><th scope="col">Heartbeat age</th><th scope="col">RPC</th><th scope="col">TFTP</th><th scope="col">HTTP boot</th><th scope="col">ProxyDHCP</th></tr></thead>
<tbody>
${lines.map(
  (c) => html`<tr><th scope="row">${c.hostname}</th><td>${c.group === '' ? html`<span class="muted">(default)</span>` : c.group}</td><td>${state(c)}</td><td>${duration(c.heartbeatAge)}</td><td class="mono">${c.rpcUrl ?? NOT_REPORTED}</td><td class="mono">${c.tftp ?? NOT_REPORTED}</td><td class="mono">${c.http ?? NOT_REPORTED}</td><td class="mono">${c.proxyDhcp ?? NOT_REPORTED}</td></tr>`,
)}
</tbody></table></div>`;
}

function countersTable(lines: readonly ConductorLine[]): Html {
  const live = lines.filter((c) => c.stats !== null);
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Counters each live conductor publishes (since it started)"><table>
<caption>Counters each live conductor publishes (since it started)</caption>
<thead><tr><th scope="col">Conductor</th><th scope="col">TFTP transfers: started / completed / failed / refused / active</th><th scope="col">HTTP boot requests: served / 304 / not found / refused / failed (bytes sent)</th><th scope="col">ProxyDHCP: offers / acks / ignored</th><th scope="col">Reconcile passes (mean)</th><th scope="col">Last pass</th><th scope="col">Nodes taken over</th></tr></thead>
<tbody>
${live.map((c) => {
  const r = c.stats!;
  if (!r.ok) return html`<tr><th scope="row">${c.hostname}</th><td colspan="6">not reported: the conductor did not answer (${r.reason})</td></tr>`;
  const s = r.stats;
  const t = s.tftp;
  const h = s.httpBoot;
  const d = s.proxyDhcp;
  const p = s.reconcile;
  const mean = p.passes !== null && p.passes > 0 && p.totalSeconds !== null ? html` (${millis((p.totalSeconds / p.passes) * 1000)})` : '';
  const last = s.lastPass === null ? html`<span class="muted">none yet</span>` : html`${millis(s.lastPass.durationMs)} <span class="muted">(${s.lastPass.trigger}; ${s.lastPass.takenOver} taken over, ${s.lastPass.pending} pending)</span>`;
  return html`<tr><th scope="row">${c.hostname}</th><td>${num(t.started)} / ${num(t.completed)} / ${num(t.failed)} / ${num(t.refused)} / ${num(t.active)}</td><td>${num(h.served)} / ${num(h.notModified)} / ${num(h.notFound)} / ${num(h.refused)} / ${num(h.failed)} (${h.bytesSent === null ? NOT_REPORTED : bytes(h.bytesSent)})</td><td>${num(d.offers)} / ${num(d.acks)} / ${num(d.ignored)}</td><td>${num(p.passes)}${mean}</td><td>${last}</td><td>${num(p.takeovers)}</td></tr>`;
})}
</tbody></table></div>
${live.length === 0 ? html`<p class="muted">No live conductor to read counters from.</p>` : ''}`;
}

function section(lines: readonly ConductorLine[], now: Date): Html {
  return html`<section id="conductors" aria-labelledby="conductors-h" ${liveAttrs('/ui/conductors/fragment', ['conductors', 'ring'])}>
<h2 id="conductors-h">${lines.length} conductor(s), ${lines.filter((c) => c.alive).length} alive</h2>
<p class="live-note">Alive and heartbeat age by the database clock, as of ${now.toISOString()}. Updates by itself on heartbeats and membership changes.</p>
${lines.length === 0 ? html`<p>No conductor has registered yet.</p>` : html`${identityTable(lines)}${countersTable(lines)}`}
<p class="muted">"Not reported": the conductor does not publish that figure — it runs no such server (no TFTP, HTTP boot or ProxyDHCP endpoint in its row; no HTTP boot outcomes from a conductor without an HTTP boot server).</p>
</section>`;
}

export const conductorPages: PageModule = (app: FastifyInstance, deps: WebDeps) => {
  const cache = new Map<string, { at: number; result: Promise<StatsResult> }>();
  app.get('/ui/conductors', (request, reply) =>
    answer(request, reply, { title: 'Conductors', nav: 'conductors', fragment: false }, async () => {
      const { lines, now } = await readLines(deps, cache);
      return section(lines, now);
    }),
  );
  app.get('/ui/conductors/fragment', (request, reply) =>
    answer(request, reply, { title: 'Conductors', nav: 'conductors', fragment: true }, async () => {
      const { lines, now } = await readLines(deps, cache);
      return section(lines, now);
    }),
  );
};
