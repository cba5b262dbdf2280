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
import { parseBool, parseFields } from '../query.js';

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

export function conductorRoutes(app: FastifyInstance, options: ConductorRouteOptions): void {
  app.get<{ Querystring: { detail?: string; fields?: string } }>('/v1/conductors', async (request) => {
    requireVersion(request.apiVersion, [1, 49], request.url);
    const fields = parseFields(request.query.fields, ALL_FIELDS, 'conductor');
    const detail = parseBool('detail', request.query.detail) ?? false;
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const shown = fields ?? (detail ? ALL_FIELDS : LIST_FIELDS);
    const base = baseUrl(request, options.publicEndpoint);
    const conductors = await listConductors(options.store, options.heartbeatTimeout);
    return { conductors: conductors.map((c) => render(c, base, shown)) };
  });

  app.get<{ Params: { hostname: string }; Querystring: { fields?: string } }>('/v1/conductors/:hostname', async (request) => {
    requireVersion(request.apiVersion, [1, 49], request.url);
    const fields = parseFields(request.query.fields, ALL_FIELDS, 'conductor') ?? ALL_FIELDS;
    const [conductor] = await listConductors(options.store, options.heartbeatTimeout, request.params.hostname);
    if (!conductor) throw new NotFound(`conductor ${request.params.hostname} could not be found`);
    return render(conductor, baseUrl(request, options.publicEndpoint), fields);
  });
}
