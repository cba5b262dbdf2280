/**
 * `GET /ui/nodes/{uuid or name}`: one node — its fields as the API shows them (read through the
 * API's own route, so secrets are masked exactly as the API masks them), its ports, its history
 * (latest first), its place on the ring (owner, replicas, boot-state affinity) and its actions.
 * Its live parts (`/ui/nodes/{uuid}/live/summary|details`) refetch on `node-<uuid>` (and `ring`).
 *
 * Boot files: a node's boot files (`tftp_root/<uuid>/…`, its per-MAC links, its DHCP entries) live
 * on its owner conductor's disk. The page says which conductor holds them and whether its boot
 * state is current there (affinity = owner), and lists them as that conductor reports them on its
 * RPC listener (`node-boot-files.ts`); an owner that does not answer is "not reported".
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { nodeOwners } from '../../cluster/conductor-rings.js';
import { NotFound } from '../../common/errors.js';
import type { WebDeps } from '../deps.js';
import { callApi } from '../api-call.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { page } from '../layout.js';
import { liveAttrs } from '../sse.js';
import { actionForms } from './actions.js';
import { bootFilesTable, readBootFiles } from './node-boot-files.js';
import { maintenanceBadge, powerBadge, provisionBadge } from './node-parts.js';

/** History entries the page shows. */
const HISTORY_SHOWN = 50;

/** Fields shown up top (in this order); the rest follow in a table, JSON ones as JSON. */
const HEADLINE = ['uuid', 'name', 'driver', 'provision_state', 'power_state', 'maintenance', 'owner', 'lessee', 'resource_class', 'conductor_group', 'conductor', 'instance_uuid', 'last_error'];

type ApiNode = Record<string, unknown> & { uuid: string; name: string | null; conductor_group: string };

function value(v: unknown): Html {
  if (v === null || v === undefined || v === '') return html`<span class="muted">—</span>`;
  if (typeof v === 'object') return html`<pre>${JSON.stringify(v, null, 2)}</pre>`;
  return html`${String(v)}`;
}

/** Reads the node through the API (masked view); NotFound when the API has none. */
async function readNode(app: FastifyInstance, request: FastifyRequest, ident: string): Promise<ApiNode> {
  const res = await callApi(app, request, 'GET', `/v1/nodes/${encodeURIComponent(ident)}`);
  if (res.status === 404) throw new NotFound(`node ${ident} could not be found`);
  if (res.status !== 200) throw new NotFound(res.error ?? `the API answered ${res.status}`);
  return res.body as ApiNode;
}

/** The node's summary (live): state, and its place on the ring with its boot files as the owner lists them. */
async function summarySection(deps: WebDeps, node: ApiNode): Promise<Html> {
  const owners = nodeOwners(await deps.rings.current(), deps.config.conductor.replicas);
  const owner = owners.owner(node);
  const replicas = owners.replicas(node);
  const affinity = typeof node.conductor_affinity === 'string' ? node.conductor_affinity : null;
  let bootState: Html;
  if (owner === null) {
    bootState = html`<p>${provisionBadge('no live conductor', null)} No live conductor in group <code>${node.conductor_group}</code>: nobody serves this node's boot files now.</p>`;
  } else {
    const where =
      affinity === owner
        ? html`<p>Boot files (boot config, per-MAC links, kernel/ramdisk links, DHCP entries) are kept on <strong>${owner}</strong>, its owner; its boot state there is current (affinity = owner).</p>`
        : html`<p>Its owner is <strong>${owner}</strong>; its boot state was last made on <strong>${affinity ?? 'no conductor'}</strong> — ${owner} takes it over at its next reconcile pass if the node's state needs boot files.</p>`;
    bootState = html`${where}
${bootFilesTable(owner, await readBootFiles(deps, owner, node.uuid))}`;
  }
  return html`<div id="node-summary" ${liveAttrs(`/ui/nodes/${node.uuid}/live/summary`, [`node-${node.uuid}`, 'ring'])}>
<p class="live-note">Updates live.</p>
<div class="grid2">
<section aria-labelledby="h-state"><h2 id="h-state">State</h2>
<dl class="fields">
<dt>Provision state</dt><dd data-testid="provision-state">${provisionBadge(node.provision_state as string, (node.target_provision_state as string | null) ?? null)}</dd>
<dt>Power state</dt><dd data-testid="power-state">${powerBadge((node.power_state as string | null) ?? null, (node.target_power_state as string | null) ?? null)}</dd>
<dt>Maintenance</dt><dd>${maintenanceBadge(node.maintenance === true, (node.maintenance_reason as string | null) ?? null)}</dd>
${HEADLINE.filter((k) => !['provision_state', 'power_state', 'maintenance'].includes(k) && k in node).map((k) => html`<dt>${k}</dt><dd>${value(node[k])}</dd>`)}
</dl></section>
<section aria-labelledby="h-ring"><h2 id="h-ring">Ring</h2>
<dl class="fields">
<dt>Owner conductor</dt><dd>${owner ?? html`<span class="muted">none alive</span>`}</dd>
<dt>Replicas</dt><dd>${replicas.length > 0 ? replicas.join(', ') : html`<span class="muted">none</span>`}</dd>
<dt>Affinity</dt><dd>${affinity ?? html`<span class="muted">none</span>`}</dd>
</dl>
<h3>Boot files</h3>${bootState}
</section>
</div>
</div>`;
}

/** The node's details (live): ports, history and every field. */
async function detailsSection(app: FastifyInstance, deps: WebDeps, request: FastifyRequest, node: ApiNode): Promise<Html> {
  const [ports, history] = await Promise.all([
    callApi(app, request, 'GET', `/v1/nodes/${node.uuid}/ports/detail`),
    deps.store.db
      .selectFrom('node_history')
      .innerJoin('nodes', 'nodes.id', 'node_history.node_id')
      .select(['node_history.created_at', 'node_history.severity', 'node_history.event_type', 'node_history.event', 'node_history.conductor', 'node_history.user'])
      .where('nodes.uuid', '=', node.uuid)
      .orderBy('node_history.id', 'desc')
      .limit(HISTORY_SHOWN)
      .execute(),
  ]);
  const portRows = ((ports.body as { ports?: Array<Record<string, unknown>> } | null)?.ports ?? []).map(
    (p) => html`<tr><td class="mono">${String(p.address ?? '')}</td><td>${p.pxe_enabled === false ? 'no' : 'yes'}</td><td class="mono">${String(p.uuid ?? '')}</td></tr>`,
  );
  const rest = Object.keys(node).filter((k) => !HEADLINE.includes(k) && k !== 'links' && k !== 'ports' && k !== 'portgroups' && k !== 'states' && k !== 'volume').sort();
  return html`<div id="node-details" ${liveAttrs(`/ui/nodes/${node.uuid}/live/details`, `node-${node.uuid}`)}>
<section aria-labelledby="h-ports"><h2 id="h-ports">Ports</h2>
${portRows.length === 0 ? html`<p class="muted">No ports.</p>` : html`<div class="table-wrap"><table><thead><tr><th scope="col">MAC address</th><th scope="col">PXE</th><th scope="col">UUID</th></tr></thead><tbody>${portRows}</tbody></table></div>`}
</section>
<section aria-labelledby="h-history"><h2 id="h-history">History <span class="muted">(latest ${HISTORY_SHOWN}, newest first)</span></h2>
${history.length === 0 ? html`<p class="muted">No events.</p>` : html`<div class="table-wrap"><table><thead><tr><th scope="col">When</th><th scope="col">Severity</th><th scope="col">Type</th><th scope="col">Event</th><th scope="col">Conductor</th><th scope="col">User</th></tr></thead><tbody>${history.map(
      (e) => html`<tr><td class="mono">${new Date(e.created_at as unknown as string).toISOString()}</td><td>${e.severity}</td><td>${e.event_type}</td><td>${e.event}</td><td>${e.conductor ?? ''}</td><td>${e.user ?? ''}</td></tr>`,
    )}</tbody></table></div>`}
</section>
<section aria-labelledby="h-fields"><h2 id="h-fields">All fields</h2>
<dl class="fields">${rest.map((k) => html`<dt>${k}</dt><dd>${value(node[k])}</dd>`)}</dl>
</section>
</div>`;
}

/** The node page; `notice`/`error` are an action's outcome shown at the top (error as an alert). */
export async function renderNodePage(app: FastifyInstance, deps: WebDeps, request: FastifyRequest, ident: string, outcome: { notice?: string; error?: string } = {}): Promise<string> {
  const node = await readNode(app, request, ident);
  const [summary, details] = await Promise.all([summarySection(deps, node), detailsSection(app, deps, request, node)]);
  const title = node.name ?? node.uuid;
  const body = html`<p><a href="/ui/nodes">← All nodes</a></p>
${summary}
<section aria-labelledby="h-actions"><h2 id="h-actions">Actions</h2>
<div id="action-result" aria-live="polite">${outcome.error !== undefined ? html`<p class="alert" role="alert">${outcome.error}</p>` : ''}${outcome.notice !== undefined ? html`<p class="notice" role="status">${outcome.notice}</p>` : ''}</div>
${actionForms(node.uuid)}</section>
${details}`;
  return page({ title: `Node ${title}`, nav: 'nodes', body }).text;
}

export function nodePage(app: FastifyInstance, deps: WebDeps): void {
  type Req = FastifyRequest<{ Params: { ident: string }; Querystring: Record<string, string | undefined> }>;
  app.get('/ui/nodes/:ident', async (request: Req, reply) => {
    const done = request.query.done;
    const outcome = done !== undefined && /^[a-z-]{1,30}$/.test(done) ? { notice: `${done.replace(/-/g, ' ')}: accepted by the API; the state below follows as it happens.` } : {};
    reply.type('text/html; charset=utf-8').header('Cache-Control', 'no-store');
    return renderNodePage(app, deps, request, request.params.ident, outcome);
  });
  app.get('/ui/nodes/:ident/live/:part', async (request: FastifyRequest<{ Params: { ident: string; part: string } }>, reply) => {
    const part = request.params.part;
    if (part !== 'summary' && part !== 'details') throw new NotFound(`no part ${JSON.stringify(part.slice(0, 40))} of a node page; parts: summary, details`);
    const node = await readNode(app, request, request.params.ident);
    reply.type('text/html; charset=utf-8').header('Cache-Control', 'no-store');
    return (part === 'summary' ? await summarySection(deps, node) : await detailsSection(app, deps, request, node)).text;
  });
}
