/**
 * The native transfer engine (native/tftp_engine.c, built by `npm ci` through node-gyp): the data
 * phase of an octet transfer on its own thread, one send and one receive system call per round
 * trip, with the same protocol rules as {@link TftpSession} and the same busy-polling policy.
 *
 * The JavaScript side still does everything before the first data packet — request parsing,
 * confinement, option negotiation, opening the file and the connected transfer socket — and
 * everything after — counters, logs, closing. When the add-on is not built (no C compiler at
 * install, another OS) the server uses {@link TftpSession} for every transfer.
 */
import type { Socket } from 'node:dgram';
import type { FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { TransferParameters } from './options.js';
import { encodeOack } from './packets.js';
import type { TftpErrorCode } from './packets.js';
import { socketFd, stopReceiving } from './busy-poll.js';
import type { SessionOutcome } from './session.js';

/** What native/tftp_engine.c exports. */
interface NativeModule {
  start(
    sockFd: number,
    fileFd: number,
    size: number,
    blksize: number,
    windowsize: number,
    timeoutMs: number,
    retries: number,
    oack: Buffer | null,
    spinUs: number,
    onEnd: (result: NativeResult) => void,
  ): unknown;
  abort(handle: unknown, code: number, message: string): void;
}

interface NativeResult {
  ok: boolean;
  bytes: number;
  blocks: number;
  busyPolled: number;
  reason: string;
}

let loaded: NativeModule | null | undefined;

/** The add-on, or null when it was not built here (the reason is in {@link nativeEngineError}). */
export function nativeEngine(): NativeModule | null {
  if (loaded === undefined) {
    try {
      // build/ sits at the package root, three levels above both src/boot/tftp and dist/boot/tftp.
      loaded = createRequire(import.meta.url)('../../../build/Release/tftp_engine.node') as NativeModule;
    } catch (err) {
      loadError = (err as Error).message.split('\n')[0]!;
      loaded = null;
    }
  }
  return loaded;
}

let loadError = '';

/** Why the add-on could not be loaded ('' when it was, or has not been tried). */
export function nativeEngineError(): string {
  return loadError;
}

/** What a native session needs; the socket is bound and connected to the peer. */
export interface NativeSessionOptions {
  engine: NativeModule;
  socket: Socket;
  file: FileHandle;
  size: number;
  params: TransferParameters;
  retries: number;
  /** Busy-poll budget per ACK in µs (0: off); the engine spins only while one transfer runs. */
  busyPollUs: number;
  onEnd(outcome: SessionOutcome, busyPolled: number): void;
}

/** One octet transfer run by the native engine; same surface as {@link TftpSession}. */
export class NativeSession {
  private handle: unknown = null;
  private ended = false;
  private resolveDone!: () => void;
  /** Settles once the engine's thread has finished with the socket and the file. */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));

  constructor(private readonly options: NativeSessionOptions) {}

  /** Whether this socket can be handed to the engine (its descriptor is reachable). */
  static usable(socket: Socket): boolean {
    return socketFd(socket) !== null;
  }

  start(): void {
    const { engine, socket, file, size, params } = this.options;
    const fd = socketFd(socket);
    if (fd === null || !stopReceiving(socket)) throw new Error('the transfer socket cannot be handed to the native engine');
    // Errors on a socket the event loop no longer reads are of no interest; the engine reports its own.
    socket.on('error', () => {});
    const oack = params.oack.size > 0 ? encodeOack(params.oack) : null;
    this.handle = engine.start(fd, file.fd, size, params.blksize, params.windowsize, params.timeoutMs, this.options.retries, oack, this.options.busyPollUs, (r) =>
      this.finish(r),
    );
  }

  /** Ends the transfer from our side; the engine tells the peer why and reports within 100 ms. */
  abort(code: TftpErrorCode, message: string): void {
    if (this.ended || this.handle === null) return;
    this.options.engine.abort(this.handle, code, message);
  }

  private finish(result: NativeResult): void {
    this.ended = true;
    this.handle = null;
    try {
      this.options.socket.close();
    } catch {
      // Already closed.
    }
    void this.options.file.close().catch(() => {});
    const outcome: SessionOutcome = result.ok ? { ok: true, bytes: result.bytes, blocks: result.blocks } : { ok: false, reason: result.reason };
    this.options.onEnd(outcome, result.busyPolled);
    this.resolveDone();
  }
}
