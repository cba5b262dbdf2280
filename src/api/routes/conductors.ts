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

export interface ConductorRouteOptions {
  store: Store;
  heartbeatTimeout: number;
  publicEndpoint: string;
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

function parseFields(raw: string | undefined): readonly string[] | undefined {
  if (raw === undefined) return undefined;
  const fields = raw.split(',').map((f) => f.trim()).filter(Boolean);
  for (const f of fields) {
    if (!(ALL_FIELDS as readonly string[]).includes(f)) {
      throw new InvalidParameter(`fields: unknown conductor field ${JSON.stringify(f)}; valid fields: ${ALL_FIELDS.join(', ')}`);
    }
  }
  return fields;
}

function parseDetail(raw: string | undefined): boolean {
  if (raw === undefined) return false;
  const v = raw.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new InvalidParameter(`detail: expected a boolean, got ${JSON.stringify(raw)}`);
}

export function conductorRoutes(app: FastifyInstance, options: ConductorRouteOptions): void {
  app.get<{ Querystring: { detail?: string; fields?: string } }>('/v1/conductors', async (request) => {
    requireVersion(request.apiVersion, [1, 49], request.url);
    const fields = parseFields(request.query.fields);
    const detail = parseDetail(request.query.detail);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const shown = fields ?? (detail ? ALL_FIELDS : LIST_FIELDS);
    const base = baseUrl(request, options.publicEndpoint);
    const conductors = await listConductors(options.store, options.heartbeatTimeout);
    return { conductors: conductors.map((c) => render(c, base, shown)) };
  });

  app.get<{ Params: { hostname: string }; Querystring: { fields?: string } }>('/v1/conductors/:hostname', async (request) => {
    requireVersion(request.apiVersion, [1, 49], request.url);
    const fields = parseFields(request.query.fields) ?? ALL_FIELDS;
    const [conductor] = await listConductors(options.store, options.heartbeatTimeout, request.params.hostname);
    if (!conductor) throw new NotFound(`conductor ${request.params.hostname} could not be found`);
    return render(conductor, baseUrl(request, options.publicEndpoint), fields);
  });
}
