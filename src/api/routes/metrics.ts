/**
 * `GET /metrics` (Prometheus text): the API process's own metrics plus a cluster view computed on
 * each scrape from the nodes table and the conductors' live rings (read afresh) — nodes per
 * provision state, live conductors, nodes owned per conductor, and nodes whose boot state is not yet
 * on their owner (`conductor_affinity` differs from the ring), i.e. take-overs pending anywhere in
 * the cluster.
 */
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { ConductorRings } from '../../cluster/conductor-rings.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { CONDUCTOR_BOOT_STATES } from '../../nodes/state-machine.js';

/** Process metrics (CPU, memory, event loop), collected once per process however many apps it builds. */
let processRegistry: Registry | undefined;

export function metricsRoutes(app: FastifyInstance, options: { store: Store; config: Config; rings: ConductorRings }): void {
  const { store } = options;
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  const registry = new Registry();
  const nodes = new Gauge({ name: 'ironring_nodes', help: 'Nodes per provision state.', labelNames: ['provision_state'], registers: [registry] });
  const conductors = new Gauge({ name: 'ironring_conductors_live', help: 'Live conductors (by the database clock) per conductor group.', labelNames: ['conductor_group'], registers: [registry] });
  const owned = new Gauge({ name: 'ironring_nodes_owned', help: 'Nodes each live conductor owns on the ring.', labelNames: ['conductor'], registers: [registry] });
  const pending = new Gauge({
    name: 'ironring_nodes_pending_takeover',
    help: "Nodes that boot from the network whose conductor_affinity is not their ring owner: take-overs not done yet.",
    registers: [registry],
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const [rows, rings] = await Promise.all([
      store.db.selectFrom('nodes').select(['uuid', 'conductor_group', 'provision_state', 'conductor_affinity']).execute(),
      options.rings.fresh(),
    ]);
    const ids = new Map(rings.members().map((c) => [c.hostname, c.id]));
    const { owners, counts } = rings.ownersMap(rows, (n) => ({ group: n.conductor_group, key: n.uuid }));
    nodes.reset();
    conductors.reset();
    owned.reset();
    for (const [conductor, count] of counts) owned.set({ conductor }, count);
    for (const group of rings.groups()) conductors.set({ conductor_group: group }, rings.ring(group)!.size);
    let notOnOwner = 0;
    for (const n of rows) {
      nodes.inc({ provision_state: n.provision_state });
      const owner = owners.get(n.uuid);
      if (CONDUCTOR_BOOT_STATES.has(n.provision_state) && (owner === undefined || n.conductor_affinity !== ids.get(owner))) notOnOwner += 1;
    }
    pending.set(notOnOwner);
    reply.header('content-type', registry.contentType);
    return (await processRegistry!.metrics()) + (await registry.metrics());
  });
}
