import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { ConfigError } from '../../src/common/errors.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import { createDriverRegistry } from '../../src/drivers/index.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { runCli, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { requirePeer } from '../helpers/peers.js';

const logger = createLogger({ level: 'silent', pretty: false });
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('http_basic authentication', () => {
  let dir: string;
  let file: string;
  let store: Store;
  let app: FastifyInstance;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-auth-'));
    file = path.join(dir, 'htpasswd');
    writeFileSync(file, `# API users\nadmin:${bcrypt.hashSync('s3cret', 4)}\n`);
    store = await openDatabase(`sqlite://${path.join(dir, 'auth.db')}`);
    await migrateDatabase(store);
    const config = loadConfig({ env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: file } }).config;
    app = buildApi({ store, config, logger });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 401 with a Basic challenge without or with wrong credentials', async () => {
    const none = await app.inject({ url: '/v1/nodes' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="ironring"');
    expect(JSON.parse(JSON.parse(none.body).error_message).faultstring).toBe('authentication required: this API uses HTTP Basic authentication');
    expect((await app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 'wrong') } })).statusCode).toBe(401);
    expect((await app.inject({ url: '/v1/nodes', headers: { authorization: basic('nobody', 's3cret') } })).statusCode).toBe(401);
    expect((await app.inject({ url: '/v1/nodes', headers: { authorization: 'Bearer x' } })).statusCode).toBe(401);
  });

  it('serves a user from the htpasswd file, and version discovery to anyone', async () => {
    expect((await app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 's3cret') } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 's3cret') } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1' })).statusCode).toBe(200);
  });

  it('refuses a missing or malformed user file with a ConfigError naming it', () => {
    const bad = path.join(dir, 'bad');
    writeFileSync(bad, 'admin:plaintext\n');
    for (const f of [bad, path.join(dir, 'missing')]) {
      const config = loadConfig({ env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: f } }).config;
      expect(() => buildApi({ store, config, logger })).toThrow(ConfigError);
    }
    const config = loadConfig({ env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: bad } }).config;
    expect(() => buildApi({ store, config, logger })).toThrow(/line 1: expected user:bcrypt-hash/);
  });

  it.skipIf(!requirePeer('baremetal', 'python3-ironicclient'))('works with the stock baremetal client', async () => {
    const env = { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: file };
    expect(runCli(['manage', 'db', 'migrate', '--database', `sqlite://${path.join(dir, 'cli.db')}`]).code).toBe(0);
    // The driver list comes from the live conductors' registrations (as in Ironic): one conductor
    // that registered the built-in hardware types, as `ironring conductor` does at start.
    const cliStore = await openDatabase(`sqlite://${path.join(dir, 'cli.db')}`);
    try {
      await registerConductor(cliStore, { hostname: 'c1', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: createDriverRegistry().registrations() }, 600);
    } finally {
      await cliStore.close();
    }
    const api: CliProcess = startCli(['api', '--database', `sqlite://${path.join(dir, 'cli.db')}`, '--api-address', '127.0.0.1:0'], { env });
    try {
      const base = (await api.waitForOutput(/at (http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
      const ok = spawnSync('baremetal', ['--os-endpoint', base, '--os-auth-type', 'http_basic', '--os-username', 'admin', '--os-password', 's3cret', 'driver', 'list', '-f', 'json'], { encoding: 'utf8', timeout: 60_000 });
      expect(ok.status, ok.stderr).toBe(0);
      expect((JSON.parse(ok.stdout) as Array<{ 'Supported driver(s)': string }>).map((d) => d['Supported driver(s)'])).toEqual(['fake-hardware', 'ipmi']);
      const refused = spawnSync('baremetal', ['--os-endpoint', base, '--os-auth-type', 'none', 'node', 'list'], { encoding: 'utf8', timeout: 60_000 });
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/401|authentication required/i);
    } finally {
      api.child.kill('SIGTERM');
      await api.exited;
    }
  });
});
