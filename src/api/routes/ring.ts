/**
 * `GET /v1/ring[?node=UUID|NAME]` (an ironring extension): the live placement — owner and replicas
 * per node and nodes per conductor — as every conductor computes it.
 */
import type { FastifyInstance } from 'fastify';
import { currentPlacement } from '../../cluster/placement.js';
import { conductorRingOptions } from '../../cluster/ring-options.js';
import { NotFound } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';

export function ringRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { conductor } = options.config;
  app.get<{ Querystring: { node?: string } }>('/v1/ring', async (request) => {
    const node = request.query.node;
    const placement = await currentPlacement(options.store, {
      heartbeatTimeout: conductor.heartbeat_timeout,
      replicas: conductor.replicas,
      ring: conductorRingOptions(conductor),
      ...(node !== undefined ? { node } : {}),
    });
    if (node !== undefined && placement.nodes.length === 0) throw new NotFound(`node ${node} could not be found`);
    return { mode: conductor.hash_ring_mode, ...placement };
  });
}
