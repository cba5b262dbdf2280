/**
 * Runs the real `ipmitool` binary: argv built here (never a shell), the password handed over in the
 * environment (`-E` reads `IPMI_PASSWORD`, so it never shows in `ps`), a timeout per run, retries
 * with back-off because IPMI over UDP loses datagrams and BMCs drop sessions under load, and one
 * command at a time per BMC because many BMCs refuse concurrent sessions.
 */
import { execFile } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { IpmiFailure } from '../errors.js';
import type { IpmiDriverInfo } from './ipmi-driver-info.js';
import { bmcKey } from './ipmi-driver-info.js';
import { errorSummary } from './ipmitool-output.js';

/** What one run of ipmitool printed. */
export interface ExecResult {
  stdout: string;
  stderr: string;
}

/** How a run failed, as far as the runner needs to know. */
export interface ExecFailure extends ExecResult {
  /** Exit code, or null when killed (timeout) or never started. */
  code: number | null;
  /** True when the binary could not be started at all (not installed): retrying is pointless. */
  notFound: boolean;
  timedOut: boolean;
}

/** Runs a binary with argv and environment; resolves on exit 0, rejects with an `ExecFailure`. */
export type Exec = (file: string, args: readonly string[], options: { env: NodeJS.ProcessEnv; timeoutMs: number; signal?: AbortSignal }) => Promise<ExecResult>;

/** Tuning of the runner; every field has a default suited to a real BMC. */
export interface IpmitoolOptions {
  /** Path of the binary. Default `ipmitool` (found on PATH). */
  binary?: string;
  /** Kill a run after this long (ms). Default 20 000. */
  commandTimeoutMs?: number;
  /** Runs per command before giving up. Default 3. */
  attempts?: number;
  /** Wait before the first retry (ms), doubled for each further one. Default 1000. */
  retryDelayMs?: number;
  /** ipmitool's own per-datagram retransmissions (`-R`). Default 3. */
  sessionRetries?: number;
  /** ipmitool's seconds between retransmissions (`-N`). Default 1. */
  sessionTimeoutS?: number;
  /** Runs the binary; injected by unit tests. Default `execFile`. */
  exec?: Exec;
  /** Waits; injected by unit tests so they never sleep for real. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Milliseconds clock for deadlines; injected with `sleep`. Default `performance.now`. */
  now?: () => number;
}

// BMC answers that another attempt will not change.
const PERMANENT = /invalid user name|unauthori[sz]ed name|invalid command|given data is invalid|invalid data field|rakp 2 hmac is invalid|not supported/i;

/**
 * The argv for one command: `-I lanplus -H addr -p port [-U user] [-E] [-L level] [-C suite] -R n
 * -N s <command…>`. Exported for tests; the password is never in it.
 */
export function ipmitoolArgs(info: IpmiDriverInfo, command: readonly string[], options: Pick<IpmitoolOptions, 'sessionRetries' | 'sessionTimeoutS'> = {}): string[] {
  const args = ['-I', info.interface, '-H', info.address, '-p', String(info.port)];
  if (info.username !== undefined) args.push('-U', info.username);
  if (info.password !== undefined) args.push('-E');
  args.push('-L', info.privLevel);
  if (info.cipherSuite !== undefined) args.push('-C', String(info.cipherSuite));
  args.push('-R', String(options.sessionRetries ?? 3), '-N', String(options.sessionTimeoutS ?? 1));
  return [...args, ...command];
}

/** The environment of one run: PATH for the loader, C locale for parseable output, the password. */
export function ipmitoolEnv(info: IpmiDriverInfo, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: base.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' };
  if (info.password !== undefined) env.IPMI_PASSWORD = info.password;
  return env;
}

/** `execFile` as an `Exec`. */
export const execFileExec: Exec = (file, args, options) =>
  new Promise((resolve, reject) => {
    execFile(
      file,
      [...args],
      { env: options.env, timeout: options.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024, signal: options.signal, windowsHide: true },
      (error, stdout, stderr) => {
        if (error === null) return resolve({ stdout, stderr });
        const code = typeof error.code === 'number' ? error.code : null;
        const failure: ExecFailure = {
          stdout,
          stderr: stderr || error.message,
          code,
          notFound: error.code === 'ENOENT',
          timedOut: error.killed === true && error.signal === 'SIGKILL' && options.signal?.aborted !== true,
        };
        reject(failure);
      },
    );
  });

function isExecFailure(value: unknown): value is ExecFailure {
  return typeof value === 'object' && value !== null && 'notFound' in value && 'stderr' in value;
}

export class Ipmitool {
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly now: () => number;
  private readonly exec: Exec;
  // Per-BMC queue: the next command for a BMC starts when the previous one has finished.
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly options: IpmitoolOptions = {}) {
    this.exec = options.exec ?? execFileExec;
    this.sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, signal === undefined ? undefined : { signal }));
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Runs `command` against the BMC and returns its stdout. Retries failed runs (except permanent
   * refusals and a missing binary); throws `IpmiFailure` with ipmitool's message after the last.
   */
  async run(info: IpmiDriverInfo, command: readonly string[], signal?: AbortSignal): Promise<string> {
    const key = bmcKey(info);
    const previous = this.queues.get(key) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(() => this.attempt(info, command, signal));
    this.queues.set(key, current);
    try {
      return await current;
    } finally {
      if (this.queues.get(key) === current) this.queues.delete(key);
    }
  }

  private async attempt(info: IpmiDriverInfo, command: readonly string[], signal?: AbortSignal): Promise<string> {
    const attempts = Math.max(1, this.options.attempts ?? 3);
    const args = ipmitoolArgs(info, command, this.options);
    const env = ipmitoolEnv(info);
    const text = command.join(' ');
    let lastMessage = 'not run';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      signal?.throwIfAborted();
      try {
        const result = await this.exec(this.options.binary ?? 'ipmitool', args, { env, timeoutMs: this.options.commandTimeoutMs ?? 20_000, signal });
        return result.stdout;
      } catch (err) {
        if (!isExecFailure(err)) throw err;
        signal?.throwIfAborted();
        if (err.notFound) throw new IpmiFailure(text, bmcKey(info), `${this.options.binary ?? 'ipmitool'} is not installed or not on PATH`, attempt);
        lastMessage = err.timedOut ? `no answer within ${this.options.commandTimeoutMs ?? 20_000} ms` : errorSummary(err.stderr, err.stdout);
        if (PERMANENT.test(lastMessage) || attempt === attempts) throw new IpmiFailure(text, bmcKey(info), lastMessage, attempt);
        await this.sleep((this.options.retryDelayMs ?? 1000) * 2 ** (attempt - 1), signal);
      }
    }
    throw new IpmiFailure(text, bmcKey(info), lastMessage, attempts);
  }
}
