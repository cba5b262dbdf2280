/**
 * A conductor's periodic pass (Ironic's periodic tasks): runs `pass` every `intervalSeconds` after
 * the previous one ended (never two at once; the first one interval after `start`), or on demand
 * with `runOnce`, which joins a pass in flight. `stop` ends the timer and waits for the pass in
 * flight; `halting` tells a pass to end between nodes. A failed pass is logged and the next one
 * still runs.
 */
import type { Logger } from '../common/logger.js';

export class PeriodicPass<T> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<T> | null = null;
  private stopped = true;
  /** Set by `stop`: a pass in flight ends between nodes. */
  halting = false;

  constructor(
    private readonly intervalSeconds: number,
    private readonly pass: () => Promise<T>,
    private readonly log: Logger,
    private readonly what: string,
  ) {}

  /** Starts the timer; 0 seconds: no timer (`runOnce` still works). */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops the timer and waits for a pass in flight. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.halting = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** Runs one pass now (or joins the one in flight) and resolves with its result. */
  runOnce(): Promise<T> {
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private schedule(): void {
    if (this.stopped || this.intervalSeconds <= 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.runOnce()
        .catch((err: unknown) => this.log.error({ err: (err as Error).message }, `${this.what} failed`))
        .finally(() => this.schedule());
    }, this.intervalSeconds * 1000);
    this.timer.unref();
  }
}
