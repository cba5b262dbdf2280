/**
 * Serial work: a job an owner runs periodically and on demand (a reconcile pass, a membership read,
 * a resource update, a host discovery), with one set of rules so that no owner writes its own loop:
 *
 * - at most one run at a time; requests made during a run coalesce into **one** follow-up run;
 * - an optional period: a tick is one more request, coalesced like any other;
 * - a failed run never rejects into a caller (callers `void` these requests from timers and
 *   notifications, where a rejection would end the process): it is logged, counted, and retried
 *   after a bounded exponential back-off that a success resets. While backing off, requests and
 *   ticks wait for the retry instead of hammering a broken database;
 * - `stop()` cancels the timers, waits for the run in flight and is idempotent;
 * - time is injected, so the rules are unit-tested without sleeping.
 */
import type { Logger } from './logger.js';

/** What led to a run: several causes when requests coalesced. */
export interface RunCause {
  /** Someone called `request()`. */
  requested: boolean;
  /** The period elapsed. */
  periodic: boolean;
  /** A retry: after a failed run, or asked for with `later()`. */
  retry: boolean;
}

/** The timers serial work waits on; the real ones by default, a fake clock in tests. */
export interface SerialWorkTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Counts an owner may export as metrics or status. */
export interface SerialWorkStats {
  /** Runs that ended, successful or not. */
  runs: number;
  /** Runs that failed, since the start. */
  failures: number;
  /** Runs that failed since the last success (0 when the last run succeeded). */
  consecutiveFailures: number;
  /** The last failure's message, until a run succeeds. */
  lastError: string | null;
}

export interface SerialWorkOptions {
  /** Names the work in logs ("compute resource update"). */
  name: string;
  /** One run; a rejection is a failure (logged, counted, retried after back-off). */
  run: (cause: RunCause) => Promise<void>;
  logger: Pick<Logger, 'warn' | 'info'>;
  /** Milliseconds between periodic runs once started; absent or ≤ 0: on demand only. */
  intervalMs?: number;
  /** Back-off after failures: `initialMs`, doubling per consecutive failure, at most `maxMs`. */
  backoff?: { initialMs: number; maxMs: number };
  /** Lets the process exit while only these timers are pending (the owner keeps it alive otherwise). */
  unref?: boolean;
  /** Called after each failed run (after it is counted): for an owner's metric counter. */
  onFailure?: (err: unknown, stats: SerialWorkStats) => void;
  timers?: SerialWorkTimers;
}

/** Default back-off: 1 s, doubling, at most a minute. */
export const DEFAULT_BACKOFF = { initialMs: 1000, maxMs: 60_000 } as const;

const realTimers: SerialWorkTimers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export class SerialWork {
  private readonly timers: SerialWorkTimers;
  private readonly backoff: { initialMs: number; maxMs: number };
  private running: Promise<void> | null = null;
  /** Causes of the next run, merged; null when none is due. */
  private pending: RunCause | null = null;
  /** Callers waiting for the next run to end. */
  private waiters: Array<() => void> = [];
  /** No run starts before this time (back-off after a failure). */
  private notBefore = 0;
  private wakeTimer: unknown = undefined;
  private periodTimer: unknown = undefined;
  private laterTimer: unknown = undefined;
  private laterAt = Infinity;
  private stopped = false;
  private stopping: Promise<void> | null = null;
  private readonly counts: SerialWorkStats = { runs: 0, failures: 0, consecutiveFailures: 0, lastError: null };

  constructor(private readonly options: SerialWorkOptions) {
    this.timers = options.timers ?? realTimers;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
  }

  /** A copy of the counts. */
  stats(): SerialWorkStats {
    return { ...this.counts };
  }

  /** Whether a run is in flight. */
  get busy(): boolean {
    return this.running !== null;
  }

  /** Arms the period (if any); runs at once too when `immediate`. */
  start(options: { immediate?: boolean } = {}): void {
    if (this.stopped) return;
    this.armPeriod();
    if (options.immediate) void this.request();
  }

  /**
   * Asks for a run. Resolves (never rejects) when a run that began after this call has ended,
   * successfully or not; at once when stopped.
   */
  request(): Promise<void> {
    return this.enqueue({ requested: true, periodic: false, retry: false }, true);
  }

  /** Asks for a retry run in `ms`; the earliest of several such asks wins. */
  later(ms: number): void {
    if (this.stopped) return;
    const at = this.timers.now() + ms;
    if (this.laterTimer !== undefined && this.laterAt <= at) return;
    if (this.laterTimer !== undefined) this.timers.clearTimeout(this.laterTimer);
    this.laterAt = at;
    this.laterTimer = this.arm(() => {
      this.laterTimer = undefined;
      this.laterAt = Infinity;
      void this.enqueue({ requested: false, periodic: false, retry: true }, false);
    }, ms);
  }

  /** Cancels the timers and waits for the run in flight; later requests resolve at once. Idempotent. */
  stop(): Promise<void> {
    if (this.stopping) return this.stopping;
    this.stopped = true;
    for (const t of [this.wakeTimer, this.periodTimer, this.laterTimer]) if (t !== undefined) this.timers.clearTimeout(t);
    this.wakeTimer = this.periodTimer = this.laterTimer = undefined;
    this.pending = null;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
    this.stopping = (this.running ?? Promise.resolve()).then(() => undefined);
    return this.stopping;
  }

  private enqueue(cause: RunCause, wait: boolean): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const p = this.pending;
    this.pending = p ? { requested: p.requested || cause.requested, periodic: p.periodic || cause.periodic, retry: p.retry || cause.retry } : cause;
    const done = wait ? new Promise<void>((resolve) => this.waiters.push(resolve)) : Promise.resolve();
    this.pump();
    return done;
  }

  /** Starts the pending run unless one is running or the back-off is not over. */
  private pump(): void {
    if (this.stopped || this.running || !this.pending) return;
    const wait = this.notBefore - this.timers.now();
    if (wait > 0) {
      if (this.wakeTimer === undefined) {
        this.wakeTimer = this.arm(() => {
          this.wakeTimer = undefined;
          this.pump();
        }, wait);
      }
      return;
    }
    const cause = this.pending;
    const waiters = this.waiters;
    this.pending = null;
    this.waiters = [];
    this.running = this.execute(cause).finally(() => {
      this.running = null;
      for (const wake of waiters) wake();
      this.pump();
    });
  }

  private async execute(cause: RunCause): Promise<void> {
    const { name, logger } = this.options;
    const c = this.counts;
    try {
      await this.options.run(cause);
      c.runs += 1;
      if (c.consecutiveFailures > 0) logger.info({ work: name, after: c.consecutiveFailures }, `${name} works again`);
      c.consecutiveFailures = 0;
      c.lastError = null;
      this.notBefore = 0;
    } catch (err) {
      c.runs += 1;
      c.failures += 1;
      c.consecutiveFailures += 1;
      const message = err instanceof Error ? err.message : String(err);
      c.lastError = message;
      const delay = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** Math.min(c.consecutiveFailures - 1, 30));
      this.notBefore = this.timers.now() + delay;
      logger.warn({ work: name, err: message, failures: c.failures, consecutiveFailures: c.consecutiveFailures, retryInMs: delay }, `${name} failed; retrying`);
      try {
        this.options.onFailure?.(err, this.stats());
      } catch {
        // A broken metric must not turn a handled failure into an unhandled one.
      }
      if (!this.stopped) {
        const p = this.pending;
        this.pending = p ? { ...p, retry: true } : { requested: false, periodic: false, retry: true };
      }
    }
  }

  private armPeriod(): void {
    const ms = this.options.intervalMs ?? 0;
    if (ms <= 0 || this.stopped) return;
    this.periodTimer = this.arm(() => {
      this.periodTimer = undefined;
      this.armPeriod();
      void this.enqueue({ requested: false, periodic: true, retry: false }, false);
    }, ms);
  }

  private arm(fn: () => void, ms: number): unknown {
    const handle = this.timers.setTimeout(fn, Math.max(0, ms));
    if (this.options.unref) (handle as { unref?: () => void } | null)?.unref?.();
    return handle;
  }
}
