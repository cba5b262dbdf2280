/**
 * The embedded read-only TFTP server: one listening socket for requests, and for each accepted
 * read request a session on a fresh ephemeral socket connected to the client (its TID). Write
 * requests are refused with error 2. Datagrams that are not well-formed requests (garbage, short
 * packets, ACK, DATA, ERROR or unknown opcodes on the listening port) get no answer at all: a reply
 * would make the server a reflector for spoofed sources, and no TFTP client needs one.
 *
 * Resources are bounded: transfers in progress (and requests being set up) are capped in
 * total and per client address, a request over a cap is refused with an ERROR from the listening
 * socket (no socket or file is opened for it), and a transfer whose client goes silent is dropped
 * within `maxIdleMs` whatever timeout option it asked for.
 */
import { createSocket } from 'node:dgram';
import type { RemoteInfo, Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { ConfigError } from '../../common/errors.js';
import { listenError, splitAddress } from '../../common/listen.js';
import type { Logger } from '../../common/logger.js';
import { isNegotiationFault, negotiate } from './options.js';
import { ERROR_CODES, encodeError, parsePacket } from './packets.js';
import type { RequestPacket, TftpErrorCode } from './packets.js';
import { isResolveFault, openConfined } from './resolve.js';
import { TftpSession } from './session.js';
import { NativeSession, nativeEngine, nativeEngineError } from './native-engine.js';
import type { SessionOutcome } from './session.js';
import { NetasciiSource, OctetSource } from './source.js';

/** Options of {@link startTftpServer}. */
export interface TftpServerOptions {
  /** Directory served; every request is confined to it (symlinks inside it are followed). */
  root: string;
  /** `host:port` to listen on (IPv6 in brackets); port 0 picks a free port. */
  address: string;
  /** Where transfers and refusals are logged (debug) and failures (info). */
  logger?: Logger;
  /** Retransmission timeout when the client does not negotiate one; default 1000 ms. */
  timeoutMs?: number;
  /** Retransmissions of one packet before a transfer is abandoned; default 5. */
  retries?: number;
  /** Largest blksize granted; larger requests are answered with this. Default 65464 (RFC 2348). */
  maxBlksize?: number;
  /** Largest windowsize granted; larger requests are answered with this. Default 64. */
  maxWindowsize?: number;
  /**
   * Microseconds a transfer spins waiting for each ACK before sleeping in the event loop, while it
   * is the only transfer running (see busy-poll.ts); 0 turns busy polling off. Default 100.
   */
  busyPollUs?: number;
  /**
   * Which engine runs octet transfers: `native` (native/tftp_engine.c, one thread per transfer),
   * `js` (the event loop), or `auto` (native when built). netascii always runs in JavaScript.
   * Default `auto`.
   */
  engine?: 'auto' | 'native' | 'js';
  /** Transfers in progress (requests being set up included) at once; more are refused with "server busy". Default 256. */
  maxTransfers?: number;
  /** The same, per client IP address (all its ports together). Default 8. */
  maxTransfersPerClient?: number;
  /**
   * Longest a transfer waits for a silent client, retransmissions included: a timeout option above
   * this is not acknowledged (RFC 2347 lets a server leave an option out), and retransmissions are
   * cut so that timeout × (retries + 1) fits. Default 60 000 ms.
   */
  maxIdleMs?: number;
}

/** Counters since start. `started` = `completed` + `failed` + `active`. */
export interface TftpStats {
  /** Read transfers begun (file opened, first packet sent). */
  started: number;
  /** Transfers whose last block was acknowledged. */
  completed: number;
  /** Transfers that ended early: timeout, peer error, read error, server closing. */
  failed: number;
  /** Transfers in progress. */
  active: number;
  /** Requests answered with an error and no transfer: not found, access violation, WRQ, mail mode, bad option values. */
  refused: number;
  /** Requests refused with "server busy" because a transfer limit (total or per client) was reached. */
  overLimit: number;
  /** Datagrams on the listening port that were not well-formed requests, dropped without an answer. */
  ignored: number;
  /** Datagrams (nearly all ACKs) a transfer read by busy polling rather than through the event loop. */
  busyPolled: number;
}

/** A running TFTP server. */
export interface TftpServer {
  /** The bound address (the real port when port 0 was asked for). */
  address(): { host: string; port: number };
  /** A snapshot of the counters. */
  stats(): TftpStats;
  /** When the last datagram arrived on the listening port (a request), ms since the epoch; null: none yet. */
  lastRequestAt(): number | null;
  /** Stops listening and aborts transfers in progress; idempotent, resolves when all sockets are closed. */
  close(): Promise<void>;
}

const DEFAULTS = {
  timeoutMs: 1000,
  retries: 5,
  maxBlksize: 65464,
  maxWindowsize: 64,
  busyPollUs: 100,
  maxTransfers: 256,
  maxTransfersPerClient: 8,
  maxIdleMs: 60_000,
} as const;

/** Refusals over the limits are logged at debug each, and summed up at warn at most this often. */
const OVER_LIMIT_WARN_MS = 60_000;

/**
 * Retransmissions a transfer may make with this timeout so that a silent client is dropped within
 * `maxIdleMs`: the first send plus each retransmission waits one timeout.
 */
export function boundedRetries(retries: number, timeoutMs: number, maxIdleMs: number): number {
  return Math.max(0, Math.min(retries, Math.floor(maxIdleMs / timeoutMs) - 1));
}

function socketType(host: string): 'udp4' | 'udp6' {
  return isIP(host) === 6 ? 'udp6' : 'udp4';
}

/** Binds a UDP socket, resolving once it listens. */
function bindSocket(socket: Socket, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    socket.once('error', onError);
    socket.bind({ address: host, port, exclusive: true }, () => {
      socket.off('error', onError);
      resolve();
    });
  });
}

function connectSocket(socket: Socket, peer: RemoteInfo): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    socket.once('error', onError);
    socket.connect(peer.port, peer.address, () => {
      socket.off('error', onError);
      resolve();
    });
  });
}

class Server implements TftpServer {
  private readonly sessions = new Map<string, TftpSession | NativeSession | null>();
  private readonly sockets = new Set<Socket>();
  private readonly counters = { started: 0, completed: 0, failed: 0, refused: 0, overLimit: 0, ignored: 0, busyPolled: 0 };
  /** Entries in `sessions` per client address: what the per-client limit counts. */
  private readonly perClient = new Map<string, number>();
  private readonly maxTransfers: number;
  private readonly maxPerClient: number;
  private readonly maxIdleMs: number;
  /** Refusals over the limits since the last warning, by client address; the timer ends the window. */
  private overLimitWindow: { count: number; clients: Map<string, number>; timer: NodeJS.Timeout } | null = null;
  private closing: Promise<void> | null = null;
  private lastRequest: number | null = null;
  private readonly limits;
  /** Spinning keeps the thread busy, so only a transfer running alone may do it. */
  private readonly busyPoll;

  constructor(
    private readonly listener: Socket,
    private readonly host: string,
    private readonly options: TftpServerOptions,
    private readonly log: Logger | undefined,
    /** The native engine for octet transfers, or null to run them all in JavaScript. */
    private readonly engine: ReturnType<typeof nativeEngine>,
  ) {
    this.maxTransfers = options.maxTransfers ?? DEFAULTS.maxTransfers;
    this.maxPerClient = options.maxTransfersPerClient ?? DEFAULTS.maxTransfersPerClient;
    this.maxIdleMs = options.maxIdleMs ?? DEFAULTS.maxIdleMs;
    this.limits = {
      maxBlksize: options.maxBlksize ?? DEFAULTS.maxBlksize,
      maxWindowsize: options.maxWindowsize ?? DEFAULTS.maxWindowsize,
      defaultTimeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
      maxTimeoutMs: this.maxIdleMs,
    };
    this.busyPoll = {
      budgetUs: options.busyPollUs ?? DEFAULTS.busyPollUs,
      allowed: (): boolean => !this.closing && this.sessions.size === 1,
      polled: (): void => {
        this.counters.busyPolled += 1;
      },
    };
    listener.on('message', (msg: Buffer, peer: RemoteInfo) => this.onRequest(msg, peer));
    listener.on('error', (err: Error) => this.log?.warn({ err }, 'TFTP listener error'));
  }

  address(): { host: string; port: number } {
    const bound = this.listener.address();
    return { host: bound.address, port: bound.port };
  }

  stats(): TftpStats {
    const active = this.counters.started - this.counters.completed - this.counters.failed;
    return { ...this.counters, active };
  }

  lastRequestAt(): number | null {
    return this.lastRequest;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.overLimitWindow) {
      clearTimeout(this.overLimitWindow.timer);
      this.flushOverLimit();
    }
    const native: Promise<void>[] = [];
    for (const session of this.sessions.values()) {
      session?.abort(ERROR_CODES.NOT_DEFINED, 'server shutting down');
      if (session instanceof NativeSession) native.push(session.done);
    }
    // A native transfer's thread uses its socket until it reports: close nothing under it.
    await Promise.all(native);
    const closes = [this.listener, ...this.sockets].map(
      (socket) => new Promise<void>((resolve) => {
        try {
          socket.close(() => resolve());
        } catch {
          resolve(); // already closed
        }
      }),
    );
    await Promise.all(closes);
  }

  /** Answers a request on the listening port; drops anything else. Never throws. */
  private onRequest(msg: Buffer, peer: RemoteInfo): void {
    this.lastRequest = Date.now();
    if (this.closing) return;
    const packet = parsePacket(msg);
    if (packet.kind !== 'RRQ' && packet.kind !== 'WRQ') {
      // Garbage, a stray ACK, DATA or ERROR: no TFTP client waits for an answer to these, and an
      // answer to a spoofed source would make this port a reflector.
      this.counters.ignored += 1;
      this.log?.debug({ peer: `${peer.address}:${peer.port}`, reason: packet.kind === 'fault' ? packet.reason : `${packet.kind} on the listening port` }, 'TFTP datagram ignored');
      return;
    }
    const key = `${peer.address}|${peer.port}`;
    // A repeated request from the same client port while its transfer runs is a retransmission.
    if (this.sessions.has(key)) return;
    const mine = this.perClient.get(peer.address) ?? 0;
    if (this.sessions.size >= this.maxTransfers || mine >= this.maxPerClient) {
      this.refuseOverLimit(peer, this.sessions.size >= this.maxTransfers ? 'total' : 'client');
      return;
    }
    this.sessions.set(key, null);
    this.perClient.set(peer.address, mine + 1);
    this.serve(packet, peer, key).catch((err: unknown) => {
      this.release(key);
      this.log?.warn({ err, peer: key }, 'TFTP request failed');
    });
  }

  /** Forgets a request or transfer: frees its place under the limits. */
  private release(key: string): void {
    if (!this.sessions.delete(key)) return;
    const address = key.slice(0, key.lastIndexOf('|'));
    const n = (this.perClient.get(address) ?? 1) - 1;
    if (n <= 0) this.perClient.delete(address);
    else this.perClient.set(address, n);
  }

  /**
   * Refuses a request over a limit with an ERROR from the listening socket: nothing is opened for
   * it. Logged at debug; a warning sums the refusals up at most once per minute.
   */
  private refuseOverLimit(peer: RemoteInfo, limit: 'total' | 'client'): void {
    this.counters.overLimit += 1;
    this.log?.debug(
      { peer: `${peer.address}:${peer.port}`, limit, maxTransfers: this.maxTransfers, maxTransfersPerClient: this.maxPerClient },
      'TFTP request refused: transfer limit reached',
    );
    try {
      this.listener.send(encodeError(ERROR_CODES.NOT_DEFINED, 'server busy: too many transfers, try again later'), peer.port, peer.address);
    } catch {
      // Closing meanwhile.
    }
    const window = this.overLimitWindow;
    if (window === null) {
      // The first refusal after a quiet minute is reported at once; the rest of the minute is summed up.
      this.log?.warn(
        { peer: peer.address, limit, maxTransfers: this.maxTransfers, maxTransfersPerClient: this.maxPerClient },
        'TFTP transfer limit reached: refusing requests ([pxe] tftp_max_transfers, tftp_max_transfers_per_client)',
      );
      this.openOverLimitWindow();
      return;
    }
    window.count += 1;
    // Bounded: a flood from spoofed addresses must not grow this map without end.
    if (window.clients.size < 1000 || window.clients.has(peer.address)) window.clients.set(peer.address, (window.clients.get(peer.address) ?? 0) + 1);
  }

  private openOverLimitWindow(): void {
    const timer = setTimeout(() => this.flushOverLimit(true), OVER_LIMIT_WARN_MS);
    timer.unref();
    this.overLimitWindow = { count: 0, clients: new Map(), timer };
  }

  /**
   * Ends the current warning window: one warning for its refusals, if there were any, and then a
   * new window (`reopen`), so that a flood is one warning a minute; a quiet minute ends the series.
   */
  private flushOverLimit(reopen = false): void {
    const window = this.overLimitWindow;
    this.overLimitWindow = null;
    if (!window || window.count === 0) return;
    if (reopen && !this.closing) this.openOverLimitWindow();
    const busiest = [...window.clients.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
    this.log?.warn(
      { refused: window.count, clients: window.clients.size, busiest: Object.fromEntries(busiest), maxTransfers: this.maxTransfers, maxTransfersPerClient: this.maxPerClient },
      `TFTP refused ${window.count} more requests over the transfer limits in the last minute`,
    );
  }

  /** Opens the transfer socket (our TID), then either refuses the request on it or starts a session. */
  private async serve(request: RequestPacket, peer: RemoteInfo, key: string): Promise<void> {
    const socket = createSocket({ type: socketType(this.host) });
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    const opened = request.kind === 'RRQ' && request.mode !== 'mail' ? openConfined(this.options.root, request.filename) : null;
    try {
      await bindSocket(socket, this.host, 0);
      await connectSocket(socket, peer);
    } catch (err) {
      socket.close();
      const file = await opened;
      if (file && !isResolveFault(file)) await file.handle.close();
      throw err;
    }
    const log = { peer: key.replace('|', ':'), file: request.filename, mode: request.mode };
    const file = await opened;
    if (this.closing) {
      // shutdown() has closed this socket already; just release the file.
      if (file && !isResolveFault(file)) await file.handle.close();
      this.release(key);
      return;
    }
    const refuse = (code: TftpErrorCode, message: string): void => {
      this.counters.refused += 1;
      this.release(key);
      this.log?.debug({ ...log, reason: message }, 'TFTP request refused');
      try {
        socket.send(encodeError(code, message), () => socket.close());
      } catch {
        // Closed by shutdown() meanwhile.
      }
    };
    if (request.kind === 'WRQ') return refuse(ERROR_CODES.ACCESS_VIOLATION, 'access violation: this server is read-only');
    if (!file) return refuse(ERROR_CODES.ILLEGAL_OPERATION, 'mail mode is not supported');
    if (isResolveFault(file)) return refuse(file.code, file.message);
    const netascii = request.mode === 'netascii';
    const params = negotiate(request.options, netascii ? null : file.size, this.limits);
    if (isNegotiationFault(params)) {
      await file.handle.close();
      return refuse(params.code, params.message);
    }
    // However long a timeout the client asked for, a silent client is dropped within maxIdleMs.
    const retries = boundedRetries(this.options.retries ?? DEFAULTS.retries, params.timeoutMs, this.maxIdleMs);
    const engine = this.engine;
    if (engine && !netascii && NativeSession.usable(socket)) {
      const native = new NativeSession({
        engine,
        socket,
        file: file.handle,
        size: file.size,
        params,
        retries,
        busyPollUs: this.busyPoll.budgetUs,
        onEnd: (outcome, polled) => {
          this.counters.busyPolled += polled;
          this.onEnd(key, outcome, log);
        },
      });
      this.sessions.set(key, native);
      this.counters.started += 1;
      this.log?.debug({ ...log, blksize: params.blksize, windowsize: params.windowsize, size: file.size, engine: 'native' }, 'TFTP transfer started');
      try {
        native.start();
      } catch (err) {
        // No thread (resource limits): the transfer ends here, telling the client.
        this.log?.warn({ ...log, err }, 'TFTP transfer could not start');
        try {
          socket.send(encodeError(ERROR_CODES.NOT_DEFINED, 'server busy'), () => socket.close());
        } catch {
          // Closed meanwhile.
        }
        await file.handle.close();
        this.onEnd(key, { ok: false, reason: `could not start: ${(err as Error).message}` }, log);
      }
      return;
    }
    const octets = new OctetSource(file.handle, file.size);
    const session = new TftpSession({
      socket,
      source: netascii ? new NetasciiSource(octets) : octets,
      params,
      retries,
      busyPoll: this.busyPoll,
      onEnd: (outcome) => this.onEnd(key, outcome, log),
    });
    this.sessions.set(key, session);
    this.counters.started += 1;
    this.log?.debug({ ...log, blksize: params.blksize, windowsize: params.windowsize, size: file.size }, 'TFTP transfer started');
    session.start();
  }

  private onEnd(key: string, outcome: SessionOutcome, log: object): void {
    this.release(key);
    if (outcome.ok) {
      this.counters.completed += 1;
      this.log?.debug({ ...log, bytes: outcome.bytes }, 'TFTP transfer completed');
    } else {
      this.counters.failed += 1;
      this.log?.info({ ...log, reason: outcome.reason }, 'TFTP transfer failed');
    }
  }
}

/**
 * Starts a read-only TFTP server on `options.address` serving `options.root`. Rejects with a
 * `ListenError` naming the address and the option to change when the address cannot be bound, and
 * with a `ConfigError` when engine `native` is asked for but the add-on is not built.
 */
export async function startTftpServer(options: TftpServerOptions): Promise<TftpServer> {
  const choice = options.engine ?? 'auto';
  const engine = choice === 'js' ? null : nativeEngine();
  if (choice === 'native' && !engine) {
    // The operator's to fix (build it or choose another engine): one line and exit 2, no stack.
    throw new ConfigError(
      `the native TFTP engine is not built (${nativeEngineError()}): build it with a C compiler ("npm run build:native" in a checkout, "npm rebuild ironring" for a package), or set [pxe] tftp_engine = "js"`,
      undefined,
      'pxe.tftp_engine',
    );
  }
  const { host, port } = splitAddress(options.address);
  let listener: Socket | undefined;
  try {
    listener = createSocket({ type: socketType(host) });
    await bindSocket(listener, host, port);
  } catch (err) {
    try {
      listener?.close();
    } catch {
      // Never bound: nothing to close.
    }
    throw listenError(err, options.address, 'TFTP server', '--tftp-address or [pxe] tftp_address');
  }
  const log = options.logger?.child({ component: 'tftp' });
  if (choice === 'auto' && !engine) log?.warn({ reason: nativeEngineError() }, 'native TFTP engine not built; transfers run in JavaScript');
  return new Server(listener, host, options, log, engine);
}
