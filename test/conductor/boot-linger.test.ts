/**
 * A graceful stop lets the boot servers finish what machines are fetching (issue #16): a kernel
 * download in flight when the stop begins completes in full, instead of being cut by the close
 * (`closeAllConnections` destroys sockets mid-response); an idle conductor's servers close at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/options.js';
import { BOOT_LINGER, startBootServices } from '../../src/conductor/boot-services.js';
import { Conductor } from '../../src/conductor/conductor.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

/** Bigger than loopback's socket buffers, so most of it is still on the server when the stop begins. */
const SIZE = 24 * 1024 * 1024;

/** Reads `res` slowly (about `bytesPerSecond`), counting bytes and hashing them; resolves at the end or on an error. */
function slowRead(res: IncomingMessage, bytesPerSecond: number, progress: { bytes: number }): Promise<{ bytes: number; sha: string; error?: string }> {
  const hash = createHash('sha256');
  return new Promise((resolve) => {
    let done = false;
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      resolve({ bytes: progress.bytes, sha: hash.digest('hex'), ...(error === undefined ? {} : { error }) });
    };
    res.on('data', (chunk: Buffer) => {
      progress.bytes += chunk.length;
      hash.update(chunk);
      res.pause();
      setTimeout(() => res.resume(), Math.ceil((chunk.length / bytesPerSecond) * 1000));
    });
    res.on('end', () => finish(res.complete ? undefined : 'ended before Content-Length'));
    res.on('error', (err) => finish(err.message));
    res.on('aborted', () => finish('aborted'));
    res.on('close', () => finish(res.complete ? undefined : 'closed before the end'));
  });
}

describe('graceful stop and the boot servers', () => {
  let target: TestDatabase;
  let store: Store;
  let dir: string;

  const conductorConfig = (): Config =>
    loadConfig({ env: testConductorEnv(path.join(dir, 'c1'), { IRONRING_HOST: 'c1', IRONRING_CONDUCTOR_SYNC_LOCAL_STATE_INTERVAL: '0' }) }).config;

  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-boot-linger-'));
  });
  afterEach(async () => {
    await store.close();
    await target.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a kernel download in flight when the stop begins completes in full; the stop waits for it', async () => {
    const config = conductorConfig();
    const conductor = new Conductor({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    await conductor.start();
    const body = randomBytes(SIZE);
    writeFileSync(path.join(config.deploy.http_root, 'kernel'), body);
    const url = `${conductor.bootEndpoints.http!}/kernel`;
    const progress = { bytes: 0 };
    // About 2 s for the whole file unloaded (up to 2-3 times that on loaded CI): inside the
    // linger's bound, far longer than a stop takes.
    const download = new Promise<{ bytes: number; sha: string; error?: string }>((resolve, reject) => {
      get(url, (res) => resolve(slowRead(res, SIZE / 2, progress))).on('error', reject);
    });
    await waitUntil(() => progress.bytes > 0, 10_000, 'the download to start');
    let stopped = false;
    const stop = conductor.stop().then(() => (stopped = true));
    const result = await download;
    expect(result.error ?? null).toBeNull();
    expect(result.bytes).toBe(SIZE);
    expect(result.sha).toBe(createHash('sha256').update(body).digest('hex'));
    await stop;
    expect(stopped).toBe(true);
    // Once stopped, the server is gone: nothing is served after the linger.
    await expect(fetch(url)).rejects.toThrow();
  }, 60_000);

  it('an idle conductor does not linger: its boot servers close at once', async () => {
    const services = await startBootServices(conductorConfig(), createLogger({ level: 'silent', pretty: false }));
    try {
      expect(await services.linger()).toEqual({ waitedMs: 0, ended: 'quiet', cut: 0 });
      // A request a moment ago: a machine may be on its way to the next file, so the servers serve on.
      await fetch(`${services.httpUrl!}/nothing-here`);
      const report = await services.linger();
      expect(report.ended).toBe('quiet');
      expect(report.waitedMs).toBeGreaterThan(0);
      expect(report.waitedMs).toBeLessThanOrEqual(BOOT_LINGER.quietMs + 1_000);
    } finally {
      await services.close();
    }
  }, 30_000);
});
