/**
 * A node's history (Ironic's API 1.78): `GET /v1/nodes/{node}/history` — the events its conductors
 * recorded, oldest first, paged with `limit` and `marker` (an event's uuid); `uuid`, `created_at`,
 * `severity` and `event` (one longer than 255 characters cut to 251 and `...`, as Ironic's) by default, every field with `detail=true` (or at
 * `/history/detail`, where the stock client's `--long` asks) — and `GET …/history/{event}`, one event
 * in full. Below 1.78 neither exists (404, as Ironic's router).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { apiTime } from '../../common/api-time.js';
import { InvalidParameter, NotFound } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { getHistoryEvent, listHistory } from '../../nodes/history-store.js';
import type { HistoryEvent } from '../../nodes/history-store.js';
import { getNode } from '../../nodes/node-store.js';
import { baseUrl, nextPageLink } from '../links.js';
import { requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseLimit } from '../query.js';

/** The microversion of node history (Ironic's `allow_node_history`). */
export const HISTORY_SINCE: Microversion = [1, 78];

/** Longest `event` a list without `detail` shows whole; a longer one is cut to 4 less and ends in `...` (Ironic's rule). */
export const HISTORY_SUMMARY_LENGTH = 255;

type Params = { Params: { ident: string; event?: string }; Querystring: Record<string, string | undefined> };

function eventView(base: string, nodeUuid: string, e: HistoryEvent, detail: boolean): Record<string, unknown> {
  const links = [{ href: `${base}/v1/nodes/${nodeUuid}/history/${e.uuid}`, rel: 'self' }];
  if (!detail) {
    const event = e.event.length > HISTORY_SUMMARY_LENGTH ? `${e.event.slice(0, HISTORY_SUMMARY_LENGTH - 4)}...` : e.event;
    return { uuid: e.uuid, created_at: apiTime(e.created_at), severity: e.severity, event, links };
  }
  return { uuid: e.uuid, created_at: apiTime(e.created_at), severity: e.severity, event_type: e.event_type, event: e.event, conductor: e.conductor, user: e.user, links };
}

export function nodeHistoryRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;

  const list = async (request: FastifyRequest<Params>, forceDetail: boolean) => {
    requireVersion(request.apiVersion, HISTORY_SINCE, request.url);
    const q = request.query;
    const detail = forceDetail || (parseBool('detail', q.detail) ?? false);
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected the uuid of an event, got ${JSON.stringify(q.marker)}`);
    const node = await getNode(store, request.params.ident);
    const events = await listHistory(store, node.id, { limit, ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}) });
    const base = baseUrl(request, config.api.public_endpoint);
    const body: Record<string, unknown> = { history: events.map((e) => eventView(base, node.uuid, e, detail)) };
    if (events.length === limit && events.length > 0) body.next = nextPageLink(base, request, limit, events[events.length - 1]!.uuid);
    return body;
  };

  app.get<Params>('/v1/nodes/:ident/history', (request) => list(request, false));
  app.get<Params>('/v1/nodes/:ident/history/detail', (request) => list(request, true));

  app.get<Params>('/v1/nodes/:ident/history/:event', async (request) => {
    requireVersion(request.apiVersion, HISTORY_SINCE, request.url);
    const event = request.params.event!;
    const node = await getNode(store, request.params.ident);
    // Not a uuid: no event of any node has it (404, as Ironic's lookup by uuid).
    if (!UUID_PATTERN.test(event)) throw new NotFound(`Node history record ${event} could not be found`);
    return eventView(baseUrl(request, config.api.public_endpoint), node.uuid, await getHistoryEvent(store, node.id, event), true);
  });
}
