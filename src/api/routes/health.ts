/** `GET /healthz`: is this API process up, and does its database answer? For load balancers. */
import type { FastifyInstance } from 'fastify';
import { describeConnectError } from '../../db/connect.js';
import type { Store } from '../../db/connect.js';

export function healthRoutes(app: FastifyInstance, store: Store): void {
  app.get('/healthz', async (_request, reply) => {
    try {
      const now = await store.now();
      return { status: 'ok', database: 'ok', engine: store.engine, database_time: now.toISOString() };
    } catch (err) {
      return reply.code(503).send({ status: 'unavailable', database: describeConnectError(err), engine: store.engine });
    }
  });
}
