/**
 * Issue #14 item 4: password checks run off the event loop (a real `ironring api` answers /healthz
 * while forty wrong passwords are being checked), an unknown user costs one check like a known one,
 * and failed logins are limited per client address (429 with Retry-After; another address still
 * gets in).
 */
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installBasicAuth } from '../../src/api/auth.js';
import { BasicAuthenticator, dummyHash } from '../../src/auth/basic-auth.js';
import { LoginLimiter } from '../../src/auth/login-limiter.js';
import { PasswordPool, PasswordQueueFull } from '../../src/auth/password-pool.js';
import { installErrorHandling } from '../../src/common/http-errors.js';
import { loadConfig } from '../../src/config/load.js';
import { runCli, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
  /** Position among all answers received by this test file, in arrival order. */
  seq: number;
}
let answered = 0;

/** GET with an optional Authorization header, from a chosen loopback source address. */
function get(base: string, route: string, options: { auth?: string; from?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${route}`, { headers: options.auth ? { authorization: options.auth } : {}, localAddress: options.from ?? '127.0.0.1', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body, seq: answered++ }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('logins on a real `ironring api`', () => {
  let dir: string;
  let api: CliProcess;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-logins-'));
    const htpasswd = path.join(dir, 'htpasswd');
    // Cost 10: slow enough (≈ 60 ms a check) that forty checks on the event loop would stall it.
    writeFileSync(htpasswd, `admin:${bcrypt.hashSync('right', 10)}\n`);
    const url = `sqlite://${path.join(dir, 'api.db')}`;
    expect(runCli(['manage', 'db', 'migrate', '--database', url]).code).toBe(0);
    api = startCli(['api', '--database', url, '--api-address', '127.0.0.1:0'], {
      cwd: dir,
      env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: htpasswd },
    });
    base = (await api.waitForOutput(/at (http:\/\/127\.0\.0\.1:\d+)\/v1/, 30_000))[1]!;
  }, 60_000);
  afterAll(async () => {
    api?.child.kill('SIGTERM');
    await api?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers /healthz while forty wrong passwords are being checked', async () => {
    // From forty addresses, so that the per-address limit lets every one be checked.
    const logins = Array.from({ length: 40 }, (_, i) => get(base, '/v1/nodes', { auth: basic(i % 2 ? 'admin' : `nobody${i}`, `wrong${i}`), from: `127.0.1.${i + 1}` }));
    await new Promise((r) => setTimeout(r, 20));
    const health = await get(base, '/healthz');
    const results = await Promise.all(logins);
    expect(health.status).toBe(200);
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(401));
    // Ordering, not time: the health check is answered before most of the checks are done.
    const loginsBefore = results.filter((r) => r.seq < health.seq).length;
    expect(loginsBefore).toBeLessThan(10);
  });

  it('answers 429 with Retry-After after 10 failures from one address, even to the right password; another address gets in', async () => {
    for (let i = 0; i < 10; i++) expect((await get(base, '/v1/nodes', { auth: basic('admin', `guess${i}`), from: '127.0.2.1' })).status).toBe(401);
    const limited = await get(base, '/v1/nodes', { auth: basic('admin', 'guess-11'), from: '127.0.2.1' });
    expect(limited.status).toBe(429);
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
    expect(Number(limited.retryAfter)).toBeLessThanOrEqual(60);
    expect(JSON.parse(JSON.parse(limited.body).error_message).faultstring).toMatch(/too many failed logins from 127\.0\.2\.1; try again in \d+ s/);
    expect((await get(base, '/v1/nodes', { auth: basic('admin', 'right'), from: '127.0.2.1' })).status).toBe(429);
    expect((await get(base, '/v1/nodes', { auth: basic('admin', 'right'), from: '127.0.2.2' })).status).toBe(200);
    // Health stays public for the limited address too.
    expect((await get(base, '/healthz', { from: '127.0.2.1' })).status).toBe(200);
  });
});

describe('one password check per login, known user or not', () => {
  it('checks an unknown user against a dummy hash of the users\' cost, once, before refusing', async () => {
    const hash = bcrypt.hashSync('right', 5);
    const calls: string[] = [];
    const auth = new BasicAuthenticator({
      users: new Map([['admin', hash]]),
      verify: async (password, h) => {
        calls.push(h);
        return bcrypt.compare(password, h);
      },
      failureLimit: 0,
      windowSeconds: 60,
    });
    const app = Fastify();
    installErrorHandling(app);
    installBasicAuth(app, loadConfig({ env: {} }).config, auth);
    app.get('/v1/nodes', async () => ({ nodes: [] }));

    const unknown = await app.inject({ url: '/v1/nodes', headers: { authorization: basic('mallory', 'right') } });
    expect(unknown.statusCode).toBe(401);
    expect(calls).toHaveLength(1);
    expect(calls[0]).not.toBe(hash);
    expect(bcrypt.getRounds(calls[0]!)).toBe(5);
    expect((await app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 'wrong') } })).statusCode).toBe(401);
    expect(calls).toEqual([calls[0], hash]);
    expect((await app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 'right') } })).statusCode).toBe(200);
    expect(calls).toHaveLength(3);
    await app.close();
  });

  it('makes dummy hashes no password matches', () => {
    const dummy = dummyHash(4);
    expect(bcrypt.getRounds(dummy)).toBe(4);
    expect(bcrypt.compareSync('', dummy)).toBe(false);
    expect(dummyHash(4)).not.toBe(dummy);
  });
});

describe('PasswordPool', () => {
  it('verifies on worker threads and refuses past its queue', async () => {
    const pool = new PasswordPool({ workers: 1, queue: 2 });
    try {
      const hash = bcrypt.hashSync('pw', 8);
      const running = [pool.verify('pw', hash), pool.verify('no', hash), pool.verify('pw', hash)];
      await expect(pool.verify('pw', hash)).rejects.toBeInstanceOf(PasswordQueueFull);
      expect(await Promise.all(running)).toEqual([true, false, true]);
      expect(await pool.verify('pw', 'not a hash')).toBe(false);
    } finally {
      await pool.close();
    }
  });
});

describe('LoginLimiter', () => {
  it('counts failures and checks in flight per address, and forgets them after the window', () => {
    let now = 1_000_000;
    const limiter = new LoginLimiter({ limit: 2, windowSeconds: 60, clock: () => now });
    expect(limiter.begin('a')).toBeNull();
    expect(limiter.begin('a')).toBeNull();
    expect(limiter.begin('a')).toBe(1); // two in flight: a third waits
    limiter.finish('a', false);
    now += 10_000;
    limiter.finish('a', false);
    expect(limiter.blockedFor('a')).toBe(50);
    expect(limiter.begin('a')).toBe(50);
    expect(limiter.begin('b')).toBeNull();
    limiter.finish('b', true);
    now += 50_000;
    expect(limiter.blockedFor('a')).toBe(0);
    expect(limiter.begin('a')).toBeNull();
  });
});
