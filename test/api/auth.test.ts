import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { ConfigError } from '../../src/common/errors.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import { createDriverRegistry } from '../../src/drivers/index.js';
import { runCli, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { basic, useBasicAuthApi } from '../helpers/basic-auth-api.js';
import { requirePeer } from '../helpers/peers.js';

const logger = createLogger({ level: 'silent', pretty: false });

describe('http_basic authentication', () => {
  const api = useBasicAuthApi('auth');

  it('answers 401 with a Basic challenge without or with wrong credentials', async () => {
    const none = await api.app.inject({ url: '/v1/nodes' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="ironring"');
    expect(JSON.parse(JSON.parse(none.body).error_message).faultstring).toBe('authentication required: this API uses HTTP Basic authentication');
    expect((await api.app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 'wrong') } })).statusCode).toBe(401);
    expect((await api.app.inject({ url: '/v1/nodes', headers: { authorization: basic('nobody', 's3cret') } })).statusCode).toBe(401);
    expect((await api.app.inject({ url: '/v1/nodes', headers: { authorization: 'Bearer x' } })).statusCode).toBe(401);
  });

  it('serves a user from the htpasswd file, and version discovery to anyone', async () => {
    expect((await api.app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 's3cret') } })).statusCode).toBe(200);
    expect((await api.app.inject({ url: '/v1/nodes', headers: { authorization: basic('admin', 's3cret') } })).statusCode).toBe(200);
    expect((await api.app.inject({ url: '/' })).statusCode).toBe(200);
    expect((await api.app.inject({ url: '/v1' })).statusCode).toBe(200);
  });

  it('refuses a missing or malformed user file with a ConfigError naming it', () => {
    const bad = path.join(api.dir, 'bad');
    writeFileSync(bad, 'admin:plaintext\n');
    for (const f of [bad, path.join(api.dir, 'missing')]) {
      const config = loadConfig({ env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: f } }).config;
      expect(() => buildApi({ store: api.store, config, logger })).toThrow(ConfigError);
    }
    const config = loadConfig({ env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: bad } }).config;
    expect(() => buildApi({ store: api.store, config, logger })).toThrow(/line 1: expected user:bcrypt-hash/);
  });

  it.skipIf(!requirePeer('baremetal', 'python3-ironicclient'))('works with the stock baremetal client', async () => {
    const env = { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: api.usersFile };
    expect(runCli(['manage', 'db', 'migrate', '--database', `sqlite://${path.join(api.dir, 'cli.db')}`]).code).toBe(0);
    // The driver list comes from the live conductors' registrations (as in Ironic): one conductor
    // that registered the built-in hardware types, as `ironring conductor` does at start.
    const cliStore = await openDatabase(`sqlite://${path.join(api.dir, 'cli.db')}`);
    try {
      await registerConductor(cliStore, { hostname: 'c1', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: createDriverRegistry().registrations() }, 600);
    } finally {
      await cliStore.close();
    }
    const cli: CliProcess = startCli(['api', '--database', `sqlite://${path.join(api.dir, 'cli.db')}`, '--api-address', '127.0.0.1:0'], { env });
    try {
      const base = (await cli.waitForOutput(/at (http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
      const ok = spawnSync('baremetal', ['--os-endpoint', base, '--os-auth-type', 'http_basic', '--os-username', 'admin', '--os-password', 's3cret', 'driver', 'list', '-f', 'json'], { encoding: 'utf8', timeout: 60_000 });
      expect(ok.status, ok.stderr).toBe(0);
      expect((JSON.parse(ok.stdout) as Array<{ 'Supported driver(s)': string }>).map((d) => d['Supported driver(s)'])).toEqual(['fake-hardware', 'ipmi']);
      const refused = spawnSync('baremetal', ['--os-endpoint', base, '--os-auth-type', 'none', 'node', 'list'], { encoding: 'utf8', timeout: 60_000 });
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/401|authentication required/i);
    } finally {
      cli.child.kill('SIGTERM');
      await cli.exited;
    }
  });
});
