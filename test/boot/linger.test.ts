/** The boot servers' linger in a graceful stop (`src/boot/linger.ts`), on a fake clock. */
import { describe, expect, it } from 'vitest';
import { combinedActivity, lingerWhileBusy } from '../../src/boot/linger.js';
import type { BootActivity } from '../../src/boot/linger.js';

/** A fake clock whose sleeps advance it; `script(t)` says what the servers do at time t. */
function clocked(script: (t: number) => BootActivity) {
  let t = 1_000_000;
  const start = t;
  return {
    activity: () => script(t - start),
    now: () => t,
    sleep: async (ms: number) => {
      t += ms;
    },
  };
}

const OPTS = { quietMs: 2_000, maxMs: 10_000, pollMs: 100 };

describe('lingerWhileBusy', () => {
  it('does not wait at all when nothing is in flight and nothing happened lately (an idle conductor stops at once)', async () => {
    const c = clocked(() => ({ inFlight: 0, lastActivityAt: null }));
    expect(await lingerWhileBusy(c.activity, { ...OPTS, ...c })).toEqual({ waitedMs: 0, ended: 'quiet', cut: 0 });
    const old = clocked(() => ({ inFlight: 0, lastActivityAt: 1_000_000 - 2_000 }));
    expect((await lingerWhileBusy(old.activity, { ...OPTS, ...old })).waitedMs).toBe(0);
    // A clock that ticks between two readings (a loaded machine): still no wait reported.
    let t = 0;
    const ticking = { now: () => (t += 1), sleep: async () => undefined };
    expect(await lingerWhileBusy(() => ({ inFlight: 0, lastActivityAt: null }), { ...OPTS, ...ticking })).toEqual({ waitedMs: 0, ended: 'quiet', cut: 0 });
  });

  it('waits for a transfer in flight to finish, then for the quiet time after its last request', async () => {
    // A download from t=-500 to t=3000: the servers saw the request at -500.
    const c = clocked((t) => ({ inFlight: t < 3_000 ? 1 : 0, lastActivityAt: 1_000_000 - 500 }));
    const report = await lingerWhileBusy(c.activity, { ...OPTS, ...c });
    expect(report).toEqual({ waitedMs: 3_000, ended: 'quiet', cut: 0 });
  });

  it('serves on for the quiet time after a recent request or DHCP answer, and longer when requests keep coming', async () => {
    const once = clocked(() => ({ inFlight: 0, lastActivityAt: 1_000_000 - 500 }));
    expect(await lingerWhileBusy(once.activity, { ...OPTS, ...once })).toEqual({ waitedMs: 1_500, ended: 'quiet', cut: 0 });
    // A boot fetching its next file at t=1000 (config, then kernel): the quiet time starts again.
    const again = clocked((t) => ({ inFlight: 0, lastActivityAt: 1_000_000 + (t >= 1_000 ? 1_000 : -500) }));
    expect(await lingerWhileBusy(again.activity, { ...OPTS, ...again })).toEqual({ waitedMs: 3_000, ended: 'quiet', cut: 0 });
  });

  it('never serves on past maxMs, and says how many transfers the close will cut', async () => {
    const c = clocked((t) => ({ inFlight: 2, lastActivityAt: 1_000_000 + t }));
    expect(await lingerWhileBusy(c.activity, { ...OPTS, ...c })).toEqual({ waitedMs: 10_000, ended: 'max', cut: 2 });
  });

  it('adds in-flight counts and takes the latest activity over the servers', () => {
    expect(combinedActivity([{ inFlight: 1, lastActivityAt: 5 }, { inFlight: 0, lastActivityAt: null }, { inFlight: 2, lastActivityAt: 9 }])).toEqual({ inFlight: 3, lastActivityAt: 9 });
    expect(combinedActivity([])).toEqual({ inFlight: 0, lastActivityAt: null });
  });
});
