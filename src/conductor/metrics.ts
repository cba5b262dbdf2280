/**
 * A conductor's Prometheus metrics (served at `/metrics` on its RPC endpoint). One registry per
 * conductor, not prom-client's global one: tests run several conductors in one process.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HttpBootStats } from '../boot/http-boot.js';
import type { ProxyDhcpStats } from '../boot/proxydhcp/index.js';
import type { TftpStats } from '../boot/tftp/index.js';

/** One series a boot server's counters fill: a total, a total per label value, or a gauge. */
type ServerSeries<S> =
  | { kind: 'counter' | 'gauge'; name: string; help: string; value: (stats: S) => number }
  | { kind: 'counter'; name: string; help: string; label: string; values: (stats: S) => Record<string, number> };

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
  readonly strandedFailed: Counter;
  readonly failures: Counter;
  /** Reconcile passes that failed as a whole (retried after a back-off). */
  readonly passFailures: Counter;
  readonly ringVersion: Gauge;
  /** Power-state syncs run (`sync_power_state_interval`). */
  readonly powerSyncRuns: Counter;
  /** Durations of power-state syncs. */
  readonly powerSyncSeconds: Histogram;
  /** Nodes whose BMC the last power-state sync read. */
  readonly powerSyncNodes: Gauge;
  /** BMC reads or corrections of a power-state sync that failed. */
  readonly powerSyncFailures: Counter;
  /** Power states a sync corrected, by action: forced (BMC set back), recorded (BMC's state kept), maintenance. */
  readonly powerSyncCorrections: Counter<'action'>;
  /** Where the embedded TFTP server's counters are read at scrape time; null when none runs. */
  private tftpStats: () => TftpStats | null = () => null;
  /** Where the HTTP boot server's counters are read at scrape time; null when none runs. */
  private httpBootStats: () => HttpBootStats | null = () => null;
  /** Where the ProxyDHCP responder's counters are read at scrape time; null when none runs. */
  private proxyDhcpStats: () => ProxyDhcpStats | null = () => null;

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
    this.strandedFailed = new Counter({
      name: 'ironring_conductor_stranded_failed_total',
      help: 'In-flight operations of a departed conductor failed here because resuming them was not safe (maintenance, interrupted again).',
      registers: [r],
    });
    this.failures = new Counter({ name: 'ironring_conductor_reconcile_failures_total', help: 'Node take-overs, pre-caches or clean-ups that failed (retried).', registers: [r] });
    this.passFailures = new Counter({
      name: 'ironring_conductor_reconcile_pass_failures_total',
      help: 'Reconcile passes that failed as a whole (an unreadable database, …); each is retried after a back-off, 2 s doubling up to 60 s.',
      registers: [r],
    });
    this.ringVersion = new Gauge({ name: 'ironring_conductor_ring_version', help: 'Ring version this conductor is on (+1 per membership change seen).', registers: [r] });
    this.powerSyncRuns = new Counter({ name: 'ironring_conductor_power_sync_runs_total', help: 'Power-state syncs run over the nodes this conductor owns.', registers: [r] });
    this.powerSyncSeconds = new Histogram({
      name: 'ironring_conductor_power_sync_seconds',
      help: 'Durations of power-state syncs (BMC reads bounded by sync_power_state_workers).',
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [r],
    });
    this.powerSyncNodes = new Gauge({ name: 'ironring_conductor_power_sync_nodes', help: 'Nodes whose BMC the last power-state sync read.', registers: [r] });
    this.powerSyncFailures = new Counter({ name: 'ironring_conductor_power_sync_failures_total', help: 'BMC reads or power corrections of power-state syncs that failed.', registers: [r] });
    this.powerSyncCorrections = new Counter({
      name: 'ironring_conductor_power_sync_corrections_total',
      help: "Mismatches a power-state sync acted on: forced (BMC set back to the record), recorded (the BMC's state recorded), maintenance (max retries exceeded).",
      labelNames: ['action'],
      registers: [r],
    });
    this.registerTftp();
    this.registerHttpBoot();
    this.registerProxyDhcp();
  }

  /** Reads the HTTP boot server's counters from `stats` whenever /metrics is scraped. */
  watchHttpBoot(stats: () => HttpBootStats | null): void {
    this.httpBootStats = stats;
  }

  /** Reads the ProxyDHCP responder's counters from `stats` whenever /metrics is scraped. */
  watchProxyDhcp(stats: () => ProxyDhcpStats | null): void {
    this.proxyDhcpStats = stats;
  }

  /** Reads the embedded TFTP server's counters from `stats` whenever /metrics is scraped. */
  watchTftp(stats: () => TftpStats | null): void {
    this.tftpStats = stats;
  }

  /** HTTP boot metrics, filled from the server's own counters at scrape time (no outcomes, zeros when none runs). */
  private registerHttpBoot(): void {
    this.registerServer(() => this.httpBootStats(), [
      {
        kind: 'counter',
        name: 'ironring_http_boot_requests_total',
        help: 'HTTP boot requests answered, by outcome (served: 200/206 sent in full; not_modified: 304; not_found: 404; refused: other 4xx; failed: 5xx or cut before its end).',
        label: 'outcome',
        values: (s) => ({ served: s.served, not_modified: s.notModified, not_found: s.notFound, refused: s.refused, failed: s.failed }),
      },
      { kind: 'counter', name: 'ironring_http_boot_sent_bytes_total', help: 'File bytes the HTTP boot server wrote to responses (bodies of 200/206; not headers or error texts).', value: (s) => s.bytesSent },
      { kind: 'gauge', name: 'ironring_http_boot_requests_active', help: 'HTTP boot requests being answered.', value: (s) => s.active },
    ]);
  }

  /** ProxyDHCP metrics, filled from the responder's counters at scrape time (nothing when none runs). */
  private registerProxyDhcp(): void {
    this.registerServer(() => this.proxyDhcpStats(), [
      {
        kind: 'counter',
        name: 'ironring_proxydhcp_answers_total',
        help: 'ProxyDHCP replies sent, by kind (offer: to a DHCPDISCOVER on port 67; ack: to a DHCPREQUEST on 67 or 4011).',
        label: 'kind',
        values: (s) => ({ offer: s.offers, ack: s.acks }),
      },
      { kind: 'counter', name: 'ironring_proxydhcp_ignored_total', help: 'Well-formed DHCP packets ProxyDHCP did not answer (not a PXE client, MAC not served here, request for another server…).', value: (s) => s.ignored },
      { kind: 'counter', name: 'ironring_proxydhcp_malformed_total', help: 'Datagrams on the ProxyDHCP ports that were not DHCP packets, dropped.', value: (s) => s.malformed },
      { kind: 'counter', name: 'ironring_proxydhcp_send_failures_total', help: 'ProxyDHCP replies the socket failed to send.', value: (s) => s.sendFailures },
    ]);
  }

  /** TFTP metrics, filled from the server's own counters at scrape time (nothing when none runs). */
  private registerTftp(): void {
    this.registerServer(() => this.tftpStats(), [
      {
        kind: 'counter',
        name: 'ironring_tftp_transfers_total',
        help: 'TFTP read transfers that ended, by outcome (completed: last block acknowledged; failed: timeout, peer error, read error, shutdown).',
        label: 'outcome',
        values: (s) => ({ completed: s.completed, failed: s.failed }),
      },
      { kind: 'counter', name: 'ironring_tftp_transfers_started_total', help: 'TFTP read transfers begun (file opened, first packet sent).', value: (s) => s.started },
      {
        kind: 'counter',
        name: 'ironring_tftp_requests_refused_total',
        help: 'TFTP requests answered with an error and no transfer (not found, access violation, write request, mail mode, bad option values).',
        value: (s) => s.refused,
      },
      {
        kind: 'counter',
        name: 'ironring_tftp_requests_over_limit_total',
        help: 'TFTP requests refused with "server busy" because [pxe] tftp_max_transfers or tftp_max_transfers_per_client was reached.',
        value: (s) => s.overLimit,
      },
      { kind: 'counter', name: 'ironring_tftp_datagrams_ignored_total', help: 'Datagrams on the TFTP port that were not well-formed requests, dropped without an answer.', value: (s) => s.ignored },
      { kind: 'counter', name: 'ironring_tftp_busy_polled_total', help: 'Datagrams a TFTP transfer read by busy polling rather than through the event loop.', value: (s) => s.busyPolled },
      { kind: 'gauge', name: 'ironring_tftp_transfers_active', help: 'TFTP transfers in progress.', value: (s) => s.active },
    ]);
  }

  /**
   * Registers a boot server's series, each read from `read()` (the server's own counters; null when
   * it does not run) whenever /metrics is scraped: counters are set to the server's totals (a
   * labelled one per label value; no series while none runs), gauges to the value or 0.
   */
  private registerServer<S>(read: () => S | null, series: ReadonlyArray<ServerSeries<S>>): void {
    const registers = [this.registry];
    for (const spec of series) {
      const { name, help } = spec;
      if (spec.kind === 'gauge') {
        new Gauge({ name, help, registers, collect() {
          const s = read();
          this.set(s === null ? 0 : spec.value(s));
        } });
      } else if ('label' in spec) {
        new Counter({ name, help, labelNames: [spec.label], registers, collect() {
          this.reset();
          const s = read();
          if (s !== null) for (const [value, total] of Object.entries(spec.values(s))) this.inc({ [spec.label]: value }, total);
        } });
      } else {
        new Counter({ name, help, registers, collect() {
          this.reset();
          const s = read();
          if (s !== null) this.inc(spec.value(s));
        } });
      }
    }
  }
}
