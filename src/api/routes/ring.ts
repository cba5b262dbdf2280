/**
 * `GET /v1/ring[?node=UUID|NAME]` (an ironring extension): the live placement — owner and replicas
 * per node and nodes per conductor — as every conductor computes it.
 */
import type { FastifyInstance } from 'fastify';
import type { ConductorRings } from '../../cluster/conductor-rings.js';
import { ringReport } from '../../cluster/ring-report.js';
import { NotFound } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';

export function ringRoutes(app: FastifyInstance, options: { store: Store; config: Config; rings: ConductorRings }): void {
  const { conductor } = options.config;
  app.get<{ Querystring: { node?: string } }>('/v1/ring', async (request) => {
    const node = request.query.node;
    const report = await ringReport(options.store, await options.rings.fresh(), {
      replicas: conductor.replicas,
      ...(node !== undefined ? { node } : {}),
    });
    if (node !== undefined && report.nodes.length === 0) throw new NotFound(`node ${node} could not be found`);
    return { mode: conductor.hash_ring_mode, ...report };
  });
}
