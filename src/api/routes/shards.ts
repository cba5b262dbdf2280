/**
 * `GET /v1/shards` (Ironic's API 1.82): every shard nodes are in, with its number of nodes, most
 * first — `{"shards": [{"name": …, "count": …}]}`. As Ironic's, the nodes without a shard count
 * under the name `"None"`, and there is no page nor single shard (`/v1/shards/{name}` is 404).
 * Below 1.82 the resource does not exist: 404 for GET, 405 for any other method, as Ironic's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MethodNotAllowed } from '../../common/errors.js';
import type { Store } from '../../db/connect.js';
import { listShards } from '../../nodes/shard-store.js';
import { compareVersions, formatVersion, requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** The microversion of shards (Ironic's `allow_shards_endpoint`). */
export const SHARDS_SINCE: Microversion = [1, 82];

export function shardRoutes(app: FastifyInstance, options: { store: Store }): void {
  app.get('/v1/shards', async (request) => {
    requireVersion(request.apiVersion, SHARDS_SINCE, request.url);
    const shards = await listShards(options.store);
    // Ironic shows the unsharded nodes' group by the text of its null.
    return { shards: shards.map((s) => ({ name: s.name ?? 'None', count: s.count })) };
  });

  const refuse = async (request: FastifyRequest, _reply: FastifyReply) => {
    if (compareVersions(request.apiVersion, SHARDS_SINCE) < 0) throw new MethodNotAllowed(`The API version does not allow shards (needs ${formatVersion(SHARDS_SINCE)} or later)`);
    throw new MethodNotAllowed('shards are read-only: only GET /v1/shards is served');
  };
  // Not part of the API's description (there is nothing to do there), only Ironic's refusal.
  app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url: '/v1/shards', schema: { hide: true }, handler: refuse });
}
