/**
 * Busy polling of a transfer socket: after sending, read the socket directly for a short while
 * instead of going back to the event loop to sleep until the kernel wakes us.
 *
 * Lock-step TFTP sends one block per round trip, so its throughput is the inverse of the round
 * trip, and on loopback or a fast LAN most of a round trip is the two process wake-ups (sleep in
 * epoll, be woken by the peer's datagram), not the wire. A server that is already awake when the
 * ACK lands answers it at once; this is what the kernel's SO_BUSY_POLL does for sockets and what
 * the TFTP session does here, bounded in time (`budgetUs` per wait) and abandoned for a transfer
 * whose ACKs keep arriving later than the budget (a slow network gains nothing from it).
 *
 * The read is a plain read(2) on the socket's descriptor, which libuv keeps non-blocking: EAGAIN
 * means "nothing yet". libuv still owns the socket; a datagram read here is simply not seen by it,
 * and anything not read here (after the budget) is delivered by the event loop as usual.
 */
import type { Socket } from 'node:dgram';
import { readSync } from 'node:fs';

/** The descriptor of a bound dgram socket, or null when this Node does not expose it. */
export function socketFd(socket: Socket): number | null {
  // dgram keeps its libuv handle in an internal state object (Node ≥ 12); `_handle` is the same
  // handle behind a deprecation warning. Any surprise means no busy polling, never an error.
  const key = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol');
  const state = key ? ((socket as unknown as Record<symbol, unknown>)[key] as { handle?: { fd?: unknown } } | undefined) : undefined;
  const fd = state?.handle?.fd;
  return typeof fd === 'number' && Number.isInteger(fd) && fd >= 0 ? fd : null;
}

/** What {@link spinRead} returns besides a datagram length. */
export const NOTHING_YET = -1;
export const READ_FAILED = -2;

/**
 * Reads one datagram into `buf` from non-blocking `fd`, retrying until one arrives or `budgetUs`
 * has passed. Returns its length, {@link NOTHING_YET}, or {@link READ_FAILED} (any error other
 * than EAGAIN: the caller leaves the socket to the event loop, which reports it).
 */
export function spinRead(fd: number, buf: Buffer, budgetUs: number): number {
  const deadline = performance.now() + budgetUs / 1000;
  // A failed read throws; without stack traces the throw costs a third as much.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    for (;;) {
      try {
        return readSync(fd, buf, 0, buf.length, null);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return READ_FAILED;
      }
      if (performance.now() >= deadline) return NOTHING_YET;
    }
  } finally {
    Error.stackTraceLimit = limit;
  }
}
