/**
 * How the conductor's periodic work (reconcile passes, power sync) spreads many nodes over a few
 * workers without starving the event loop, and how many nodes one SQL statement names.
 */

/** Nodes named per statement (lock, release, read): far below both engines' bound-parameter limits. */
export const BATCH = 500;

/** Longest stretch (ms) a pass keeps the event loop before letting timers and sockets run. */
export const SLICE_MS = 10;

/**
 * Runs `fn` over `items` with at most `workers` at a time, giving the event loop back every
 * `SLICE_MS`: boot files are written with synchronous calls, and chains of resolved promises never
 * let timers run, so without this a big pass would starve the heartbeat (and look dead to the
 * others) and the TFTP server.
 */
export async function pool<T>(items: readonly T[], workers: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let sliceStart = performance.now();
  const run = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
      if (performance.now() - sliceStart > SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(workers, items.length) }, run));
}

/** `items` in slices of at most `size`, in order. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
