/**
 * The writing half of the image writer, on its own thread: the main thread only receives into
 * shared blocks (copying chunks in with `push`, or letting the socket read into `region` and
 * `commit`ting what arrived); a worker hashes each full block and writes it to the device
 * with one positional write. Measured on this project's 2-core machine, hashing and writing on the
 * main thread cost a third of the throughput (sha256 runs at 100–400 MB/s there), and a pipeline of
 * two threads is what `curl | dd` — the yardstick — is too.
 *
 * Blocks are handed over in order and processed in order, so the digest is the digest of the
 * stream. The worker is plain CommonJS source run with `eval`, so it needs no file of its own (the
 * agent ships as one executable).
 */
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const crypto = require('node:crypto');
const { path, algo, slots, blockSize, direct } = workerData;
const views = slots.map((sab) => Buffer.from(sab));
let hash = crypto.createHash(algo);
let fd = -1;
let dfd = -1;
const aligned = [];
// Milliseconds spent hashing and in write/fsync calls: where the writer thread's time went.
let hashMs = 0;
let writeMs = 0;
function writeAll(handle, buffer, offset, length, position) {
  let done = 0;
  while (done < length) {
    const n = fs.writeSync(handle, buffer, offset + done, length - done, position + done);
    if (n <= 0) throw new Error('device accepted no bytes');
    done += n;
  }
}
try {
  fd = fs.openSync(path, 'r+');
  if (direct) {
    try {
      dfd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_DIRECT);
      // JavaScript cannot ask for aligned memory: find, per block, the offset whose address
      // O_DIRECT accepts, by reading the first 4 KiB there (EINVAL means misaligned).
      for (const view of views) {
        let found = -1;
        for (let off = 0; off <= view.length - blockSize && found < 0; off += 16) {
          try {
            fs.readSync(dfd, view, off, 4096, 0);
            found = off;
          } catch (error) {
            if (error.code !== 'EINVAL') throw error;
          }
        }
        if (found < 0) throw new Error('no aligned offset');
        aligned.push(found);
      }
    } catch {
      if (dfd >= 0) fs.closeSync(dfd);
      dfd = -1;
      aligned.length = 0;
    }
  }
  parentPort.postMessage({ type: 'ready', direct: dfd >= 0, offsets: views.map((_, i) => aligned[i] ?? 0) });
} catch (error) {
  parentPort.postMessage({ type: 'error', message: error.message });
}
parentPort.on('message', (m) => {
  try {
    if (fd < 0) return;
    if (m.type === 'block') {
      // The main thread copied the block to the offset the ready message gave it.
      const off = aligned[m.slot] ?? 0;
      const view = views[m.slot];
      const t0 = performance.now();
      hash.update(view.subarray(off, off + m.length));
      const t1 = performance.now();
      // Synchronous: when the thread is terminated (a failed write), no write of it is still queued
      // to land after the caller's wipe. The last, partial block goes through the page cache:
      // O_DIRECT wants whole sectors.
      writeAll(dfd >= 0 && m.length === blockSize ? dfd : fd, view, off, m.length, m.position);
      hashMs += t1 - t0;
      writeMs += performance.now() - t1;
      parentPort.postMessage({ type: 'written', slot: m.slot, end: m.position + m.length });
    } else if (m.type === 'reset') {
      hash = crypto.createHash(algo);
      parentPort.postMessage({ type: 'reset' });
    } else if (m.type === 'finish') {
      const t0 = performance.now();
      fs.fsyncSync(fd);
      if (dfd >= 0) fs.fsyncSync(dfd);
      writeMs += performance.now() - t0;
      parentPort.postMessage({ type: 'finished', digest: hash.digest('hex'), hashMs, writeMs });
    }
  } catch (error) {
    parentPort.postMessage({ type: 'error', message: (m.type === 'finish' ? 'fsync: ' : '') + error.message });
  }
});
`;

/** Room for moving a block to an address O_DIRECT accepts. */
const ALIGNMENT_SLACK = 4096;

type FromWorker =
  | { type: 'ready'; direct: boolean; offsets: number[] }
  | { type: 'written'; slot: number; end: number }
  | { type: 'reset' }
  | { type: 'finished'; digest: string; hashMs: number; writeMs: number }
  | { type: 'error'; message: string };

export interface BlockSinkOptions {
  /** Device (or file) to write; opened read-write by the worker, never created. */
  path: string;
  algo: string;
  /** Bytes per write. */
  blockSize: number;
  /** Blocks in flight or being filled; at least 2. Default 4. */
  slots?: number;
  /**
   * Write full blocks with O_DIRECT (default true): past the page cache, so a large image does not
   * fill memory with dirty pages and the writer is not throttled by their write-back — how
   * `dd oflag=direct` writes. Falls back to buffered writes where O_DIRECT is refused (tmpfs).
   */
  direct?: boolean;
  /** Called after each block reached the device, with the device offset written up to. */
  onWritten?: (end: number) => void;
}

/**
 * Accepts the image stream chunk by chunk; `finish` syncs and returns the digest. Any write error
 * surfaces from the next `push`, `reset` or `finish` (as a plain Error with the system's message).
 */
export class BlockSink {
  private readonly worker: Worker;
  private readonly views: Buffer[];
  private readonly free: number[];
  private readonly blockSize: number;
  private current: number;
  private fill = 0;
  /** Where each block starts in its view (an address O_DIRECT accepts), as the worker found. */
  private offsets: number[] = [];
  /** Device offset of the block being filled. */
  private position = 0;
  private failure: Error | null = null;
  private waiters: Array<() => void> = [];
  private outstanding = 0;
  private resetPending = false;
  private closing = false;
  /** Blocks handed to the worker so far: once non-zero, the device may have been written. */
  handedOver = 0;
  /** Whether full blocks go out with O_DIRECT; known once the worker is ready (null before). */
  direct: boolean | null = null;
  private digest: string | null = null;
  /**
   * Where the time went, in milliseconds (complete after `finish`): the writer thread hashing and
   * in write/fsync calls, and the receiving side waiting for a free block (the writer was behind).
   */
  readonly timings = { hashMs: 0, writeMs: 0, waitMs: 0 };

  constructor(private readonly options: BlockSinkOptions) {
    this.blockSize = options.blockSize;
    const slots = Array.from({ length: Math.max(2, options.slots ?? 4) }, () => new SharedArrayBuffer(options.blockSize + ALIGNMENT_SLACK));
    this.views = slots.map((sab) => Buffer.from(sab));
    this.free = this.views.map((_, i) => i);
    this.current = this.free.shift()!;
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path: options.path, algo: options.algo, slots, blockSize: options.blockSize, direct: options.direct ?? true },
    });
    this.worker.on('message', (m: FromWorker) => this.onMessage(m));
    this.worker.on('error', (error) => this.fail(error));
    this.worker.on('exit', (code) => {
      if (!this.closing) this.fail(new Error(`writer thread exited with code ${code}`));
    });
  }

  private onMessage(m: FromWorker): void {
    if (m.type === 'ready') {
      this.offsets = m.offsets;
      this.direct = m.direct;
    }
    else if (m.type === 'written') {
      this.outstanding--;
      this.free.push(m.slot);
      this.options.onWritten?.(m.end);
    } else if (m.type === 'reset') this.resetPending = false;
    else if (m.type === 'finished') {
      this.digest = m.digest;
      this.timings.hashMs = m.hashMs;
      this.timings.writeMs = m.writeMs;
    }
    else this.fail(new Error(m.message));
    this.wake();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }

  /** Resolves once `condition` holds or the worker failed (then throws). */
  private async until(condition: () => boolean): Promise<void> {
    for (;;) {
      this.check();
      if (condition()) return;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Hands the block being filled (if it holds anything) to the worker; no block is current after. */
  private handOver(): void {
    if (this.fill === 0) return;
    this.outstanding++;
    this.handedOver++;
    this.worker.postMessage({ type: 'block', slot: this.current, length: this.fill, position: this.position });
    this.position += this.fill;
    this.fill = 0;
    this.current = -1;
  }

  /** Makes a free block current if none is; false when every block is with the worker. */
  private takeFree(): boolean {
    if (this.current >= 0) return true;
    if (this.free.length === 0) return false;
    this.current = this.free.shift()!;
    return true;
  }

  /** Resolves once the worker is ready and a block can be filled (`region` is not null). */
  async writable(): Promise<void> {
    // The worker probes alignment by reading into the blocks: nothing may be copied in before.
    if (this.direct === null) await this.until(() => this.direct !== null);
    this.check();
    if (this.takeFree()) return;
    const t0 = performance.now();
    await this.until(() => this.free.length > 0);
    this.timings.waitMs += performance.now() - t0;
    this.takeFree();
  }

  /**
   * The unfilled rest of the current block, for a reader that receives straight into it (no copy);
   * null unless `writable` resolved since the last `commit` that returned false. Bytes put there
   * count once passed to `commit`.
   */
  region(): Buffer | null {
    if (this.current < 0 || this.direct === null) return null;
    const base = this.offsets[this.current]!;
    return this.views[this.current]!.subarray(base + this.fill, base + this.blockSize);
  }

  /**
   * Counts `n` bytes put into `region()`, handing the block over when it is full. Returns false
   * when no block is free for the next bytes: await `writable` before asking for a region again.
   */
  commit(n: number): boolean {
    this.check();
    this.fill += n;
    if (this.fill < this.blockSize) return true;
    this.handOver();
    return this.takeFree();
  }

  /** Copies `chunk` into the current block, handing full blocks to the worker. */
  async push(chunk: Buffer): Promise<void> {
    await this.writable();
    let offset = 0;
    while (offset < chunk.length) {
      const n = chunk.copy(this.region()!, 0, offset);
      offset += n;
      if (!this.commit(n)) await this.writable();
    }
  }

  /** Drops everything not yet handed over and starts a new digest at device offset 0. */
  async reset(): Promise<void> {
    await this.until(() => this.outstanding === 0);
    this.takeFree();
    this.fill = 0;
    this.position = 0;
    this.resetPending = true;
    this.worker.postMessage({ type: 'reset' });
    await this.until(() => !this.resetPending);
  }

  /** Writes the last partial block, fsyncs, and returns the hex digest of everything pushed. */
  async finish(): Promise<string> {
    this.handOver();
    await this.until(() => this.outstanding === 0);
    this.digest = null;
    this.worker.postMessage({ type: 'finish' });
    await this.until(() => this.digest !== null);
    return this.digest!;
  }

  /** Stops the worker; once this resolves no write of this sink can still land on the device. */
  async close(): Promise<void> {
    this.closing = true;
    await this.worker.terminate();
  }
}
