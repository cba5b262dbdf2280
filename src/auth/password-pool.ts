/**
 * bcrypt verification off the event loop. bcrypt is slow on purpose (≈ 250 ms at cost 12); run on
 * the event loop, forty wrong passwords at once stall every other request of the process — health
 * checks, RPC, the in-process conductor — for seconds. A small pool of worker threads runs the
 * comparisons instead, with a bounded queue so that a flood of logins costs memory it can count.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { IronringError } from '../common/errors.js';

/** Thrown when more password checks wait than the queue holds; the caller answers 503 with Retry-After. */
export class PasswordQueueFull extends IronringError {
  override readonly httpStatus = 503;
}

/** Verifies a password against a bcrypt hash; resolves false for a wrong password or a malformed hash. */
export type PasswordVerifier = (password: string, hash: string) => Promise<boolean>;

export interface PasswordPoolOptions {
  /** Worker threads (each runs one comparison at a time). */
  workers: number;
  /** Most comparisons waiting for a thread; more are refused with `PasswordQueueFull`. */
  queue: number;
}

// An inline CommonJS worker: the same source works from `src/` under the test runner and from
// `dist/`, with no second entry point to build or ship. bcryptjs is resolved by the parent.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const bcrypt = require(workerData.bcryptjs);
parentPort.on('message', ({ id, password, hash }) => {
  let ok = false;
  try { ok = bcrypt.compareSync(password, hash); } catch { ok = false; }
  parentPort.postMessage({ id, ok });
});
`;

interface Job {
  id: number;
  password: string;
  hash: string;
  resolve: (ok: boolean) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  job: Job | undefined;
}

/** A fixed set of worker threads comparing bcrypt hashes, fed from a bounded queue. */
export class PasswordPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Job[] = [];
  private nextId = 1;
  private closed = false;
  private readonly bcryptPath = createRequire(import.meta.url).resolve('bcryptjs');

  constructor(private readonly options: PasswordPoolOptions) {}

  /** Comparisons running or waiting now. */
  get pending(): number {
    return this.waiting.length + this.slots.filter((s) => s.job !== undefined).length;
  }

  /** Compares on a worker thread; rejects with `PasswordQueueFull` when the queue is full. */
  readonly verify: PasswordVerifier = (password, hash) => {
    if (this.closed) return Promise.reject(new Error('password pool closed'));
    if (this.waiting.length >= this.options.queue) {
      return Promise.reject(new PasswordQueueFull(`too many logins are being checked (${this.options.queue} waiting); try again shortly`));
    }
    return new Promise<boolean>((resolve, reject) => {
      this.waiting.push({ id: this.nextId++, password, hash, resolve, reject });
      this.dispatch();
    });
  };

  /** Stops the threads; waiting and running comparisons are rejected. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new Error('password pool closed');
    for (const job of this.waiting.splice(0)) job.reject(err);
    await Promise.all(
      this.slots.splice(0).map((slot) => {
        slot.job?.reject(err);
        return slot.worker.terminate();
      }),
    );
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      let slot = this.slots.find((s) => s.job === undefined);
      // Threads start on first use: a process that never checks a password never starts one.
      if (slot === undefined && this.slots.length < this.options.workers) slot = this.spawn();
      if (slot === undefined) return;
      const job = this.waiting.shift()!;
      slot.job = job;
      slot.worker.ref();
      slot.worker.postMessage({ id: job.id, password: job.password, hash: job.hash });
    }
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { bcryptjs: this.bcryptPath } });
    worker.unref();
    const slot: Slot = { worker, job: undefined };
    worker.on('message', (msg: { id: number; ok: boolean }) => {
      const job = slot.job;
      if (job === undefined || job.id !== msg.id) return;
      slot.job = undefined;
      // An idle pool must not keep the process alive.
      worker.unref();
      job.resolve(msg.ok === true);
      this.dispatch();
    });
    const fail = (err: Error) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      slot.job?.reject(err);
      slot.job = undefined;
      if (!this.closed) this.dispatch();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`password worker exited with code ${code}`)));
    this.slots.push(slot);
    return slot;
  }
}

let shared: PasswordPool | undefined;

/**
 * The process's pool: the API and the conductor listener of one process (`ironring up`) share it,
 * so the threads a flood of logins can occupy are bounded per process, not per listener. The first
 * caller's sizes win.
 */
export function sharedPasswordPool(options: PasswordPoolOptions): PasswordPool {
  shared ??= new PasswordPool(options);
  return shared;
}
