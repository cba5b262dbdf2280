/**
 * The bytes a transfer sends, as a sequential stream the session copies into its DATA packets.
 * Reads go to the file in large positional chunks with one chunk read ahead, so the per-packet
 * path is a memory copy and never waits on the thread pool while data is buffered.
 */
import type { FileHandle } from 'node:fs/promises';

/** A sequential byte stream with a synchronous fast path. */
export interface ByteSource {
  /** Copies up to `length` buffered bytes into `dest` at `offset`; returns how many (maybe 0). */
  take(dest: Buffer, offset: number, length: number): number;
  /** True once every byte has been taken. */
  readonly done: boolean;
  /** Resolves when more bytes are buffered or the end is reached; rejects on a read error. */
  ready(): Promise<void>;
  /** Releases the file; idempotent. */
  close(): Promise<void>;
}

/** Read-ahead chunk size: large enough to make reads rare, small enough for many transfers. */
const CHUNK = 256 * 1024;

/** The file's bytes as they are (octet mode), double-buffered. */
export class OctetSource implements ByteSource {
  private readonly bufs: [Buffer, Buffer];
  /** Index of the buffer being consumed; the other one is being (or has been) filled. */
  private cur = 0;
  private pos = 0;
  private end = 0;
  /** Bytes waiting in the other buffer, or -1 while it is empty or being read. */
  private nextLen = -1;
  private pending: Promise<void> | null = null;
  private filePos = 0;
  private eof = false;
  private error: unknown = null;
  private closed: Promise<void> | null = null;

  constructor(
    private readonly handle: FileHandle,
    size: number,
  ) {
    // Small files (configs) get a buffer their size, not a full chunk; +1 sees the end in one read.
    const chunk = Math.min(CHUNK, Math.max(size + 1, 4096));
    this.bufs = [Buffer.allocUnsafe(chunk), Buffer.allocUnsafe(chunk)];
    this.readAhead();
  }

  private readAhead(): void {
    if (this.eof || this.pending || this.error !== null || this.closed) return;
    const buf = this.bufs[this.cur ^ 1]!;
    this.pending = this.handle.read(buf, 0, buf.length, this.filePos).then(
      ({ bytesRead }) => {
        this.pending = null;
        this.filePos += bytesRead;
        if (bytesRead === 0) this.eof = true;
        else this.nextLen = bytesRead;
      },
      (err: unknown) => {
        this.pending = null;
        this.error = err;
      },
    );
  }

  take(dest: Buffer, offset: number, length: number): number {
    let copied = 0;
    while (copied < length) {
      if (this.pos === this.end) {
        if (this.nextLen < 0) break;
        // The consumed buffer is free again: swap and start filling it at once.
        this.cur ^= 1;
        this.pos = 0;
        this.end = this.nextLen;
        this.nextLen = -1;
        this.readAhead();
        continue;
      }
      const n = Math.min(length - copied, this.end - this.pos);
      this.bufs[this.cur]!.copy(dest, offset + copied, this.pos, this.pos + n);
      this.pos += n;
      copied += n;
    }
    return copied;
  }

  get done(): boolean {
    return this.eof && this.pos === this.end && this.nextLen < 0;
  }

  async ready(): Promise<void> {
    if (this.pending) await this.pending;
    if (this.error !== null) throw this.error;
  }

  close(): Promise<void> {
    this.closed ??= (this.pending ?? Promise.resolve()).then(() => this.handle.close()).catch(() => undefined);
    return this.closed;
  }
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * netascii (RFC 764 as used by RFC 1350): LF becomes CR LF and a bare CR becomes CR NUL, converted
 * on the fly from an octet source. The size on the wire is not known in advance, so tsize is not
 * offered for netascii transfers.
 */
export class NetasciiSource implements ByteSource {
  private readonly scratch = Buffer.allocUnsafe(4096);
  private sPos = 0;
  private sEnd = 0;
  /** The second byte of an expansion that did not fit the previous block, or -1. */
  private carry = -1;

  constructor(private readonly inner: ByteSource) {}

  take(dest: Buffer, offset: number, length: number): number {
    let out = 0;
    while (out < length) {
      if (this.carry >= 0) {
        dest[offset + out++] = this.carry;
        this.carry = -1;
        continue;
      }
      if (this.sPos === this.sEnd) {
        this.sPos = 0;
        this.sEnd = this.inner.take(this.scratch, 0, this.scratch.length);
        if (this.sEnd === 0) break;
      }
      const b = this.scratch[this.sPos++]!;
      if (b === LF || b === CR) {
        dest[offset + out++] = CR;
        this.carry = b === LF ? LF : 0;
      } else {
        dest[offset + out++] = b;
      }
    }
    return out;
  }

  get done(): boolean {
    return this.carry < 0 && this.sPos === this.sEnd && this.inner.done;
  }

  ready(): Promise<void> {
    return this.inner.ready();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
