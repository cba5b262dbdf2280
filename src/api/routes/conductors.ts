/**
 * `GET /v1/conductors` and `GET /v1/conductors/{hostname}` in the Ironic API's shape (microversion
 * 1.49 and later, 404 before, as in Ironic). `alive` is judged by the database clock.
 */
import type { FastifyInstance } from 'fastify';
import { listConductors } from '../../cluster/membership.js';
import type { ConductorState } from '../../cluster/membership.js';
import { InvalidParameter, NotFound } from '../../common/errors.js';
import type { Store } from '../../db/connect.js';
import { apiTime, baseUrl, resourceLinks } from '../links.js';
import { requireVersion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

export interface ConductorRouteOptions {
  store: Store;
  heartbeatTimeout: number;
  publicEndpoint: string;
  /** The largest page (`[api] max_limit`); pages are this long when the client names no limit. */
  maxLimit: number;
}

/** Fields a conductor list may be sorted by (Ironic refuses `alive` and `drivers`); `id` is creation order. */
export const CONDUCTOR_SORT_KEYS = ['hostname', 'conductor_group', 'created_at', 'updated_at', 'id'] as const;
type ConductorSortKey = (typeof CONDUCTOR_SORT_KEYS)[number];

function sortValue(c: ConductorState, key: ConductorSortKey): string | number {
  switch (key) {
    case 'hostname': return c.hostname;
    case 'conductor_group': return c.conductorGroup;
    case 'created_at': return new Date(c.createdAt).getTime();
    case 'updated_at': return new Date(c.updatedAt).getTime();
    case 'id': return c.id;
  }
}

/**
 * One page of conductors: sorted by the key with ties in creation order (both in `dir`, as Ironic's
 * `(sort_key, id)`), after the conductor named by `marker`. Conductors are few, so this is done in
 * memory on the one membership read.
 */
function pageOf(all: ConductorState[], key: ConductorSortKey, dir: 'asc' | 'desc', limit: number, marker: string | undefined): ConductorState[] {
  const sign = dir === 'asc' ? 1 : -1;
  const sorted = [...all].sort((a, b) => {
    const va = sortValue(a, key);
    const vb = sortValue(b, key);
    return sign * (va < vb ? -1 : va > vb ? 1 : a.id - b.id);
  });
  let start = 0;
  if (marker !== undefined) {
    const at = sorted.findIndex((c) => c.hostname === marker);
    if (at < 0) throw new InvalidParameter(`marker: no conductor with hostname ${JSON.stringify(marker)}`);
    start = at + 1;
  }
  return sorted.slice(start, start + limit);
}

const LIST_FIELDS = ['hostname', 'conductor_group', 'alive'] as const;
const ALL_FIELDS = ['hostname', 'conductor_group', 'alive', 'drivers', 'created_at', 'updated_at'] as const;

function render(c: ConductorState, base: string, fields: readonly string[]): Record<string, unknown> {
  const full: Record<string, unknown> = {
    hostname: c.hostname,
    conductor_group: c.conductorGroup,
    alive: c.alive,
    drivers: c.drivers,
    created_at: apiTime(c.createdAt),
    updated_at: apiTime(c.updatedAt),
  };
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f] = full[f];
  out.links = resourceLinks(base, 'conductors', c.hostname);
  return out;
}

export function conductorRoutes(app: FastifyInstance, options: ConductorRouteOptions): void {
  app.get<{ Querystring: Record<string, string | undefined> }>('/v1/conductors', async (request) => {
    requireVersion(request.apiVersion, [1, 49], request.url);
    const q = request.query;
    const fields = parseFields(q.fields, ALL_FIELDS, 'conductor');
    const detail = parseBool('detail', q.detail) ?? false;
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const sortKey = parseChoice('sort_key', q.sort_key, CONDUCTOR_SORT_KEYS, 'hostname');
    const sortDir = parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc');
    const limit = parseLimit(q.limit, options.maxLimit);
    const shown = fields ?? (detail ? ALL_FIELDS : LIST_FIELDS);
    const base = baseUrl(request, options.publicEndpoint);
    const page = pageOf(await listConductors(options.store, options.heartbeatTimeout), sortKey, sortDir, limit, q.marker);
    const body: Record<string, unknown> = { conductors: page.map((c) => render(c, base, shown)) };
    if (page.length === limit && page.length > 0) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(q)) if (v !== undefined && k !== 'marker' && k !== 'limit') params.set(k, v);
      params.set('limit', String(limit));
      params.set('marker', page[page.length - 1]!.hostname);
      body.next = `${base}/v1/conductors?${params.toString()}`;
    }
    return body;
  });

  app.get<{ Params: { hostname: string }; Querystring: { fields?: string } }>('/v1/conductors/:hostname', async (request) => {
    requireVersion(request.apiVersion, [1, 49], request.url);
    const fields = parseFields(request.query.fields, ALL_FIELDS, 'conductor') ?? ALL_FIELDS;
    const [conductor] = await listConductors(options.store, options.heartbeatTimeout, request.params.hostname);
    if (!conductor) throw new NotFound(`conductor ${request.params.hostname} could not be found`);
    return render(conductor, baseUrl(request, options.publicEndpoint), fields);
  });
}
