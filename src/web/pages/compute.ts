/**
 * `GET /ui/compute`: the compute tier — cells (never their database URLs), compute services (up or
 * down by the database clock, host mapped to its cell or not, nodes exposed) and servers, 50 at a
 * time after `?marker=<uuid>` (the last server of the previous page: keyset, so a page costs the
 * same wherever it is and a bookmark stays put as servers come and go). The queries are the compute
 * API's own (`compute/servers.ts`). Shown only where
 * this API serves the compute tier (its compute databases were given); otherwise it says so.
 * `GET /ui/compute/fragment` is the live part, refetched on the `compute` event.
 */
import type { FastifyInstance } from 'fastify';
import { isCell0, listCells } from '../../cells/cells.js';
import type { CellMapping } from '../../cells/cells.js';
import type { ComputeStores } from '../../cells/compute-stores.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import { MarkerNotFound, countServers, listServersPage, listServiceStates } from '../../compute/servers.js';
import type { ServerPage, ServiceListing } from '../../compute/servers.js';
import type { PageModule, WebDeps } from '../deps.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { liveAttrs } from '../sse.js';
import { BadParameter, answer, badge, queryString, single } from './page-kit.js';
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

/** The page of servers after `marker`; an unknown marker is the page's 400 naming it. */
async function serverPage(stores: ComputeStores, marker: string | undefined): Promise<ServerPage> {
  try {
    return await listServersPage(stores, { limit: SERVERS_PER_PAGE, ...(marker !== undefined ? { marker } : {}) });
  } catch (err) {
    if (err instanceof MarkerNotFound) throw new BadParameter('marker', 'no server has this uuid (deleted since?)');
    throw err;
  }
}

async function section(stores: ComputeStores, downTime: number, marker: string | undefined): Promise<Html> {
  const [cells, services, total, page] = await Promise.all([listCells(stores.api), listServiceStates(stores, downTime), countServers(stores), serverPage(stores, marker)]);
  const shown = page.servers;
  const at = (m: string | undefined) => queryString([['marker', m]]);
  const caption = marker === undefined ? 'Servers, first page' : `Servers after ${marker}`;
  return html`<section id="compute" aria-labelledby="compute-h" ${liveAttrs(`/ui/compute/fragment${at(marker)}`, 'compute')}>
<h2 id="compute-h">${cells.length} cell(s), ${services.filter((s) => s.nodes !== null).length} compute service(s), ${total} server(s)</h2>
<p class="live-note">Up and down by the database clock (down after ${downTime} s without a report). Updates by itself when services or servers change.</p>
${cellsTable(cells, services)}
${servicesTable(services)}
<div class="table-wrap" tabindex="0" role="region" aria-label="${caption}"><table>
<caption>${caption}</caption>
<thead><tr><th scope="col">Server</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Resource class</th><th scope="col">Host</th><th scope="col">Node</th><th scope="col">Cell</th><th scope="col">Created</th></tr></thead>
<tbody>${shown.map(
  (s) => html`<tr><th scope="row" class="mono">${s.id}</th><td>${s.name ?? ''}</td><td>${badge(s.status, STATUS_TONE[s.status] ?? 'info')}${s.fault !== null ? html` <span class="muted">${s.fault.message}</span>` : ''}</td><td>${s.resource_class ?? ''}</td><td>${s.host ?? '—'}</td><td class="mono">${s.node === null ? '—' : html`<a href="/ui/nodes/${s.node}">${s.node}</a>`}</td><td>${s.cell ?? '—'}</td><td>${s.created_at}</td></tr>`,
)}</tbody></table></div>
${shown.length > 0 ? '' : marker === undefined ? html`<p class="muted">No server yet.</p>` : html`<p class="muted">No server after this one.</p>`}
<nav class="pager" aria-label="Server pages">${marker !== undefined ? html`<a href="/ui/compute">First page</a>` : ''}<span>${shown.length} of ${total} server(s) shown</span>${page.next !== null ? html`<a href="/ui/compute${at(page.next)}">Next →</a>` : ''}</nav>
</section>`;
}

async function build(deps: WebDeps, query: Query): Promise<Html> {
  const marker = single(query, 'marker')?.toLowerCase();
  if (marker !== undefined && !UUID_PATTERN.test(marker)) throw new BadParameter('marker', 'not a server uuid');
  if (deps.compute === undefined) {
    return html`<section id="compute" aria-labelledby="compute-h"><h2 id="compute-h">Compute tier not served here</h2><p>This API has no compute databases ([api_database] url): the compute tier is served by <code>ironring up</code> or an API started with them.</p></section>`;
  }
  return section(deps.compute, deps.config.compute.service_down_time, marker);
}

export const computePages: PageModule = (app: FastifyInstance, deps: WebDeps) => {
  app.get('/ui/compute', (request, reply) => answer(request, reply, { title: 'Compute', nav: 'compute', fragment: false }, (query) => build(deps, query)));
  app.get('/ui/compute/fragment', (request, reply) => answer(request, reply, { title: 'Compute', nav: 'compute', fragment: true }, (query) => build(deps, query)));
};
