import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlreadyRunning, InstanceLock, lockPath, processStartTicks, recordedProcessState } from '../../src/up/instance-lock.js';

describe('the instance lock of ironring up', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'ironring-lock-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const stale = (over: Record<string, unknown>) =>
    writeFileSync(lockPath(dir, 'aio'), JSON.stringify({ pid: process.pid, startTicks: processStartTicks(process.pid), bootId: null, lockToken: 'old', host: 'aio', startedAt: '2026-01-01T00:00:00.000Z', ...over }));

  it('tells a live process from a dead one and from a reused pid', () => {
    const me = { pid: process.pid, startTicks: processStartTicks(process.pid), bootId: null };
    expect(recordedProcessState(me)).toBe('alive');
    // The same pid started at another time is another program: the recorded one is gone.
    if (me.startTicks !== null) expect(recordedProcessState({ ...me, startTicks: '1' })).toBe('gone');
    expect(recordedProcessState({ pid: 2 ** 22 + 17, startTicks: null, bootId: null })).toBe('gone');
    expect(recordedProcessState({ ...me, bootId: 'another-boot' })).toBe('gone');
  });

  it('refuses a second holder while the first is alive, and frees the file on release', async () => {
    const first = await InstanceLock.acquire(dir, 'aio');
    expect(first.previous).toBeNull();
    await expect(InstanceLock.acquire(dir, 'aio')).rejects.toThrow(AlreadyRunning);
    await expect(InstanceLock.acquire(dir, 'aio')).rejects.toThrow(/^ironring up for host aio is already running from this data directory \(pid \d+/);
    // Another host in the same directory has a lock of its own.
    const other = await InstanceLock.acquire(dir, 'other');
    await other.release();
    await first.release();
    expect(existsSync(lockPath(dir, 'aio'))).toBe(false);
    await (await InstanceLock.acquire(dir, 'aio')).release();
  });

  it('replaces the file of a process that is gone and hands over its rows', async () => {
    stale({ pid: 2 ** 22 + 17, conductor: { id: 4, hostname: 'aio', rpcUrl: 'http://127.0.0.1:1' } });
    const lock = await InstanceLock.acquire(dir, 'aio');
    expect(lock.previous).toMatchObject({ lockToken: 'old', conductor: { id: 4, hostname: 'aio', rpcUrl: 'http://127.0.0.1:1' } });
    await lock.recordRows({ conductor: { id: 5, hostname: 'aio', rpcUrl: null } });
    expect(JSON.parse(readFileSync(lockPath(dir, 'aio'), 'utf8'))).toMatchObject({ pid: process.pid, conductor: { id: 5 } });
    await lock.release();
    // An unreadable file names no process: it is replaced too.
    writeFileSync(lockPath(dir, 'aio'), 'garbage');
    const again = await InstanceLock.acquire(dir, 'aio');
    expect(again.previous).toBeNull();
    await again.release();
  });
});
