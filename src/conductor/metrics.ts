/**
 * A conductor's Prometheus metrics (served at `/metrics` on its RPC endpoint). One registry per
 * conductor, not prom-client's global one: tests run several conductors in one process.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export class ConductorMetrics {
  readonly registry = new Registry();
  readonly nodesOwned: Gauge;
  readonly nodesPendingTakeover: Gauge;
  readonly nodesReplicated: Gauge;
  readonly lastPassSeconds: Gauge;
  readonly passSeconds: Histogram;
  readonly takeovers: Counter;
  readonly cleanups: Counter;
  readonly precaches: Counter;
  readonly resumed: Counter;
  readonly failures: Counter;
  readonly ringVersion: Gauge;

  constructor(labels: { conductor: string; conductor_group: string }, options: { processMetrics?: boolean } = {}) {
    const r = this.registry;
    r.setDefaultLabels(labels);
    if (options.processMetrics) collectDefaultMetrics({ register: r });
    this.nodesOwned = new Gauge({ name: 'ironring_conductor_nodes_owned', help: 'Nodes this conductor owns on the ring (last reconcile pass).', registers: [r] });
    this.nodesPendingTakeover = new Gauge({
      name: 'ironring_conductor_nodes_pending_takeover',
      help: 'Owned nodes whose boot state is not yet current here (locked elsewhere, failed, or not yet reached).',
      registers: [r],
    });
    this.nodesReplicated = new Gauge({ name: 'ironring_conductor_nodes_replicated', help: 'Nodes for which this conductor is a replica (pre-caches their kernel and ramdisk).', registers: [r] });
    this.lastPassSeconds = new Gauge({ name: 'ironring_conductor_reconcile_last_pass_seconds', help: 'Duration of the last reconcile pass.', registers: [r] });
    this.passSeconds = new Histogram({
      name: 'ironring_conductor_reconcile_pass_seconds',
      help: 'Durations of reconcile passes.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      labelNames: ['trigger'],
      registers: [r],
    });
    this.takeovers = new Counter({ name: 'ironring_conductor_takeovers_total', help: 'Nodes whose boot state this conductor took over (prepared and set conductor_affinity).', registers: [r] });
    this.cleanups = new Counter({ name: 'ironring_conductor_cleanups_total', help: 'Nodes whose local boot state this conductor removed.', registers: [r] });
    this.precaches = new Counter({ name: 'ironring_conductor_precaches_total', help: 'Replica nodes whose kernel and ramdisk were pre-cached.', registers: [r] });
    this.resumed = new Counter({ name: 'ironring_conductor_resumed_total', help: 'In-flight operations of a departed conductor resumed here.', registers: [r] });
    this.failures = new Counter({ name: 'ironring_conductor_reconcile_failures_total', help: 'Node take-overs, pre-caches or clean-ups that failed (retried).', registers: [r] });
    this.ringVersion = new Gauge({ name: 'ironring_conductor_ring_version', help: 'Ring version this conductor is on (+1 per membership change seen).', registers: [r] });
  }
}
