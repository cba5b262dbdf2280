/**
 * `GET /ui/nodes`: the fleet as a table — filters in the query string (bookmarkable), keyset pages
 * on the node's row id (`after`/`before`, no OFFSET), one query per page whatever the fleet's size.
 * The ring owner of each row is computed in memory from the live rings (no per-row query). The
 * table refetches itself on the `nodes` event (src/web/sse.ts).
 */
import { sql } from 'kysely';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { nodeOwners } from '../../cluster/conductor-rings.js';
import type { Store } from '../../db/connect.js';
import type { WebDeps } from '../deps.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { page } from '../layout.js';
import { liveAttrs } from '../sse.js';
import { POWER_FILTERS, isUuid, maintenanceBadge, nodesUrl, parseNodesQuery, powerBadge, provisionBadge } from './node-parts.js';
import type { NodesQuery } from './node-parts.js';
import { PROVISION_STATES } from '../../nodes/states.js';

/** Characters of `last_error` a row shows (the node page has it whole). */
const ERROR_CUT = 120;

export interface NodeListRow {
  id: number;
  uuid: string;
  name: string | null;
  provision_state: string;
  target_provision_state: string | null;
  power_state: string | null;
  target_power_state: string | null;
  owner: string | null;
  maintenance: boolean;
  maintenance_reason: string | null;
  last_error: string | null;
  conductor_group: string;
  conductor_affinity: number | null;
}

export interface NodesPage {
  rows: NodeListRow[];
  /** Row id to continue after, when there is a next page. */
  next: number | null;
  /** Row id to go back before, when there is a previous page. */
  prev: number | null;
}

/** One page of the list: a single query (one row more than the page says whether another follows). */
export async function listNodePage(store: Store, query: NodesQuery): Promise<NodesPage> {
  let q = store.db
    .selectFrom('nodes')
    .select(['id', 'uuid', 'name', 'provision_state', 'target_provision_state', 'power_state', 'target_power_state', 'owner', 'maintenance', 'maintenance_reason', 'conductor_group', 'conductor_affinity'])
    .select(sql<string | null>`substr(last_error, 1, ${ERROR_CUT + 1})`.as('last_error'));
  if (query.provision_state !== undefined) q = q.where('provision_state', '=', query.provision_state);
  if (query.power_state === 'none') q = q.where('power_state', 'is', null);
  else if (query.power_state !== undefined) q = q.where('power_state', '=', query.power_state);
  if (query.owner !== undefined) q = q.where('owner', '=', query.owner);
  if (query.conductor_group !== undefined) q = q.where('conductor_group', '=', query.conductor_group);
  if (query.maintenance !== undefined) q = q.where('maintenance', '=', query.maintenance);
  if (query.q !== undefined) {
    const text = query.q;
    if (isUuid(text)) q = q.where('uuid', '=', text.toLowerCase());
    else {
      // Literally: LIKE's wildcards in the text match themselves.
      const escaped = text.replace(/[\\%_]/g, (c) => `\\${c}`);
      q = q.where((eb) => eb.or([sql<boolean>`name like ${`%${escaped}%`} escape '\\'`, sql<boolean>`uuid like ${`${escaped.toLowerCase()}%`} escape '\\'`]));
    }
  }
  const backwards = query.before !== undefined;
  if (query.after !== undefined) q = q.where('id', '>', query.after);
  if (query.before !== undefined) q = q.where('id', '<', query.before);
  const rows = (await q.orderBy('id', backwards ? 'desc' : 'asc').limit(query.limit + 1).execute()) as NodeListRow[];
  const more = rows.length > query.limit;
  if (more) rows.pop();
  if (backwards) rows.reverse();
  const first = rows[0]?.id ?? null;
  const last = rows[rows.length - 1]?.id ?? null;
  return {
    rows,
    next: backwards ? (query.before !== undefined && last !== null ? last : null) : more ? last : null,
    prev: backwards ? (more ? first : null) : query.after !== undefined && first !== null ? first : null,
  };
}

function filterForm(query: NodesQuery, groups: readonly string[]): Html {
  const option = (value: string, label: string, selected: boolean) => html`<option value="${value}"${selected ? html` selected` : ''}>${label}</option>`;
  return html`<form class="filters" method="get" action="/ui/nodes" role="search" aria-label="Filter nodes">
<label>Name or UUID <input type="search" name="q" value="${query.q ?? ''}" maxlength="255"></label>
<label>Provision state <select name="provision_state">${option('', 'any', query.provision_state === undefined)}${PROVISION_STATES.map((s) => option(s, s, query.provision_state === s))}</select></label>
<label>Power state <select name="power_state">${option('', 'any', query.power_state === undefined)}${POWER_FILTERS.map((s) => option(s, s === 'none' ? 'unknown' : s, query.power_state === s))}</select></label>
<label>Maintenance <select name="maintenance">${option('', 'any', query.maintenance === undefined)}${option('true', 'in maintenance', query.maintenance === true)}${option('false', 'not in maintenance', query.maintenance === false)}</select></label>
<label>Owner <input name="owner" value="${query.owner ?? ''}" maxlength="255"></label>
<label>Conductor group <input name="conductor_group" value="${query.conductor_group ?? ''}" maxlength="255" list="groups"></label>
<datalist id="groups">${groups.map((g) => html`<option value="${g}"></option>`)}</datalist>
<label>Per page <input name="limit" type="number" min="1" max="1000" value="${query.limit}"></label>
<button type="submit">Filter</button> <a href="/ui/nodes">Clear</a>
</form>`;
}

/** The live part: the table and its pager, refetched on `nodes`. */
export function nodesTable(result: NodesPage, query: NodesQuery, owners: ReturnType<typeof nodeOwners>): Html {
  const self = nodesUrl(query);
  const pager = html`<nav class="pager" aria-label="Pages">
${result.prev !== null ? html`<a href="${nodesUrl(query, { after: undefined, before: result.prev })}" rel="prev">← Previous ${query.limit}</a>` : html`<span class="muted">← Previous</span>`}
${result.next !== null ? html`<a href="${nodesUrl(query, { before: undefined, after: result.next })}" rel="next">Next ${query.limit} →</a>` : html`<span class="muted">Next →</span>`}
</nav>`;
  const rows = result.rows.map((n) => {
    const owner = owners.owner(n);
    const affinity = owners.hostname(n.conductor_affinity);
    const error = n.last_error === null ? '' : n.last_error.length > ERROR_CUT ? `${n.last_error.slice(0, ERROR_CUT)}…` : n.last_error;
    return html`<tr>
<td><a href="/ui/nodes/${n.uuid}">${n.name ?? html`<span class="mono">${n.uuid.slice(0, 8)}</span>`}</a></td>
<td class="mono">${n.uuid}</td>
<td>${provisionBadge(n.provision_state, n.target_provision_state)}</td>
<td>${powerBadge(n.power_state, n.target_power_state)}</td>
<td>${n.owner ?? html`<span class="muted">—</span>`}</td>
<td>${owner ?? html`<span class="muted">no live conductor</span>`}${affinity !== null && affinity !== owner ? html` <span class="muted">(boot state on ${affinity})</span>` : ''}</td>
<td>${maintenanceBadge(n.maintenance)}</td>
<td class="cut" title="${error}">${error}</td>
</tr>`;
  });
  return html`<section id="nodes-live" aria-labelledby="nodes-caption" ${liveAttrs(self, 'nodes')}>
<div class="table-wrap"><table>
<caption id="nodes-caption">${result.rows.length === 0 ? 'No node matches.' : `${result.rows.length} node${result.rows.length === 1 ? '' : 's'} on this page`} <span class="live-note">Updates live.</span></caption>
<thead><tr><th scope="col">Name</th><th scope="col">UUID</th><th scope="col">Provision state</th><th scope="col">Power</th><th scope="col">Owner</th><th scope="col">Conductor (ring owner)</th><th scope="col">Maintenance</th><th scope="col">Last error</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>
${pager}
</section>`;
}

export function nodesPages(app: FastifyInstance, deps: WebDeps): void {
  app.get('/ui/nodes', async (request: FastifyRequest<{ Querystring: Record<string, string | undefined> }>, reply) => {
    const query = parseNodesQuery(request.query);
    const [result, rings] = await Promise.all([listNodePage(deps.store, query), deps.rings.current()]);
    const owners = nodeOwners(rings, deps.config.conductor.replicas);
    const table = nodesTable(result, query, owners);
    reply.type('text/html; charset=utf-8').header('Vary', 'HX-Request').header('Cache-Control', 'no-store');
    // htmx asks for the table alone when an event arrives.
    if (request.headers['hx-request'] === 'true') return table.text;
    return page({ title: 'Nodes', nav: 'nodes', body: html`${filterForm(query, rings.groups())}${table}` }).text;
  });
}
