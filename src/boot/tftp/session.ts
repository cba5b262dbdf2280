/**
 * One read transfer on its own connected UDP socket (the server's TID for this peer, RFC 1350 §4).
 *
 * The sender keeps the blocks of the current window in reusable packet buffers, so a
 * retransmission is a resend with no file access. Only a timeout retransmits; a duplicate ACK is
 * ignored, which is the cure for the sorcerer's apprentice syndrome (RFC 1123 §4.2.3.1). With
 * windowsize (RFC 7440) an ACK of block k starts the next window at k+1, which both slides a fully
 * acknowledged window and resends the tail of a partly received one.
 *
 * The socket is connected to the peer, so the kernel drops datagrams from any other address or
 * port: a stray packet cannot disturb the transfer (RFC 1350 would also answer it with error 5).
 */
import type { Socket } from 'node:dgram';
import type { TransferParameters } from './options.js';
import { DATA_HEADER, ERROR_CODES, OPCODES, encodeError, encodeOack, parsePacket, writeDataHeader } from './packets.js';
import type { TftpErrorCode } from './packets.js';
import type { ByteSource } from './source.js';
import { READ_FAILED, SpinPolicy, socketFd, spinRead } from './busy-poll.js';

/** How a transfer ended. */
export type SessionOutcome = { ok: true; bytes: number; blocks: number } | { ok: false; reason: string };

/** What a session needs; the socket is bound and connected to the peer. */
export interface SessionOptions {
  socket: Socket;
  source: ByteSource;
  params: TransferParameters;
  /** Retransmissions of the same packet before giving up. */
  retries: number;
  /** Busy polling for ACKs (see busy-poll.ts); absent or a zero budget turns it off. */
  busyPoll?: BusyPollOptions;
  onEnd(outcome: SessionOutcome): void;
}

/** How long a session spins for each ACK, and whether it may spin right now. */
export interface BusyPollOptions {
  /** Microseconds to spin per wait before leaving the socket to the event loop. */
  budgetUs: number;
  /** Asked before each spell of spinning (the server allows it while few transfers run). */
  allowed(): boolean;
  /** Told of each datagram read by spinning. */
  polled(): void;
}

/** The event loop gets a turn at least this often while a session keeps answering ACKs itself. */
const BUSY_SLICE_MS = 2;

export class TftpSession {
  private readonly socket: Socket;
  private readonly source: ByteSource;
  private readonly blksize: number;
  private readonly windowsize: number;
  private readonly retries: number;
  private readonly onEnd: (outcome: SessionOutcome) => void;
  /** Packet buffers: the window plus one block prepared ahead; block b lives in slot b % slots.length. */
  private readonly slots: Buffer[];
  /** What is sent for each slot: the whole buffer, or a view of it for the short last block. */
  private readonly views: Buffer[];
  private readonly timeoutMs: number;
  private readonly oack: Buffer | null;
  private timer: NodeJS.Timeout;

  /** Waiting for ACK 0 of the OACK rather than for data ACKs. */
  private awaitingOack: boolean;
  /** Highest block acknowledged in sequence (internal numbers are not wrapped to 16 bits). */
  private acked = 0;
  /** Highest block whose packet is ready in its slot. */
  private filled = 0;
  /** Payload bytes already copied into the block being filled (across asynchronous reads). */
  private partial = 0;
  /** Highest block sent so far. */
  private sent = 0;
  /** Next block to send. */
  private next = 1;
  /** The final block (payload shorter than blksize), once the source has ended. */
  private last = -1;
  private bytes = 0;
  private retriesLeft: number;
  /** When the peer last made progress; checked when the timer fires rather than re-arming per ACK. */
  private lastProgress = performance.now();
  private waitingForSource = false;
  private ended = false;
  /** The socket's descriptor while busy polling is on for this transfer, else null. */
  private busyFd: number | null;
  private readonly busyPoll: BusyPollOptions | undefined;
  /** When to spin: measured per transfer, null while busy polling is off. */
  private readonly spin: SpinPolicy | null;
  /** Where busy-polled datagrams land: an ACK is 4 bytes, anything longer is an error or noise. */
  private readonly inbox = Buffer.allocUnsafe(1024);

  constructor(options: SessionOptions) {
    this.socket = options.socket;
    this.source = options.source;
    this.blksize = options.params.blksize;
    this.windowsize = options.params.windowsize;
    this.retries = options.retries;
    this.retriesLeft = options.retries;
    this.onEnd = options.onEnd;
    this.slots = Array.from({ length: this.windowsize + 1 }, () => Buffer.allocUnsafe(DATA_HEADER + this.blksize));
    this.views = [...this.slots];
    this.timeoutMs = options.params.timeoutMs;
    this.oack = options.params.oack.size > 0 ? encodeOack(options.params.oack) : null;
    this.awaitingOack = this.oack !== null;
    this.busyPoll = options.busyPoll;
    this.busyFd = this.busyPoll && this.busyPoll.budgetUs > 0 ? socketFd(this.socket) : null;
    this.spin = this.busyFd === null ? null : new SpinPolicy(performance.now());
    this.socket.on('message', (msg: Buffer) => {
      this.onMessage(msg);
      this.pump();
    });
    this.socket.on('error', (err: Error) => this.fail(`socket error: ${err.message}`));
    this.timer = setTimeout(() => this.onTimer(), this.timeoutMs);
  }

  /** Sends the OACK, or the first window when no option was acknowledged. */
  start(): void {
    if (this.oack) this.socket.send(this.oack);
    else this.drain();
    this.pump();
  }

  /** Ends the transfer from our side (server closing), telling the peer why. */
  abort(code: TftpErrorCode, message: string): void {
    if (this.ended) return;
    this.sendError(code, message);
    this.fail(message);
  }

  private onMessage(msg: Buffer): void {
    if (this.ended) return;
    // Fast path for the one packet a healthy transfer receives.
    if (msg.length >= 4 && msg[0] === 0 && msg[1] === OPCODES.ACK) {
      this.onAck((msg[2]! << 8) | msg[3]!);
      return;
    }
    const packet = parsePacket(msg);
    if (packet.kind === 'ERROR') this.fail(`peer sent error ${packet.code}: ${packet.message}`);
    // Anything else on a transfer socket (a repeated request, DATA, garbage) is dropped: the
    // transfer goes on and the peer's retransmissions or ours sort out the rest.
  }

  /**
   * Answers ACKs straight from the socket while they come within the busy-poll budget and the
   * spin policy favours it, giving the event loop a turn every few milliseconds; returns to it when
   * one is late, the source must be awaited, or the server disallows spinning (many transfers).
   */
  private pump(): void {
    const fd = this.busyFd;
    const spin = this.spin;
    if (fd === null || !spin || this.waitingForSource || this.ended || !this.busyPoll!.allowed() || !spin.takeTurn()) return;
    const sliceEnd = performance.now() + BUSY_SLICE_MS;
    while (!this.ended && !this.waitingForSource && spin.spinning) {
      const n = spinRead(fd, this.inbox, this.busyPoll!.budgetUs);
      if (n < 0) {
        // A read error is left for the event loop to report; a late ACK backs spinning off.
        if (n === READ_FAILED) this.busyFd = null;
        else spin.miss();
        return;
      }
      spin.hit();
      this.busyPoll!.polled();
      this.onMessage(this.inbox.subarray(0, n));
      if (performance.now() >= sliceEnd) {
        setImmediate(() => this.pump());
        return;
      }
    }
  }

  private onAck(block16: number): void {
    if (this.awaitingOack) {
      if (block16 !== 0) return;
      this.awaitingOack = false;
      this.progress();
      this.drain();
      return;
    }
    // The one internal block number at or above `acked` that has these low 16 bits; a stale ACK
    // maps far beyond `sent` and is ignored with the bogus ones.
    const k = this.acked + ((block16 - this.acked) & 0xffff);
    if (k === this.acked || k > this.sent) return;
    this.spin?.acknowledged(k - this.acked, performance.now());
    this.acked = k;
    if (k === this.last) {
      this.finish();
      return;
    }
    this.next = k + 1;
    this.drain();
    this.progress();
  }

  /**
   * Sends blocks from `next` up to the end of the window, filling slots from the source, then
   * prepares the block after the window while the peer is busy, so that its ACK is answered with
   * a send and nothing else (what lock-step throughput depends on).
   */
  private drain(): void {
    const windowEnd = this.acked + this.windowsize;
    const slots = this.slots.length;
    while (this.next <= windowEnd && (this.last < 0 || this.next <= this.last)) {
      const block = this.next;
      if (block > this.filled && !this.fill(block)) {
        this.waitForSource();
        return;
      }
      this.socket.send(this.views[block % slots]!);
      if (block > this.sent) this.sent = block;
      this.next = block + 1;
    }
    if (this.filled === windowEnd && this.last < 0 && !this.fill(windowEnd + 1)) this.waitForSource();
  }

  /** Completes block `filled + 1` from buffered bytes; false when the source must be awaited. */
  private fill(block: number): boolean {
    const slot = block % this.slots.length;
    const packet = this.slots[slot]!;
    if (this.partial === 0) writeDataHeader(packet, block & 0xffff);
    this.partial += this.source.take(packet, DATA_HEADER + this.partial, this.blksize - this.partial);
    if (this.partial < this.blksize && !this.source.done) return false;
    if (this.partial < this.blksize) {
      this.last = block;
      this.views[slot] = packet.subarray(0, DATA_HEADER + this.partial);
    }
    this.bytes += this.partial;
    this.partial = 0;
    this.filled = block;
    return true;
  }

  private waitForSource(): void {
    if (this.waitingForSource) return;
    this.waitingForSource = true;
    this.source.ready().then(
      () => {
        this.waitingForSource = false;
        if (this.ended) return;
        this.drain();
        this.pump();
      },
      (err: unknown) => {
        this.sendError(ERROR_CODES.NOT_DEFINED, 'read error');
        this.fail(`read error: ${(err as Error).message}`);
      },
    );
  }

  /** Progress resets the retry budget and, in effect, the retransmission timer. */
  private progress(): void {
    this.retriesLeft = this.retries;
    this.lastProgress = performance.now();
  }

  /** The timer runs from the last progress: re-arm for the rest of the period, or time out. */
  private onTimer(): void {
    if (this.ended) return;
    const idle = performance.now() - this.lastProgress;
    if (idle < this.timeoutMs - 1) {
      this.timer = setTimeout(() => this.onTimer(), this.timeoutMs - idle);
      return;
    }
    this.onTimeout();
  }

  private onTimeout(): void {
    if (this.retriesLeft <= 0) {
      this.sendError(ERROR_CODES.NOT_DEFINED, 'transfer timed out');
      this.fail('timed out waiting for an acknowledgement');
      return;
    }
    this.retriesLeft -= 1;
    this.lastProgress = performance.now();
    this.timer = setTimeout(() => this.onTimer(), this.timeoutMs);
    if (this.awaitingOack && this.oack) {
      this.socket.send(this.oack);
      return;
    }
    // Resend everything outstanding (the whole window, RFC 7440 §4), then carry on.
    this.next = this.acked + 1;
    this.drain();
  }

  private sendError(code: TftpErrorCode, message: string): void {
    try {
      this.socket.send(encodeError(code, message));
    } catch {
      // The socket may already be closed; the peer will time out on its own.
    }
  }

  private finish(): void {
    this.end({ ok: true, bytes: this.bytes, blocks: this.last });
  }

  private fail(reason: string): void {
    this.end({ ok: false, reason });
  }

  private end(outcome: SessionOutcome): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    // Close after pending sends are flushed: a callback-less send may still be queued.
    setImmediate(() => {
      try {
        this.socket.close();
      } catch {
        // Already closed.
      }
    });
    void this.source.close();
    this.onEnd(outcome);
  }
}
