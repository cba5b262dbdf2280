/**
 * `GET /ui/compute`: the compute tier — cells (never their database URLs), compute services (up or
 * down by the database clock, host mapped to its cell or not, nodes exposed) and servers, a page at
 * a time (`?page=N`). The queries are the compute API's own (`compute/servers.ts`). Shown only where
 * this API serves the compute tier (its compute databases were given); otherwise it says so.
 * `GET /ui/compute/fragment` is the live part, refetched on the `compute` event.
 */
import type { FastifyInstance } from 'fastify';
import { isCell0, listCells } from '../../cells/cells.js';
import type { CellMapping } from '../../cells/cells.js';
import type { ComputeStores } from '../../cells/compute-stores.js';
import { listServers, listServiceStates } from '../../compute/servers.js';
import type { ServiceListing } from '../../compute/servers.js';
import type { PageModule, WebDeps } from '../deps.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { liveAttrs } from '../sse.js';
import { answer, badge, integer, queryString } from './page-kit.js';
import type { Query } from './page-kit.js';

/** Servers per page. */
export const SERVERS_PER_PAGE = 50;

function cellsTable(cells: readonly CellMapping[], services: readonly ServiceListing[]): Html {
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Cells"><table>
<caption>Cells</caption>
<thead><tr><th scope="col">Cell</th><th scope="col">UUID</th><th scope="col">New servers</th><th scope="col">Compute services (up)</th><th scope="col">Nodes exposed</th></tr></thead>
<tbody>${cells.map((c) => {
  const own = services.filter((s) => s.cell === c.name && s.binary !== 'ironring-scheduler' && s.nodes !== null);
  const up = own.filter((s) => s.state === 'up').length;
  return html`<tr><th scope="row">${c.name}</th><td class="mono">${c.uuid}</td><td>${isCell0(c) ? html`<span class="muted">cell0: failed builds only</span>` : c.disabled ? badge('disabled', 'warn') : badge('enabled', 'ok')}</td><td>${own.length} (${up} up)</td><td>${own.reduce((n, s) => n + (s.nodes ?? 0), 0)}</td></tr>`;
})}</tbody></table></div>`;
}

function servicesTable(services: readonly ServiceListing[]): Html {
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Compute services and schedulers"><table>
<caption>Compute services and schedulers</caption>
<thead><tr><th scope="col">Host</th><th scope="col">Binary</th><th scope="col">Cell</th><th scope="col">State</th><th scope="col">Status</th><th scope="col">Host mapped</th><th scope="col">Nodes exposed</th><th scope="col">Last seen up</th></tr></thead>
<tbody>${services.map(
  (s) => html`<tr><th scope="row">${s.host}</th><td>${s.binary}</td><td>${s.cell}</td><td>${s.state === 'up' ? badge('up', 'ok') : badge('down', 'bad')}${s.forced_down ? html` ${badge('forced down', 'warn')}` : ''}</td><td>${s.status}</td><td>${s.host_mapped === null ? '—' : s.host_mapped ? 'yes' : badge('not mapped', 'warn')}</td><td>${s.nodes ?? '—'}</td><td>${s.last_seen_up ?? 'never'}</td></tr>`,
)}</tbody></table></div>
${services.length === 0 ? html`<p class="muted">No compute service has registered yet.</p>` : ''}`;
}

const STATUS_TONE: Readonly<Record<string, 'ok' | 'warn' | 'bad' | 'info'>> = { ACTIVE: 'ok', BUILD: 'info', DELETING: 'warn', ERROR: 'bad' };

async function section(stores: ComputeStores, downTime: number, pageNo: number): Promise<Html> {
  const [cells, services, servers] = await Promise.all([listCells(stores.api), listServiceStates(stores, downTime), listServers(stores)]);
  const pages = Math.max(1, Math.ceil(servers.length / SERVERS_PER_PAGE));
  const current = Math.min(pageNo, pages);
  const shown = servers.slice((current - 1) * SERVERS_PER_PAGE, current * SERVERS_PER_PAGE);
  const link = (n: number, label: string) => html`<a href="/ui/compute${queryString([['page', n === 1 ? undefined : n]])}">${label}</a>`;
  return html`<section id="compute" aria-labelledby="compute-h" ${liveAttrs(`/ui/compute/fragment${queryString([['page', current === 1 ? undefined : current]])}`, 'compute')}>
<h2 id="compute-h">${cells.length} cell(s), ${services.filter((s) => s.nodes !== null).length} compute service(s), ${servers.length} server(s)</h2>
<p class="live-note">Up and down by the database clock (down after ${downTime} s without a report). Updates by itself when services or servers change.</p>
${cellsTable(cells, services)}
${servicesTable(services)}
<div class="table-wrap" tabindex="0" role="region" aria-label="Servers, page ${current} of ${pages}"><table>
<caption>Servers, page ${current} of ${pages}</caption>
<thead><tr><th scope="col">Server</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Resource class</th><th scope="col">Host</th><th scope="col">Node</th><th scope="col">Cell</th><th scope="col">Created</th></tr></thead>
<tbody>${shown.map(
  (s) => html`<tr><th scope="row" class="mono">${s.id}</th><td>${s.name ?? ''}</td><td>${badge(s.status, STATUS_TONE[s.status] ?? 'info')}${s.fault !== null ? html` <span class="muted">${s.fault.message}</span>` : ''}</td><td>${s.resource_class ?? ''}</td><td>${s.host ?? '—'}</td><td class="mono">${s.node === null ? '—' : html`<a href="/ui/nodes/${s.node}">${s.node}</a>`}</td><td>${s.cell ?? '—'}</td><td>${s.created_at}</td></tr>`,
)}</tbody></table></div>
${servers.length === 0 ? html`<p class="muted">No server yet.</p>` : ''}
<nav class="pager" aria-label="Server pages">${current > 1 ? link(current - 1, '← Previous') : ''}<span>Page ${current} of ${pages}</span>${current < pages ? link(current + 1, 'Next →') : ''}</nav>
</section>`;
}

async function build(deps: WebDeps, query: Query): Promise<Html> {
  const pageNo = integer(query, 'page', 1, 100_000, 1);
  if (deps.compute === undefined) {
    return html`<section id="compute" aria-labelledby="compute-h"><h2 id="compute-h">Compute tier not served here</h2><p>This API has no compute databases ([api_database] url): the compute tier is served by <code>ironring up</code> or an API started with them.</p></section>`;
  }
  return section(deps.compute, deps.config.compute.service_down_time, pageNo);
}

export const computePages: PageModule = (app: FastifyInstance, deps: WebDeps) => {
  app.get('/ui/compute', (request, reply) => answer(request, reply, { title: 'Compute', nav: 'compute', fragment: false }, (query) => build(deps, query)));
  app.get('/ui/compute/fragment', (request, reply) => answer(request, reply, { title: 'Compute', nav: 'compute', fragment: true }, (query) => build(deps, query)));
};
