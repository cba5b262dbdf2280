/**
 * `ironring up`'s lock file in the data directory (`up-<host>.lock`): which process runs this host
 * from this directory, and the rows it registered (its conductor, compute service and scheduler).
 *
 * Why: after a kill -9 the rows still carry a fresh heartbeat, and a restart was refused as a
 * duplicate until they expired (60 s). A process is identified by its pid, its start time (clock
 * ticks since boot, from /proc) and the boot id, so a pid reused by another program, or a reboot,
 * is never mistaken for the old process. When the recorded process is provably gone, the restart
 * takes its own rows back at once (each only while it still carries the dead process's fingerprint:
 * a service's instance token, the conductor's id and RPC URL); when it is alive, the start is
 * refused with one line. Where the start time cannot be read (no /proc), a live pid counts as alive.
 *
 * The file is created with `link()` (atomic, fails if it exists) and rewritten with `rename()`, so
 * it is never seen half-written. Two restarts racing for one stale file may both pass the file; the
 * database stays the final arbiter (the second one's registration is refused as a live duplicate).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { IronringError } from '../common/errors.js';

/** The rows a running `ironring up` registered, as its successor needs them to take them back. */
export interface InstanceRows {
  conductor?: { id: number; hostname: string; rpcUrl: string | null };
  compute?: { cellUuid: string; host: string; serviceId: number; instanceToken: string };
  scheduler?: { host: string; serviceId: number; instanceToken: string };
}

/** The lock file's content. */
export interface InstanceRecord extends InstanceRows {
  pid: number;
  /** Process start time in clock ticks since boot (/proc/<pid>/stat field 22); null off Linux. */
  startTicks: string | null;
  /** /proc/sys/kernel/random/boot_id; null off Linux. */
  bootId: string | null;
  /** Random per start: tells this start's file from any other. */
  lockToken: string;
  host: string;
  startedAt: string;
}

/** Thrown when the process named by the lock file is still running; exit code 1. */
export class AlreadyRunning extends IronringError {
  override readonly httpStatus = 409;
  override readonly exitCode = 1;
}

function readProc(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The start time of process `pid` in clock ticks since boot, or null when it cannot be read. */
export function processStartTicks(pid: number): string | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // Field 2 (the command) is in parentheses and may hold spaces: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null;
}

export function currentBootId(): string | null {
  return readProc('/proc/sys/kernel/random/boot_id')?.trim() ?? null;
}

/** Whether the process a record names is still running: 'alive', or 'gone' (provably). */
export function recordedProcessState(record: Pick<InstanceRecord, 'pid' | 'startTicks' | 'bootId'>): 'alive' | 'gone' {
  const boot = currentBootId();
  if (record.bootId && boot && record.bootId !== boot) return 'gone';
  try {
    process.kill(record.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    // EPERM: a process of another user has the pid; its start time decides below.
  }
  const ticks = processStartTicks(record.pid);
  if (record.startTicks && ticks) return ticks === record.startTicks ? 'alive' : 'gone';
  return 'alive';
}

function parseRecord(text: string): InstanceRecord | null {
  try {
    const parsed = JSON.parse(text) as Partial<InstanceRecord>;
    return typeof parsed.pid === 'number' && typeof parsed.lockToken === 'string' ? (parsed as InstanceRecord) : null;
  } catch {
    return null;
  }
}

/** The lock file of `host` in `dataDir`. */
export function lockPath(dataDir: string, host: string): string {
  return path.join(dataDir, `up-${host.replace(/[^A-Za-z0-9._-]/g, '_')}.lock`);
}

export class InstanceLock {
  private constructor(
    readonly file: string,
    private record: InstanceRecord,
    /** The dead predecessor's record when this start replaced a stale file; null otherwise. */
    readonly previous: InstanceRecord | null,
  ) {}

  /**
   * Takes the lock of `host` in `dataDir`. Throws `AlreadyRunning` when the process that holds it is
   * alive; replaces the file of a process that is gone and keeps its record in `previous`.
   */
  static async acquire(dataDir: string, host: string): Promise<InstanceLock> {
    const file = lockPath(dataDir, host);
    const record: InstanceRecord = {
      pid: process.pid,
      startTicks: processStartTicks(process.pid),
      bootId: currentBootId(),
      lockToken: randomUUID(),
      host,
      startedAt: new Date().toISOString(),
    };
    const tmp = `${file}.${process.pid}.${record.lockToken}.tmp`;
    await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await link(tmp, file);
          return new InstanceLock(file, record, null);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
        let text: string;
        try {
          text = await readFile(file, 'utf8');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile: try again
          throw err;
        }
        const held = parseRecord(text);
        if (held && recordedProcessState(held) === 'alive') {
          throw new AlreadyRunning(
            `ironring up for host ${host} is already running from this data directory (pid ${held.pid}, since ${held.startedAt}; lock file ${file}); ` +
              'stop it first, or start this one with another --host or --data-dir',
          );
        }
        // Gone (or an unreadable file): replace it in one step, then check that ours is the one kept.
        await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
        await rename(tmp, file);
        if (parseRecord(await readFile(file, 'utf8').catch(() => ''))?.lockToken === record.lockToken) return new InstanceLock(file, record, held);
        await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
      }
      throw new AlreadyRunning(`cannot take the lock file ${file}: another ironring up for host ${host} is starting from this data directory`);
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
  }

  /** Records the rows this start registered, for a successor after a crash. */
  async recordRows(rows: InstanceRows): Promise<void> {
    this.record = { ...this.record, ...rows };
    const tmp = `${this.file}.${process.pid}.${this.record.lockToken}.tmp`;
    await writeFile(tmp, `${JSON.stringify(this.record, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, this.file);
  }

  /** Removes the file if it is still this start's; idempotent. */
  async release(): Promise<void> {
    const held = parseRecord(await readFile(this.file, 'utf8').catch(() => ''));
    if (held?.lockToken === this.record.lockToken) await unlink(this.file).catch(() => undefined);
  }
}
