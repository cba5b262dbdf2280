/**
 * The boot servers' last moments in a graceful stop. Once a stopping conductor has handed its
 * nodes off, nothing new names it — but a machine may be halfway through a download from it, or
 * have been told "boot from here" a moment ago (a ProxyDHCP or dnsmasq answer just before the
 * hand-off) and not have asked yet. Closing the servers at once cuts the first and refuses the
 * second: iPXE then retries, or, for the `boot.ipxe` its firmware fetches itself, gives up to the
 * next boot device and the machine reboots (20–60 s lost). So the servers keep serving while a
 * transfer is in flight or a request came in (or a DHCP answer went out) recently, for a few
 * seconds at most: a stop never waits long for a client that went silent.
 */

/** What the boot servers are doing, summed over HTTP and TFTP. */
export interface BootActivity {
  /** Requests and transfers in progress. */
  inFlight: number;
  /** When a machine last asked anything of them (or was last told to), ms since the epoch; null: never. */
  lastActivityAt: number | null;
}

export interface LingerOptions {
  /** Serve on until nothing is in flight and nothing happened for this long (ms). */
  quietMs: number;
  /** Never serve on longer than this after the hand-off (ms): a stop stays bounded. */
  maxMs: number;
  /** How often `activity` is read (ms). Default 100. */
  pollMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** How the linger ended. */
export interface LingerReport {
  /** How long the servers served on (ms); 0 when they were idle. */
  waitedMs: number;
  /** `quiet`: nothing in flight, nothing recent; `max`: cut at `maxMs`. */
  ended: 'quiet' | 'max';
  /** Transfers still in flight when it ended (cut by the close that follows). */
  cut: number;
}

/** Waits while `activity()` says the boot servers are busy or were used recently, up to `maxMs`. */
export async function lingerWhileBusy(activity: () => BootActivity, options: LingerOptions): Promise<LingerReport> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const pollMs = options.pollMs ?? 100;
  const start = now();
  // An idle conductor never sleeps here: it reports 0, not the clock's tick between two readings.
  let slept = false;
  for (;;) {
    const { inFlight, lastActivityAt } = activity();
    const t = now();
    const recent = lastActivityAt !== null && t - lastActivityAt < options.quietMs;
    if (inFlight === 0 && !recent) return { waitedMs: slept ? t - start : 0, ended: 'quiet', cut: 0 };
    const left = start + options.maxMs - t;
    if (left <= 0) return { waitedMs: t - start, ended: 'max', cut: inFlight };
    await sleep(Math.min(pollMs, left));
    slept = true;
  }
}

/** The activity of several servers as one: in-flight counts add up, the latest activity wins. */
export function combinedActivity(parts: readonly BootActivity[]): BootActivity {
  let inFlight = 0;
  let lastActivityAt: number | null = null;
  for (const p of parts) {
    inFlight += p.inFlight;
    if (p.lastActivityAt !== null && (lastActivityAt === null || p.lastActivityAt > lastActivityAt)) lastActivityAt = p.lastActivityAt;
  }
  return { inFlight, lastActivityAt };
}
