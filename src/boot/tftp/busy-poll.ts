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

/** What a dgram socket's libuv handle offers that is used here. */
interface UdpHandle {
  fd?: unknown;
  recvStop?: unknown;
}

/** The libuv handle of a dgram socket, or undefined when this Node keeps it elsewhere. */
function udpHandle(socket: Socket): UdpHandle | undefined {
  // dgram keeps its libuv handle in an internal state object (Node ≥ 12); `_handle` is the same
  // handle behind a deprecation warning. Any surprise means no busy polling, never an error.
  const key = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol');
  const state = key ? ((socket as unknown as Record<symbol, unknown>)[key] as { handle?: UdpHandle } | undefined) : undefined;
  return state?.handle;
}

/** The descriptor of a bound dgram socket, or null when this Node does not expose it. */
export function socketFd(socket: Socket): number | null {
  const fd = udpHandle(socket)?.fd;
  return typeof fd === 'number' && Number.isInteger(fd) && fd >= 0 ? fd : null;
}

/**
 * Stops the event loop reading `socket` (its datagrams are left for another reader: the native
 * engine's thread); false when this Node does not allow it.
 */
export function stopReceiving(socket: Socket): boolean {
  const handle = udpHandle(socket);
  if (typeof handle?.recvStop !== 'function') return false;
  return (handle.recvStop as () => number).call(handle) === 0;
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

/** Blocks acknowledged while each mode is measured, at the start of every cycle. */
export const MEASURE_BLOCKS = 128;
/** Blocks per cycle: two measurements, then the faster mode for the rest. */
export const CYCLE_BLOCKS = 4096;
/** Most waits left to the event loop after a run of late ACKs, before spinning is tried again. */
export const BACKOFF_MAX = 1024;

/**
 * When one transfer spins, decided by what it measures rather than assumed.
 *
 * Spinning wins when the round trip is short and a CPU would otherwise sit idle: on an idle
 * machine (above all a virtual one, where waking a halted CPU is dear) it answers in a third of
 * the time. It loses when the CPUs are busy: the wake-ups are cheap then, and the spinning takes
 * time the client needs. So every cycle of {@link CYCLE_BLOCKS} acknowledged blocks starts by
 * timing {@link MEASURE_BLOCKS} blocks spinning and as many sleeping, and spends the rest in the
 * faster mode; the loser costs about 3 % of a long transfer.
 *
 * Within spinning, an ACK later than the budget backs off: the next 1, 2, 4 … waits (at most
 * {@link BACKOFF_MAX}) are left to the event loop, so a slow network soon costs no spins at all.
 */
export class SpinPolicy {
  /** Blocks acknowledged in this cycle. */
  private blocks = 0;
  /** Time and block count where the running measurement began. */
  private markAt: number;
  private markBlocks = 0;
  /** Cost per block spinning, measured at the start of this cycle. */
  private spinCost = 0;
  private spinWins = true;
  private misses = 0;
  private skip = 0;

  constructor(now: number) {
    this.markAt = now;
  }

  /** The mode for this stretch of the cycle: measuring spinning, measuring sleeping, or the winner. */
  get spinning(): boolean {
    if (this.blocks < MEASURE_BLOCKS) return true;
    if (this.blocks < 2 * MEASURE_BLOCKS) return false;
    return this.spinWins;
  }

  /** Whether to spin for the next wait: the mode, unless late ACKs have backed spinning off. */
  takeTurn(): boolean {
    if (!this.spinning) return false;
    if (this.skip > 0) {
      this.skip -= 1;
      return false;
    }
    return true;
  }

  /** An ACK arrived within the budget. */
  hit(): void {
    this.misses = 0;
  }

  /** The budget ran out before the ACK: leave the next 2^misses waits to the event loop. */
  miss(): void {
    this.skip = Math.min(BACKOFF_MAX, 2 ** this.misses);
    this.misses += 1;
  }

  /** `n` more blocks were acknowledged at time `now` (ms); closes measurements and cycles. */
  acknowledged(n: number, now: number): void {
    const before = this.blocks;
    this.blocks += n;
    if (before < MEASURE_BLOCKS && this.blocks >= MEASURE_BLOCKS) {
      this.spinCost = (now - this.markAt) / (this.blocks - this.markBlocks);
      this.markAt = now;
      this.markBlocks = this.blocks;
    } else if (before < 2 * MEASURE_BLOCKS && this.blocks >= 2 * MEASURE_BLOCKS) {
      const sleepCost = (now - this.markAt) / (this.blocks - this.markBlocks);
      this.spinWins = this.spinCost < sleepCost;
    } else if (this.blocks >= CYCLE_BLOCKS) {
      this.blocks = 0;
      this.markAt = now;
      this.markBlocks = 0;
    }
  }
}
