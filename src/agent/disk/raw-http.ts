/**
 * A plain-HTTP GET whose body is received straight into the image writer's shared blocks: the
 * kernel copies each read into the block being filled, and nothing else touches the bytes before
 * the writer thread hashes and writes them.
 *
 * Why: inside the deploy ramdisk under emulation (the real-node VM, qemu TCG) Node's HTTP client —
 * a fresh Buffer per 64 KiB read, the parser's callbacks, the readable stream and its async
 * iterator — cost 6.2 CPU seconds per 268 MB received, against 1.4–1.9 s for this reader (measured
 * with qemu-user on the same node binary, issue #17), and the receiving thread was what held the
 * agent's image write under `wget | dd`'s speed.
 *
 * Scope, kept small on purpose: `http:` only, one request per connection (`Connection: close`),
 * and a body is received only when its length is known (Content-Length, no Transfer-Encoding, no
 * Content-Encoding). Everything else — https, redirects, chunked bodies — is for `node:http`:
 * `usable` tells the caller to fall back.
 */
import net from 'node:net';

/** Where the body goes: the block sink's zero-copy interface (see BlockSink). */
export interface BodyTarget {
  region(): Buffer | null;
  commit(n: number): boolean;
  writable(): Promise<void>;
}

export interface RawGetOptions {
  signal?: AbortSignal;
  /** A connection that sends nothing for this long is dropped (the error says so). */
  stallMs: number;
}

const MAX_HEAD_BYTES = 64 * 1024;
/** Reads that land outside the blocks (before the body, or while every block is with the writer). */
const SPARE_BYTES = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

type Phase = 'head' | 'held' | 'body' | 'done';

/** Status, headers (lower-case names; repeated ones joined with ", ") and, once asked for, the body. */
export class RawHttpGet {
  status = 0;
  statusMessage = '';
  readonly headers: Record<string, string> = Object.create(null) as Record<string, string>;
  /** Body length when the body can be received here (Content-Length, identity coding); else null. */
  length: number | null = null;

  private readonly socket: net.Socket;
  private readonly head = Buffer.alloc(MAX_HEAD_BYTES);
  private readonly spare = Buffer.alloc(SPARE_BYTES);
  private headLength = 0;
  private phase: Phase = 'head';
  /** Body bytes that came with the head. */
  private early: Buffer = Buffer.alloc(0);
  private target: BodyTarget | null = null;
  private onBytes: ((view: Buffer) => void) | null = null;
  /** Body bytes still expected. */
  private remaining = 0;
  private received = 0;
  /** The block handed out for the next read (null: the spare buffer was). */
  private lent: Buffer | null = null;
  private settle: { resolve: (v: RawHttpGet) => void; reject: (e: Error) => void } | null = null;
  private finish: { resolve: (received: number) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  private constructor(url: URL, request: string, private readonly options: RawGetOptions) {
    this.socket = net.connect({
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || 80),
      onread: { buffer: () => this.nextBuffer(), callback: (n, buf) => this.onRead(n, buf) },
    });
    this.socket.setTimeout(options.stallMs, () => this.fail(new Error(`no data for ${options.stallMs / 1000} s`)));
    this.socket.once('connect', () => this.socket.write(request));
    this.socket.on('error', (error) => this.fail(error));
    this.socket.once('end', () => this.onEnd());
    this.socket.once('close', () => this.onEnd());
    if (options.signal?.aborted) queueMicrotask(this.onAbort);
    else options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => this.fail(this.options.signal!.reason instanceof Error ? this.options.signal!.reason : new Error('aborted'));

  /** Connects, sends the request and resolves once the response's head has arrived and been parsed. */
  static open(url: URL, headers: Record<string, string>, options: RawGetOptions): Promise<RawHttpGet> {
    if (url.protocol !== 'http:') return Promise.reject(new Error(`${url.protocol} is not plain http`));
    const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close', 'Accept-Encoding: identity'];
    for (const [name, value] of Object.entries(headers)) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\0]/.test(value)) return Promise.reject(new Error(`request header ${JSON.stringify(name)}: not a valid header`));
      lines.push(`${name}: ${value}`);
    }
    const get = new RawHttpGet(url, `${lines.join('\r\n')}\r\n\r\n`, options);
    return new Promise((resolve, reject) => {
      get.settle = { resolve, reject };
      if (get.failure) reject(get.failure);
    });
  }

  /** Whether the caller can use this response as it is: no redirect, and a body of known length if it succeeded. */
  get usable(): boolean {
    if (this.status >= 300 && this.status < 400) return false;
    return (this.status !== 200 && this.status !== 206) || this.length !== null;
  }

  /**
   * Receives the body into `target`, calling `onBytes` with each piece before it is counted (it may
   * throw to stop). Resolves with the bytes received: fewer than `length` when the server closed
   * early. Rejects on a socket error, a stall, an abort or a target failure.
   */
  receive(target: BodyTarget, onBytes: (view: Buffer) => void): Promise<number> {
    if (this.length === null || this.phase !== 'held') return Promise.reject(new Error('no body of known length to receive'));
    this.target = target;
    this.onBytes = onBytes;
    this.remaining = this.length;
    return new Promise<number>((resolve, reject) => {
      this.finish = { resolve, reject };
      void this.start();
    });
  }

  /** Closes the connection (whatever is left of the body is not read). */
  destroy(): void {
    this.phase = 'done';
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.socket.destroy();
  }

  private async start(): Promise<void> {
    try {
      await this.target!.writable();
      const early = this.early;
      this.early = Buffer.alloc(0);
      if (!(await this.absorb(early))) return;
      this.phase = 'body';
      if (this.remaining === 0) return this.done();
      this.socket.resume();
    } catch (error) {
      this.fail(error as Error);
    }
  }

  /** The buffer the next read lands in: the free part of the current block once the body flows. */
  private nextBuffer(): Uint8Array {
    if (this.phase === 'head') return this.head.subarray(this.headLength);
    const region = this.phase === 'body' ? this.target!.region() : null;
    this.lent = region;
    return region ?? this.spare;
  }

  private onRead(n: number, buf: Uint8Array): boolean {
    try {
      if (this.phase === 'head') return this.onHeadBytes(n);
      if (this.phase !== 'body') return false;
      const take = Math.min(n, this.remaining);
      if (buf !== this.lent || this.lent === null) {
        // Landed in the spare buffer: copy it into the blocks (pausing if they are all taken).
        void this.absorb(this.spare.subarray(0, take)).then((all) => {
          if (all && this.phase === 'body') this.socket.resume();
        }, (error: Error) => this.fail(error));
        this.socket.pause();
        return false;
      }
      const view = this.lent.subarray(0, take);
      this.onBytes!(view);
      this.received += take;
      this.remaining -= take;
      const more = this.target!.commit(take);
      if (this.remaining === 0) {
        this.done();
        return false;
      }
      if (more) return true;
      this.lent = null;
      void this.target!.writable().then(() => {
        if (this.phase === 'body') this.socket.resume();
      }, (error: Error) => this.fail(error));
      return false;
    } catch (error) {
      this.fail(error as Error);
      return false;
    }
  }

  /**
   * Copies `data` (already received, outside the blocks) into the blocks. Resolves false when the
   * body ended or the read failed meanwhile (nothing more to do), true to go on reading.
   */
  private async absorb(data: Buffer): Promise<boolean> {
    const target = this.target!;
    let offset = 0;
    if (data.length > 0) this.onBytes!(data);
    while (offset < data.length) {
      let region = target.region();
      if (region === null) {
        await target.writable();
        region = target.region()!;
      }
      const n = data.copy(region, 0, offset);
      offset += n;
      this.received += n;
      this.remaining -= n;
      if (!target.commit(n)) await target.writable();
    }
    if (this.remaining === 0 && this.phase !== 'done' && this.phase !== 'head') {
      this.done();
      return false;
    }
    return this.phase !== 'done';
  }

  private onHeadBytes(n: number): boolean {
    this.headLength += n;
    const end = this.head.subarray(0, this.headLength).indexOf(HEAD_END);
    if (end < 0) {
      if (this.headLength >= this.head.length) this.fail(new Error(`the response head is larger than ${MAX_HEAD_BYTES} bytes`));
      return true;
    }
    this.parseHead(this.head.toString('latin1', 0, end));
    this.early = Buffer.from(this.head.subarray(end + HEAD_END.length, this.headLength));
    if (this.length !== null && this.early.length > this.length) this.early = this.early.subarray(0, this.length);
    this.phase = 'held';
    const settle = this.settle;
    this.settle = null;
    settle?.resolve(this);
    // No more reads until the caller asks for the body.
    return false;
  }

  private parseHead(text: string): void {
    const [statusLine = '', ...lines] = text.split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
    if (!m) throw new Error(`not an HTTP/1.x response: ${JSON.stringify(statusLine.slice(0, 80))}`);
    this.status = Number(m[1]);
    this.statusMessage = m[2] ?? '';
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error(`malformed response header line: ${JSON.stringify(line.slice(0, 80))}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      this.headers[name] = name in this.headers ? `${this.headers[name]}, ${value}` : value;
    }
    const length = this.headers['content-length'];
    const coding = (this.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (length !== undefined && /^\d{1,15}$/.test(length) && this.headers['transfer-encoding'] === undefined && coding === 'identity') {
      this.length = Number(length);
    }
  }

  private done(): void {
    const finish = this.finish;
    this.finish = null;
    this.destroy();
    finish?.resolve(this.received);
  }

  private onEnd(): void {
    if (this.phase === 'head') return this.fail(new Error('the connection closed before the response head'));
    if (this.phase === 'body' && this.finish) {
      // Closed before Content-Length bytes: the caller sees the short count.
      const finish = this.finish;
      this.finish = null;
      this.destroy();
      finish.resolve(this.received);
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const settle = this.settle;
    const finish = this.finish;
    this.settle = null;
    this.finish = null;
    this.destroy();
    settle?.reject(error);
    finish?.reject(error);
  }
}
