import { describe, expect, it } from 'vitest';
import { SerialWork } from '../../src/common/serial-work.js';
import type { RunCause, SerialWorkOptions, SerialWorkTimers } from '../../src/common/serial-work.js';

/** A clock that moves only when told: timers fire in order of their due time. */
class FakeTimers implements SerialWorkTimers {
  time = 0;
  private seq = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.due.set(id, { at: this.time + ms, fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.due.delete(handle as number);
  }
  pending(): number[] {
    return [...this.due.values()].map((t) => t.at - this.time).sort((a, b) => a - b);
  }
  /** Moves the clock by `ms`, firing due timers (and letting the runs they start settle). */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      const next = [...this.due.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!next) break;
      this.due.delete(next[0]);
      this.time = next[1].at;
      next[1].fn();
      await settle();
    }
    this.time = end;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

interface Logged {
  level: string;
  obj: Record<string, unknown>;
  msg: string;
}

function setup(run: (cause: RunCause) => Promise<void>, extra: Partial<SerialWorkOptions> = {}) {
  const timers = new FakeTimers();
  const logs: Logged[] = [];
  const logger = {
    warn: (obj: Record<string, unknown>, msg: string) => logs.push({ level: 'warn', obj, msg }),
    info: (obj: Record<string, unknown>, msg: string) => logs.push({ level: 'info', obj, msg }),
  } as unknown as SerialWorkOptions['logger'];
  const work = new SerialWork({ name: 'test work', run, logger, timers, ...extra });
  return { work, timers, logs };
}

/** A run that waits until released, recording its causes. */
function gated() {
  const causes: RunCause[] = [];
  let release: (() => void) | undefined;
  let fail: ((err: Error) => void) | undefined;
  const run = (cause: RunCause) =>
    new Promise<void>((resolve, reject) => {
      causes.push(cause);
      release = resolve;
      fail = reject;
    });
  return { run, causes, release: () => release!(), fail: (err: Error) => fail!(err) };
}

describe('SerialWork', () => {
  it('runs one at a time and coalesces requests made during a run into one follow-up run', async () => {
    const g = gated();
    const { work } = setup(g.run);
    const first = work.request();
    await settle();
    expect(g.causes).toHaveLength(1);
    const during = Array.from({ length: 10 }, () => work.request());
    await settle();
    expect(g.causes).toHaveLength(1);
    g.release();
    await first;
    await settle();
    expect(g.causes).toHaveLength(2);
    g.release();
    await Promise.all(during);
    expect(g.causes).toHaveLength(2);
    expect(work.stats()).toMatchObject({ runs: 2, failures: 0 });
  });

  it('never rejects a request whose run fails; logs and counts the failure', async () => {
    const { work, logs } = setup(() => Promise.reject(new Error('no such table: compute_nodes')));
    await expect(work.request()).resolves.toBeUndefined();
    expect(work.stats()).toEqual({ runs: 1, failures: 1, consecutiveFailures: 1, lastError: 'no such table: compute_nodes' });
    expect(logs).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'test work failed; retrying', obj: expect.objectContaining({ err: 'no such table: compute_nodes', failures: 1 }) }));
  });

  it('calls onFailure with the counts, and survives an onFailure that throws', async () => {
    const seen: number[] = [];
    const { work } = setup(() => Promise.reject(new Error('boom')), {
      onFailure: (_err, stats) => {
        seen.push(stats.failures);
        throw new Error('metric broken');
      },
    });
    await expect(work.request()).resolves.toBeUndefined();
    expect(seen).toEqual([1]);
  });

  it('retries after a failure with a bounded exponential back-off that a success resets', async () => {
    let failing = true;
    const causes: RunCause[] = [];
    const { work, timers, logs } = setup(
      (cause) => {
        causes.push(cause);
        return failing ? Promise.reject(new Error('down')) : Promise.resolve();
      },
      { backoff: { initialMs: 100, maxMs: 350 } },
    );
    await work.request();
    expect(causes).toHaveLength(1);
    // Requests while backing off wait for the retry.
    void work.request();
    await timers.advance(99);
    expect(causes).toHaveLength(1);
    await timers.advance(1);
    expect(causes).toHaveLength(2);
    expect(causes[1]).toMatchObject({ retry: true, requested: true });
    await timers.advance(199);
    expect(causes).toHaveLength(2);
    await timers.advance(1);
    expect(causes).toHaveLength(3);
    // 400 is over the bound: 350.
    await timers.advance(349);
    expect(causes).toHaveLength(3);
    await timers.advance(1);
    expect(causes).toHaveLength(4);
    expect(work.stats().consecutiveFailures).toBe(4);
    failing = false;
    await timers.advance(350);
    expect(causes).toHaveLength(5);
    expect(work.stats()).toMatchObject({ runs: 5, failures: 4, consecutiveFailures: 0, lastError: null });
    expect(logs).toContainEqual(expect.objectContaining({ level: 'info', msg: 'test work works again' }));
    // Reset: nothing more is due, and the next request runs at once.
    expect(timers.pending()).toEqual([]);
    await work.request();
    expect(causes).toHaveLength(6);
    failing = true;
    await work.request();
    expect(timers.pending()).toEqual([100]);
  });

  it('runs on its period once started, and a tick during a run coalesces', async () => {
    const g = gated();
    const { work, timers } = setup(g.run, { intervalMs: 1000 });
    work.start();
    await timers.advance(999);
    expect(g.causes).toHaveLength(0);
    await timers.advance(1);
    expect(g.causes).toEqual([{ requested: false, periodic: true, retry: false }]);
    void work.request();
    await timers.advance(1000);
    expect(g.causes).toHaveLength(1);
    g.release();
    await settle();
    expect(g.causes).toHaveLength(2);
    expect(g.causes[1]).toEqual({ requested: true, periodic: true, retry: false });
  });

  it('start({ immediate }) runs at once', async () => {
    const g = gated();
    const { work } = setup(g.run, { intervalMs: 1000 });
    work.start({ immediate: true });
    await settle();
    expect(g.causes).toHaveLength(1);
  });

  it('later(ms) asks for a retry run; the earliest of several wins', async () => {
    const causes: RunCause[] = [];
    const { work, timers } = setup(async (cause) => {
      causes.push(cause);
    });
    work.later(500);
    work.later(200);
    work.later(800);
    expect(timers.pending()).toEqual([200]);
    await timers.advance(200);
    expect(causes).toEqual([{ requested: false, periodic: false, retry: true }]);
    await timers.advance(1000);
    expect(causes).toHaveLength(1);
  });

  it('stop() waits for the run in flight, cancels timers, is idempotent, and later requests resolve at once', async () => {
    const g = gated();
    const { work, timers } = setup(g.run, { intervalMs: 1000 });
    work.start();
    const first = work.request();
    await settle();
    const followUp = work.request();
    let stopped = false;
    const stopping = work.stop().then(() => {
      stopped = true;
    });
    await settle();
    expect(stopped).toBe(false);
    await followUp; // the follow-up will not run: its caller is released
    g.release();
    await stopping;
    await first;
    expect(stopped).toBe(true);
    await work.stop();
    await work.request();
    await timers.advance(5000);
    expect(g.causes).toHaveLength(1);
    expect(timers.pending()).toEqual([]);
  });
});
