/**
 * The figures a conductor publishes about itself, read where it publishes them: its Prometheus
 * `/metrics` and `GET /v1/reconcile` (the last pass's report) on its RPC listener, with the RPC
 * credentials of `[json_rpc] auth_strategy` (the API's way to reach a conductor), 1.5 s at most, the
 * answer cut at 1 MiB (`../conductor-get.ts`). A conductor that does not answer gives its reason,
 * never a made-up number.
 */
import type { Config } from '../../config/options.js';
import { conductorGet } from '../conductor-get.js';

/** The published counters of one conductor (null: the conductor does not publish that one). */
export interface ConductorStats {
  tftp: { started: number | null; completed: number | null; failed: number | null; refused: number | null; active: number | null };
  httpBoot: { served: number | null; notModified: number | null; notFound: number | null; refused: number | null; failed: number | null; bytesSent: number | null };
  proxyDhcp: { offers: number | null; acks: number | null; ignored: number | null };
  reconcile: { passes: number | null; totalSeconds: number | null; lastSeconds: number | null; takeovers: number | null; passFailures: number | null };
  /** `GET /v1/reconcile`: the last pass (null before the first). */
  lastPass: { trigger: string; durationMs: number; takenOver: number; pending: number } | null;
}

export type StatsResult = { ok: true; stats: ConductorStats } | { ok: false; reason: string };

/** One sample's value from Prometheus text: `name{labels} value`; the sum over series matching `labels`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | null {
  let found = false;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    const m = /^(\{[^}]*\})?\s+(\S+)/.exec(rest);
    if (!m) continue;
    const labelText = m[1] ?? '';
    if (!Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) continue;
    const value = Number(m[2]);
    if (!Number.isFinite(value)) continue;
    found = true;
    sum += value;
  }
  return found ? sum : null;
}

/** The counters from a conductor's `/metrics` text and its `/v1/reconcile` answer. */
export function parseStats(metrics: string, reconcile: unknown): ConductorStats {
  const v = (name: string, labels?: Record<string, string>) => metricValue(metrics, name, labels);
  const last = reconcile as { trigger?: unknown; durationMs?: unknown; takenOver?: unknown; pending?: unknown; backingOff?: unknown } | null;
  return {
    tftp: {
      started: v('ironring_tftp_transfers_started_total'),
      completed: v('ironring_tftp_transfers_total', { outcome: 'completed' }),
      failed: v('ironring_tftp_transfers_total', { outcome: 'failed' }),
      refused: v('ironring_tftp_requests_refused_total'),
      active: v('ironring_tftp_transfers_active'),
    },
    httpBoot: {
      served: v('ironring_http_boot_requests_total', { outcome: 'served' }),
      notModified: v('ironring_http_boot_requests_total', { outcome: 'not_modified' }),
      notFound: v('ironring_http_boot_requests_total', { outcome: 'not_found' }),
      refused: v('ironring_http_boot_requests_total', { outcome: 'refused' }),
      failed: v('ironring_http_boot_requests_total', { outcome: 'failed' }),
      bytesSent: v('ironring_http_boot_sent_bytes_total'),
    },
    proxyDhcp: {
      offers: v('ironring_proxydhcp_answers_total', { kind: 'offer' }),
      acks: v('ironring_proxydhcp_answers_total', { kind: 'ack' }),
      ignored: v('ironring_proxydhcp_ignored_total'),
    },
    reconcile: {
      passes: v('ironring_conductor_reconcile_pass_seconds_count'),
      totalSeconds: v('ironring_conductor_reconcile_pass_seconds_sum'),
      lastSeconds: v('ironring_conductor_reconcile_last_pass_seconds'),
      takeovers: v('ironring_conductor_takeovers_total'),
      passFailures: v('ironring_conductor_reconcile_pass_failures_total'),
    },
    lastPass:
      last !== null && typeof last === 'object' && typeof last.trigger === 'string' && typeof last.durationMs === 'number'
        ? { trigger: last.trigger.slice(0, 200), durationMs: last.durationMs, takenOver: Number(last.takenOver ?? 0), pending: Number(last.pending ?? 0) + Number(last.backingOff ?? 0) }
        : null,
  };
}

/** Reads the counters a conductor publishes at `rpcUrl`. */
export async function readConductorStats(config: Config, rpcUrl: string): Promise<StatsResult> {
  if (!/^https?:\/\//.test(rpcUrl)) return { ok: false, reason: 'it publishes no http(s) RPC address' };
  try {
    const [metrics, reconcile] = await Promise.all([conductorGet(config, rpcUrl, '/metrics'), conductorGet(config, rpcUrl, '/v1/reconcile')]);
    let last: unknown = null;
    try {
      last = reconcile.trim() === '' ? null : JSON.parse(reconcile);
    } catch {
      last = null;
    }
    return { ok: true, stats: parseStats(metrics, last) };
  } catch (err) {
    return { ok: false, reason: (err as Error).message.slice(0, 300) };
  }
}
