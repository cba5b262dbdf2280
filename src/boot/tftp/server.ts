/**
 * The embedded read-only TFTP server: one listening socket for requests, and for each accepted
 * read request a session on a fresh ephemeral socket connected to the client (its TID). Write
 * requests are refused with error 2; malformed datagrams are answered with an error (never an
 * error to an error) and the server keeps serving.
 */
import { createSocket } from 'node:dgram';
import type { RemoteInfo, Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { listenError, splitAddress } from '../../common/listen.js';
import type { Logger } from '../../common/logger.js';
import { isNegotiationFault, negotiate } from './options.js';
import { ERROR_CODES, OPCODES, encodeError, parsePacket } from './packets.js';
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
  /** Requests answered with an error and no transfer: not found, access violation, WRQ, bad options, malformed. */
  refused: number;
  /** Datagrams (nearly all ACKs) a transfer read by busy polling rather than through the event loop. */
  busyPolled: number;
}

/** A running TFTP server. */
export interface TftpServer {
  /** The bound address (the real port when port 0 was asked for). */
  address(): { host: string; port: number };
  /** A snapshot of the counters. */
  stats(): TftpStats;
  /** Stops listening and aborts transfers in progress; idempotent, resolves when all sockets are closed. */
  close(): Promise<void>;
}

const DEFAULTS = { timeoutMs: 1000, retries: 5, maxBlksize: 65464, maxWindowsize: 64, busyPollUs: 100 } as const;

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
  private readonly counters = { started: 0, completed: 0, failed: 0, refused: 0, busyPolled: 0 };
  private closing: Promise<void> | null = null;
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
    this.limits = {
      maxBlksize: options.maxBlksize ?? DEFAULTS.maxBlksize,
      maxWindowsize: options.maxWindowsize ?? DEFAULTS.maxWindowsize,
      defaultTimeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
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

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
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

  /** Answers a datagram from the listening port; never throws. */
  private onRequest(msg: Buffer, peer: RemoteInfo): void {
    if (this.closing) return;
    const packet = parsePacket(msg);
    if (packet.kind === 'fault') {
      // Never answer an ERROR with an ERROR: two confused peers would bounce them forever.
      if (packet.opcode === OPCODES.ERROR) return;
      this.refuseOnListener(peer, packet.code, packet.reason);
      return;
    }
    if (packet.kind === 'ERROR') return;
    if (packet.kind === 'ACK') {
      this.refuseOnListener(peer, ERROR_CODES.UNKNOWN_TID, 'unknown transfer ID');
      return;
    }
    const key = `${peer.address}|${peer.port}`;
    // A repeated request from the same client port while its transfer runs is a retransmission.
    if (this.sessions.has(key)) return;
    this.sessions.set(key, null);
    this.serve(packet, peer, key).catch((err: unknown) => {
      this.sessions.delete(key);
      this.log?.warn({ err, peer: key }, 'TFTP request failed');
    });
  }

  private refuseOnListener(peer: RemoteInfo, code: TftpErrorCode, reason: string): void {
    this.counters.refused += 1;
    this.log?.debug({ peer: `${peer.address}:${peer.port}`, reason }, 'TFTP datagram refused');
    this.listener.send(encodeError(code, reason), peer.port, peer.address);
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
      this.sessions.delete(key);
      return;
    }
    const refuse = (code: TftpErrorCode, message: string): void => {
      this.counters.refused += 1;
      this.sessions.delete(key);
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
    const engine = this.engine;
    if (engine && !netascii && NativeSession.usable(socket)) {
      const native = new NativeSession({
        engine,
        socket,
        file: file.handle,
        size: file.size,
        params,
        retries: this.options.retries ?? DEFAULTS.retries,
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
      retries: this.options.retries ?? DEFAULTS.retries,
      busyPoll: this.busyPoll,
      onEnd: (outcome) => this.onEnd(key, outcome, log),
    });
    this.sessions.set(key, session);
    this.counters.started += 1;
    this.log?.debug({ ...log, blksize: params.blksize, windowsize: params.windowsize, size: file.size }, 'TFTP transfer started');
    session.start();
  }

  private onEnd(key: string, outcome: SessionOutcome, log: object): void {
    this.sessions.delete(key);
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
 * `ListenError` naming the address and the option to change when the address cannot be bound.
 */
export async function startTftpServer(options: TftpServerOptions): Promise<TftpServer> {
  const choice = options.engine ?? 'auto';
  const engine = choice === 'js' ? null : nativeEngine();
  if (choice === 'native' && !engine) {
    throw new Error(`the native TFTP engine is not built (${nativeEngineError()}): build it with a C compiler ("npm run build:native" in a checkout, "npm rebuild ironring" for a package), or set [pxe] tftp_engine = "js"`);
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
