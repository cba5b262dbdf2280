/**
 * Pieces the node pages share: state labels that read without colour (a symbol and the words, the
 * colour only repeats them), and the parsing of the nodes list's query string with a 400 that names
 * the parameter.
 */
import { InvalidParameter } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import { FAILURE_STATES, PROVISION_STATES, STABLE_STATES } from '../../nodes/states.js';
import { html } from '../html.js';
import type { Html } from '../html.js';

type Tone = 'ok' | 'warn' | 'bad' | 'info';

const SYMBOL: Record<Tone, string> = { ok: '●', warn: '◐', bad: '✖', info: '○' };

/** A state as a label: symbol + words; `tone` only adds colour. */
export function badge(text: string, tone: Tone): Html {
  return html`<span class="state ${tone}"><span aria-hidden="true">${SYMBOL[tone]} </span>${text}</span>`;
}

/** The tone of a provision state: failures bad, stable states fine, the rest in progress. */
export function provisionBadge(state: string | null, target: string | null = null): Html {
  if (state === null) return html`<span class="muted">—</span>`;
  const tone: Tone = (FAILURE_STATES as readonly string[]).includes(state) || state === 'error' ? 'bad' : (STABLE_STATES as readonly string[]).includes(state) ? 'ok' : 'warn';
  return html`${badge(state, tone)}${target ? html` <span class="muted">→ ${target}</span>` : ''}`;
}

export function powerBadge(state: string | null, target: string | null = null): Html {
  if (state === null) return html`<span class="muted">unknown</span>`;
  const tone: Tone = state === 'power on' ? 'ok' : state === 'power off' ? 'info' : 'bad';
  return html`${badge(state, tone)}${target ? html` <span class="muted">→ ${target}</span>` : ''}`;
}

export function maintenanceBadge(on: boolean, reason: string | null = null): Html {
  return on ? html`${badge('maintenance', 'warn')}${reason ? html` <span class="muted">${reason}</span>` : ''}` : html`<span class="muted">no</span>`;
}

/** The power states the list filters by. */
export const POWER_FILTERS = ['power on', 'power off', 'error', 'none'] as const;

/** The nodes list's query: filters, page size, and a keyset cursor (a node's row id). */
export interface NodesQuery {
  provision_state?: string;
  power_state?: string;
  owner?: string;
  conductor_group?: string;
  maintenance?: boolean;
  /** Name or uuid: a whole uuid matches that node; other text, names containing it or uuids starting with it. */
  q?: string;
  limit: number;
  /** Nodes after this row id (next page) … */
  after?: number;
  /** … or before it (previous page). */
  before?: number;
}

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;
const MAX_TEXT = 255;
const KNOWN = new Set(['provision_state', 'power_state', 'owner', 'conductor_group', 'maintenance', 'q', 'limit', 'after', 'before']);

function text(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw.length > MAX_TEXT) throw new InvalidParameter(`${name}: at most ${MAX_TEXT} characters, got ${raw.length}`);
  return raw;
}

function rowId(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw)) throw new InvalidParameter(`${name}: expected a node position (a whole number), got ${JSON.stringify(raw.slice(0, 40))}`);
  return Number(raw);
}

/** Reads the list's query string; unknown parameters and bad values are 400s naming the parameter. */
export function parseNodesQuery(query: Record<string, string | undefined>): NodesQuery {
  for (const name of Object.keys(query)) {
    if (!KNOWN.has(name)) throw new InvalidParameter(`${name}: unknown query parameter; known: ${[...KNOWN].join(', ')}`);
  }
  const out: NodesQuery = { limit: DEFAULT_LIMIT };
  const provision = text('provision_state', query.provision_state);
  if (provision !== undefined) {
    if (!(PROVISION_STATES as readonly string[]).includes(provision)) throw new InvalidParameter(`provision_state: unknown state ${JSON.stringify(provision)}`);
    out.provision_state = provision;
  }
  const power = text('power_state', query.power_state);
  if (power !== undefined) {
    if (!(POWER_FILTERS as readonly string[]).includes(power)) throw new InvalidParameter(`power_state: expected one of ${POWER_FILTERS.join(', ')}, got ${JSON.stringify(power)}`);
    out.power_state = power;
  }
  const owner = text('owner', query.owner);
  if (owner !== undefined) out.owner = owner;
  const group = text('conductor_group', query.conductor_group);
  if (group !== undefined) out.conductor_group = group.toLowerCase();
  const maintenance = text('maintenance', query.maintenance);
  if (maintenance !== undefined) {
    if (maintenance !== 'true' && maintenance !== 'false') throw new InvalidParameter(`maintenance: expected true or false, got ${JSON.stringify(maintenance.slice(0, 40))}`);
    out.maintenance = maintenance === 'true';
  }
  const q = text('q', query.q?.trim());
  if (q !== undefined) out.q = q;
  if (query.limit !== undefined && query.limit !== '') {
    if (!/^\d{1,7}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > MAX_LIMIT) {
      throw new InvalidParameter(`limit: expected a whole number from 1 to ${MAX_LIMIT}, got ${JSON.stringify(query.limit.slice(0, 40))}`);
    }
    out.limit = Number(query.limit);
  }
  const after = rowId('after', query.after);
  const before = rowId('before', query.before);
  if (after !== undefined && before !== undefined) throw new InvalidParameter('before: give after or before, not both');
  if (after !== undefined) out.after = after;
  if (before !== undefined) out.before = before;
  return out;
}

/** The query string of `query` with `change` applied (undefined removes a key); filters first, cursor last. */
export function nodesUrl(query: NodesQuery, change: Partial<Record<keyof NodesQuery, string | number | boolean | undefined>> = {}): string {
  const merged: Record<string, unknown> = { ...query, ...change };
  const params = new URLSearchParams();
  for (const key of ['q', 'provision_state', 'power_state', 'owner', 'conductor_group', 'maintenance', 'limit', 'after', 'before'] as const) {
    const v = merged[key];
    if (v === undefined || (key === 'limit' && v === DEFAULT_LIMIT)) continue;
    params.set(key, String(v));
  }
  const qs = params.toString();
  return qs === '' ? '/ui/nodes' : `/ui/nodes?${qs}`;
}

/** Whether `q` is a whole uuid. */
export function isUuid(q: string): boolean {
  return UUID_PATTERN.test(q);
}
