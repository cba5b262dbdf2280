/**
 * A node's management extras under `/v1/nodes/{node}/management`: `PUT …/inject_nmi` (API 1.29)
 * and the indicators (LEDs, API 1.63): `GET …/indicators`, `GET`/`PUT …/indicators/{name@component}`
 * (Ironic's spelling of an indicator: its name, `@`, its component). Each goes to the node's
 * conductor, whose management interface refuses what it cannot do (400). 404 below each version.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { isIndicatorState, INDICATOR_STATES } from '../../drivers/index.js';
import type { IndicatorMap } from '../../drivers/index.js';
import { getNode } from '../../nodes/node-store.js';
import type { ConductorRouter } from '../conductor-router.js';
import { baseUrl } from '../links.js';
import { requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** Ironic's `allow_inject_nmi`. */
export const INJECT_NMI_SINCE: Microversion = [1, 29];
/** Indicators came with 1.63 (Ironic's `MINOR_63_INDICATORS`). */
export const INDICATORS_SINCE: Microversion = [1, 63];

/** `led@system` → name `led`, component `system` (split at the first `@`, as Ironic's). */
export function parseIndicator(raw: string): { name: string; component: string } {
  const at = raw.indexOf('@');
  if (at <= 0 || at === raw.length - 1 || raw.length > 255) throw new InvalidParameter(`indicator: malformed indicator name ${JSON.stringify(raw.slice(0, 300))}; expected name@component, e.g. led@system`);
  return { name: raw.slice(0, at), component: raw.slice(at + 1) };
}

type Node = { Params: { ident: string } };
type Indicator = { Params: { ident: string; indicator: string }; Querystring: { state?: string } };

export function nodeManagementRoutes(app: FastifyInstance, options: { store: Store; config: Config; router: ConductorRouter }): void {
  const { store, router, config } = options;
  const indicatorsGate = (request: FastifyRequest) => requireVersion(request.apiVersion, INDICATORS_SINCE, request.url);

  app.put<Node>('/v1/nodes/:ident/management/inject_nmi', async (request, reply) => {
    requireVersion(request.apiVersion, INJECT_NMI_SINCE, request.url);
    const body = request.body;
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body) || Object.keys(body).length > 0)) {
      throw new InvalidParameter('request body: inject_nmi takes none (or {})');
    }
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'inject_nmi');
    return reply.code(204).send();
  });

  app.get<Node>('/v1/nodes/:ident/management/indicators', async (request) => {
    indicatorsGate(request);
    const node = await getNode(store, request.params.ident);
    const map = await router.call<IndicatorMap>(node, 'GET', 'indicators');
    const base = baseUrl(request, config.api.public_endpoint);
    const indicators = Object.entries(map).flatMap(([component, names]) =>
      Object.entries(names).map(([name, info]) => ({
        name: `${name}@${component}`,
        component,
        readonly: info.readonly ?? true,
        states: info.states ?? [],
        links: [
          { href: `${base}/v1/nodes/${encodeURIComponent(request.params.ident)}/management/indicators/${encodeURIComponent(name)}@${encodeURIComponent(component)}`, rel: 'self' },
          { href: `${base}/nodes/${encodeURIComponent(request.params.ident)}/management/indicators/${encodeURIComponent(name)}@${encodeURIComponent(component)}`, rel: 'bookmark' },
        ],
      })),
    );
    return { indicators };
  });

  app.get<Indicator>('/v1/nodes/:ident/management/indicators/:indicator', async (request) => {
    indicatorsGate(request);
    const { name, component } = parseIndicator(request.params.indicator);
    const node = await getNode(store, request.params.ident);
    return router.call<{ state: string }>(node, 'POST', 'indicator_state', { component, name });
  });

  app.put<Indicator>('/v1/nodes/:ident/management/indicators/:indicator', async (request, reply) => {
    indicatorsGate(request);
    const { name, component } = parseIndicator(request.params.indicator);
    const body = request.body;
    const fromBody = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).state : undefined;
    const state = fromBody ?? request.query.state;
    if (!isIndicatorState(state)) throw new InvalidParameter(`state: expected one of ${INDICATOR_STATES.join(', ')}, got ${JSON.stringify(state) ?? 'nothing'}`);
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'set_indicator_state', { component, name, state });
    return reply.code(204).send();
  });
}
