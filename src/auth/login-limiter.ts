/**
 * Failed logins per client address. After `limit` failures within `windowSeconds`, the address is
 * answered 429 (with Retry-After) before any password is checked, so guessing costs the guesser
 * time, not this process CPU. Checks in flight count against the limit too: forty guesses sent at
 * once are not forty guesses let through.
 */

/** Clock in milliseconds; injectable so tests need not wait for the window to pass. */
export type Clock = () => number;

interface Entry {
  /** Times of recent failures, oldest first (at most `limit` kept). */
  failures: number[];
  inflight: number;
}

export interface LoginLimiterOptions {
  /** Failures allowed per address within the window; 0 turns limiting off. */
  limit: number;
  windowSeconds: number;
  clock?: Clock;
}

/** Addresses remembered before expired entries are swept (a flood from many addresses stays bounded). */
const SWEEP_ABOVE = 10_000;

/** Failed-login bookkeeping per client address, bounded in memory. */
export class LoginLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;

  constructor(private readonly options: LoginLimiterOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** Seconds until `address` may try again after too many failures; 0 when it may now. */
  blockedFor(address: string): number {
    if (this.options.limit === 0) return 0;
    const entry = this.entries.get(address);
    if (entry === undefined) return 0;
    this.expire(entry);
    if (entry.failures.length < this.options.limit) return 0;
    return this.secondsUntilFree(entry);
  }

  /**
   * Starts one password check for `address`: null when it may go ahead (call `finish` with the
   * outcome), else the seconds to wait.
   */
  begin(address: string): null | number {
    if (this.options.limit === 0) return null;
    let entry = this.entries.get(address);
    if (entry === undefined) {
      if (this.entries.size >= SWEEP_ABOVE) this.sweep();
      entry = { failures: [], inflight: 0 };
      this.entries.set(address, entry);
    }
    this.expire(entry);
    if (entry.failures.length + entry.inflight >= this.options.limit) {
      return entry.failures.length >= this.options.limit ? this.secondsUntilFree(entry) : 1;
    }
    entry.inflight++;
    return null;
  }

  /** Ends a check `begin` allowed; a failure counts against the address for the window. */
  finish(address: string, ok: boolean): void {
    if (this.options.limit === 0) return;
    const entry = this.entries.get(address);
    if (entry === undefined) return;
    entry.inflight = Math.max(0, entry.inflight - 1);
    if (!ok) {
      entry.failures.push(this.clock());
      if (entry.failures.length > this.options.limit) entry.failures.shift();
    }
    if (entry.inflight === 0 && entry.failures.length === 0) this.entries.delete(address);
  }

  private expire(entry: Entry): void {
    const cutoff = this.clock() - this.options.windowSeconds * 1000;
    while (entry.failures.length > 0 && entry.failures[0]! <= cutoff) entry.failures.shift();
  }

  private secondsUntilFree(entry: Entry): number {
    const oldest = entry.failures[0] ?? this.clock();
    return Math.max(1, Math.ceil((oldest + this.options.windowSeconds * 1000 - this.clock()) / 1000));
  }

  private sweep(): void {
    for (const [address, entry] of this.entries) {
      this.expire(entry);
      if (entry.inflight === 0 && entry.failures.length === 0) this.entries.delete(address);
    }
  }
}
