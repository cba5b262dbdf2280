/**
 * `GET /ui/ring`: each conductor group's live ring — conductors with their share of the nodes (count
 * and percentage), alive or dead by the database clock, the nodes each is a replica for — drawn and
 * tabled; and a what-if panel (a GET form, so its answer is a bookmarkable URL): add or remove
 * conductors and see how many nodes, and which, would change owner, from the planner
 * `ironring ring plan` uses (`ring/ring-plan.ts`) over the group's real nodes.
 * `GET /ui/ring/fragment` is the live part, refetched on the `ring` and `nodes` events.
 */
import type { FastifyInstance } from 'fastify';
import { listConductors } from '../../cluster/membership.js';
import type { ConductorState } from '../../cluster/membership.js';
import { conductorRingOptions } from '../../cluster/ring-options.js';
import { planRing } from '../../ring/ring-plan.js';
import type { RingPlan } from '../../ring/ring-plan.js';
import type { RingHost } from '../../ring/index.js';
import type { WebDeps, PageModule } from '../deps.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { liveAttrs } from '../sse.js';
import { ringDiagram } from '../svg.js';
import { BadParameter, answer, badge, duration, percent, values } from './page-kit.js';
import type { Query } from './page-kit.js';

/** Conductors a what-if may add and remove in all. */
export const MAX_WHAT_IF_HOSTS = 50;
/** Moved nodes listed by name; the rest are counted. */
const MOVED_SHOWN = 100;
/** A conductor name a what-if may add (its weight after `=`, 1–1000, optional). */
const NEW_HOST = /^([A-Za-z0-9][A-Za-z0-9._:-]{0,254})(?:=([1-9][0-9]{0,2}|1000))?$/;

interface NodeRow {
  uuid: string;
  name: string | null;
  conductor_group: string;
}

/** One conductor as the page shows it. */
interface HostLine {
  name: string;
  alive: boolean;
  online: boolean;
  weight: number;
  owned: number;
  replicaOf: number;
  /** Exact fraction of the group's key space (live conductors only). */
  keyShare: number | null;
  heartbeatAge: number | null;
}

interface GroupView {
  group: string;
  live: RingHost[];
  nodes: NodeRow[];
  hosts: HostLine[];
  unowned: number;
}

interface RingView {
  replicas: number;
  mode: string;
  groups: GroupView[];
  now: Date;
}

const groupName = (g: string): string => (g === '' ? '(default group)' : g);

/** The live rings, the conductors and the nodes, per group, as they are now. */
async function readView(deps: WebDeps): Promise<RingView> {
  const { store, config } = deps;
  const [rings, conductors, nodes, now] = await Promise.all([
    deps.rings.current(),
    listConductors(store, config.conductor.heartbeat_timeout),
    store.db.selectFrom('nodes').select(['uuid', 'name', 'conductor_group']).orderBy('uuid').execute(),
    store.now(),
  ]);
  const replicas = config.conductor.replicas;
  const names = new Set<string>([...rings.groups(), ...conductors.map((c) => c.conductorGroup), ...nodes.map((n) => n.conductor_group)]);
  const groups = [...names].sort().map((group): GroupView => {
    const ring = rings.ring(group);
    const members = rings.members().filter((m) => m.group === group);
    const live = (ring?.hosts ?? []).map((name) => ({ name, weight: members.find((m) => m.name === name)?.weight ?? 1 }));
    const groupNodes = nodes.filter((n) => n.conductor_group === group);
    const owned = new Map<string, number>();
    const replicaOf = new Map<string, number>();
    let unowned = 0;
    for (const n of groupNodes) {
      const hosts = ring?.lookup(n.uuid, { replicas }) ?? [];
      if (hosts.length === 0) unowned++;
      hosts.forEach((h, i) => (i === 0 ? owned : replicaOf).set(h, ((i === 0 ? owned : replicaOf).get(h) ?? 0) + 1));
    }
    const shares = ring?.shares() ?? new Map<string, number>();
    const rows = conductors.filter((c) => c.conductorGroup === group);
    const line = (name: string, row: ConductorState | undefined): HostLine => ({
      name,
      alive: live.some((h) => h.name === name),
      online: row?.online ?? true,
      weight: row?.weight ?? 1,
      owned: owned.get(name) ?? 0,
      replicaOf: replicaOf.get(name) ?? 0,
      keyShare: shares.get(name) ?? null,
      heartbeatAge: row ? (now.getTime() - row.updatedAt.getTime()) / 1000 : null,
    });
    const hosts = [...live.map((h) => line(h.name, rows.find((r) => r.hostname === h.name))), ...rows.filter((r) => !live.some((h) => h.name === r.hostname)).map((r) => line(r.hostname, r))];
    return { group, live, nodes: groupNodes, hosts, unowned };
  });
  return { replicas, mode: config.conductor.hash_ring_mode, groups, now };
}

function hostTable(view: GroupView, replicas: number): Html {
  const total = view.nodes.length;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Conductors of ${groupName(view.group)}"><table>
<caption>Conductors of ${groupName(view.group)}</caption>
<thead><tr><th scope="col">Conductor</th><th scope="col">State</th><th scope="col">Nodes owned</th><th scope="col">Share of nodes</th><th scope="col">Key-space share</th>${replicas > 1 ? html`<th scope="col">Replica for</th>` : ''}<th scope="col">Weight</th><th scope="col">Heartbeat age</th></tr></thead>
<tbody>
${view.hosts.map(
  (h) => html`<tr><th scope="row">${h.name}</th><td>${h.alive ? badge('alive', 'ok') : badge(h.online ? 'dead (heartbeat expired)' : 'stopped', 'bad')}</td><td>${h.owned}</td><td>${total === 0 ? '—' : percent(h.owned / total)}</td><td>${h.keyShare === null ? '—' : percent(h.keyShare)}</td>${replicas > 1 ? html`<td>${h.replicaOf}</td>` : ''}<td>${h.weight}</td><td>${h.heartbeatAge === null ? '—' : duration(h.heartbeatAge)}</td></tr>`,
)}
</tbody></table></div>`;
}

/** The live part: every group's ring and table. */
function ringsSection(view: RingView, url: string): Html {
  return html`<section id="rings" aria-labelledby="rings-h" ${liveAttrs(url, ['ring', 'nodes'])}>
<h2 id="rings-h">Live rings</h2>
<p class="live-note">Mode ${view.mode}, ${view.replicas} conductor(s) per node (owner${view.replicas > 1 ? ' and replicas' : ''}). Alive and dead by the database clock, as of ${view.now.toISOString()}. Updates by itself when membership or nodes change.</p>
${view.groups.length === 0 ? html`<p>No conductor has registered and no node is enrolled yet.</p>` : ''}
${view.groups.map(
  (g, i) => html`<article aria-labelledby="ring-${i}-h">
<h3 id="ring-${i}-h">Group ${groupName(g.group)}: ${g.live.length} live conductor(s), ${g.nodes.length} node(s)</h3>
${g.unowned > 0 ? html`<p class="alert" role="status">${g.unowned} node(s) of this group have no live conductor: nothing manages them until one starts.</p>` : ''}
<div class="ring-grid">
${ringDiagram({
  id: `ring-${i}`,
  title: `Ring of ${groupName(g.group)}`,
  centre: groupName(g.group),
  segments: g.hosts.filter((h) => h.alive).map((h) => ({ label: h.name, value: h.owned, share: g.nodes.length > 0 ? h.owned / g.nodes.length : (h.keyShare ?? 0) })),
})}
${hostTable(g, view.replicas)}
</div>
</article>`,
)}
</section>`;
}

/** What the what-if form asks. */
interface WhatIf {
  group: string;
  add: RingHost[];
  remove: string[];
}

/** Splits a text field on commas and whitespace. */
function words(list: string[]): string[] {
  return list.flatMap((v) => v.split(/[\s,]+/)).filter((w) => w.length > 0);
}

/** The what-if question from the query, checked against the group's live ring; null when none asked. */
export function parseWhatIf(query: Query, view: { groups: ReadonlyArray<{ group: string; live: readonly RingHost[] }> }): WhatIf | null {
  const groupParam = values(query, 'group', 1)[0];
  const add = words(values(query, 'add', MAX_WHAT_IF_HOSTS));
  // Each `remove` is one name as the checkboxes send it (a name may hold any character).
  const remove = values(query, 'remove', MAX_WHAT_IF_HOSTS).filter((v) => v !== '');
  if (groupParam === undefined && add.length === 0 && remove.length === 0) return null;
  const group = groupParam ?? view.groups[0]?.group ?? '';
  const target = view.groups.find((g) => g.group === group);
  if (target === undefined) throw new BadParameter('group', 'no such conductor group');
  if (add.length + remove.length > MAX_WHAT_IF_HOSTS) throw new BadParameter('add', `at most ${MAX_WHAT_IF_HOSTS} conductors added and removed in all`);
  const live = new Set(target.live.map((h) => h.name));
  const added: RingHost[] = [];
  for (const word of add) {
    const m = NEW_HOST.exec(word);
    if (!m) throw new BadParameter('add', 'a conductor name is letters, digits and . _ : - (at most 255), optionally =weight (1–1000)');
    if (live.has(m[1]!) || added.some((h) => h.name === m[1])) throw new BadParameter('add', `${m[1]} is already on the ring`);
    added.push({ name: m[1]!, weight: m[2] === undefined ? 1 : Number(m[2]) });
  }
  const removed = [...new Set(remove)];
  for (const name of removed) if (!live.has(name)) throw new BadParameter('remove', 'not a live conductor of the group');
  if (live.size - removed.length + added.length === 0) throw new BadParameter('remove', 'the change would leave no conductor');
  return { group, add: added, remove: removed };
}

/** The plan for `ask` over the group's real nodes, with the rings' own options. */
export function planWhatIf(deps: Pick<WebDeps, 'config'>, group: { live: readonly RingHost[]; nodes: readonly { uuid: string }[] }, ask: WhatIf): RingPlan {
  const options = conductorRingOptions(deps.config.conductor);
  return planRing({
    before: group.live,
    added: ask.add,
    removed: ask.remove,
    keys: group.nodes.map((n) => n.uuid),
    mode: options.mode ?? 'balanced',
    ...(options.partitions === undefined ? {} : { partitions: options.partitions }),
    replicas: deps.config.conductor.replicas,
  });
}

function whatIfForm(view: RingView, ask: WhatIf | null): Html {
  const group = ask?.group ?? view.groups[0]?.group ?? '';
  const target = view.groups.find((g) => g.group === group);
  return html`<section aria-labelledby="whatif-h">
<h2 id="whatif-h">What if…</h2>
<form class="filters" method="get" action="/ui/ring">
<label>Conductor group <select name="group">${view.groups.map((g) => html`<option value="${g.group}"${g.group === group ? html` selected` : ''}>${groupName(g.group)}</option>`)}</select></label>
<label>Add conductors (comma-separated, name or name=weight) <input name="add" maxlength="2000" value="${ask?.add.map((h) => (h.weight === 1 ? h.name : `${h.name}=${h.weight}`)).join(', ') ?? ''}"></label>
<fieldset><legend>Remove conductors${target && target.group !== '' ? html` of ${target.group}` : ''}</legend>
${(target?.live ?? []).map((h, i) => html`<label><input type="checkbox" name="remove" value="${h.name}" id="rm-${i}"${ask?.remove.includes(h.name) ? html` checked` : ''}> ${h.name}</label>`)}
${(target?.live.length ?? 0) === 0 ? html`<p class="muted">No live conductor in this group.</p>` : ''}
</fieldset>
<button type="submit">Plan</button>
</form>
</section>`;
}

function renderAnswer(deps: WebDeps, view: RingView, ask: WhatIf): Html {
  const group = view.groups.find((g) => g.group === ask.group)!;
  const plan = planWhatIf(deps, group, ask);
  const change = plan.change!;
  const names = new Map(group.nodes.map((n) => [n.uuid, n.name]));
  const shown = change.movedKeys.slice(0, MOVED_SHOWN);
  const total = group.nodes.length;
  return html`<section id="whatif-answer" aria-labelledby="answer-h">
<h2 id="answer-h">Plan: ${[...change.added.map((h) => `+${h}`), ...change.removed.map((h) => `−${h}`)].join(' ')} in ${groupName(ask.group)}</h2>
<p role="status"><strong>${change.moved} of ${total} nodes would change owner</strong> (${percent(change.movedFraction)}; the least any ring must move is ${percent(change.idealFraction)}).${plan.replicas > 1 ? ` ${change.replicaSetsChanged} nodes would get a different set of ${plan.replicas} conductors.` : ''} Computed by the planner of <code>ironring ring plan</code> over the ring as of ${view.now.toISOString()}.</p>
<div class="table-wrap" tabindex="0" role="region" aria-label="Each conductor before and after"><table>
<caption>Each conductor before and after</caption>
<thead><tr><th scope="col">Conductor</th><th scope="col">Nodes before${plan.replicas > 1 ? ' (owner or replica)' : ''}</th><th scope="col">Nodes after</th><th scope="col">Key-space share before</th><th scope="col">Key-space share after</th></tr></thead>
<tbody>${plan.hosts.map((h) => html`<tr><th scope="row">${h.name}</th><td>${h.nodes}</td><td>${h.nodesAfter}</td><td>${h.share === null ? '—' : percent(h.share)}</td><td>${h.shareAfter === null ? '—' : percent(h.shareAfter)}</td></tr>`)}</tbody>
</table></div>
${change.flows.length > 0 ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Where the moved nodes go"><table><caption>Where the moved nodes go</caption><thead><tr><th scope="col">From</th><th scope="col">To</th><th scope="col">Nodes</th></tr></thead>
<tbody>${change.flows.map((f) => html`<tr><td>${f.from}</td><td>${f.to}</td><td>${f.nodes}</td></tr>`)}</tbody></table></div>` : ''}
${shown.length > 0 ? html`<details><summary>The nodes that would move${change.moved > shown.length ? ` (first ${shown.length} of ${change.moved})` : ''}</summary>
<ul class="mono">${shown.map((k) => html`<li><a href="/ui/nodes/${k.key}">${names.get(k.key) ?? k.key}</a>: ${k.from} → ${k.to}</li>`)}</ul></details>` : ''}
</section>`;
}

export const ringPages: PageModule = (app: FastifyInstance, deps: WebDeps) => {
  app.get('/ui/ring', (request, reply) =>
    answer(request, reply, { title: 'Ring', nav: 'ring', fragment: false }, async (query) => {
      const view = await readView(deps);
      const ask = parseWhatIf(query, view);
      return html`${ringsSection(view, '/ui/ring/fragment')}
${whatIfForm(view, ask)}
${ask !== null && (ask.add.length > 0 || ask.remove.length > 0) ? renderAnswer(deps, view, ask) : ''}`;
    }),
  );
  app.get('/ui/ring/fragment', (request, reply) =>
    answer(request, reply, { title: 'Ring', nav: 'ring', fragment: true }, async () => ringsSection(await readView(deps), '/ui/ring/fragment')),
  );
};
