/**
 * The ProxyDHCP responder in a conductor's boot services: `[dhcp]` options are validated naming the
 * option, it names itself by the TFTP host nodes use, a port it cannot bind costs one warning and
 * the services come up without it, and `close()` ends its answers.
 */
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { createLogger } from '../../../src/common/logger.js';
import { loadConfig } from '../../../src/config/load.js';
import { proxyServerAddress, startBootServices } from '../../../src/conductor/boot-services.js';
import { testConductorEnv } from '../../helpers/conductors.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-proxydhcp-services-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const config = (extra: Record<string, string> = {}) =>
  loadConfig({ env: testConductorEnv(dir, { IRONRING_DHCP_PROXY_ENABLED: 'true', IRONRING_DHCP_PROXY_ADDRESS: '127.0.0.1', IRONRING_DHCP_PROXY_PORT: '0', IRONRING_DHCP_PROXY_PXE_PORT: '0', ...extra }) }).config;

/** A logger whose JSON lines are kept. */
function capture(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level: 'info', pretty: false, destination }), lines };
}

describe('[dhcp] options', () => {
  it('are on by default on 0.0.0.0, ports 67 and 4011', () => {
    const { config: c } = loadConfig({ env: {} });
    expect(c.dhcp).toMatchObject({ proxy_enabled: true, proxy_address: '0.0.0.0', proxy_port: 67, proxy_pxe_port: 4011, proxy_server_address: '' });
  });

  it('refuse a bind or server address that is not IPv4, naming the option', () => {
    for (const [variable, key] of [['IRONRING_DHCP_PROXY_ADDRESS', 'dhcp.proxy_address'], ['IRONRING_DHCP_PROXY_SERVER_ADDRESS', 'dhcp.proxy_server_address']] as const) {
      let err: unknown;
      try {
        loadConfig({ env: { [variable]: '10.0.0.300' } });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).key).toBe(key);
    }
    expect(() => loadConfig({ env: { IRONRING_DHCP_PROXY_PORT: '65536' } })).toThrow(/proxy_port/);
  });

  it('name the server by proxy_server_address, else the IPv4 TFTP host, else the bind address', () => {
    expect(proxyServerAddress(config({ IRONRING_DHCP_PROXY_SERVER_ADDRESS: '10.0.0.7' }), '10.0.0.5:69')).toBe('10.0.0.7');
    expect(proxyServerAddress(config(), '10.0.0.5:69')).toBe('10.0.0.5');
    expect(proxyServerAddress(config(), 'boot.example.org:69')).toBe('127.0.0.1');
    expect(proxyServerAddress(config(), null)).toBe('127.0.0.1');
  });
});

describe('boot services with the ProxyDHCP responder', () => {
  let blocker: Socket | undefined;
  afterEach(() => {
    blocker?.close();
    blocker = undefined;
  });

  it('start it on the configured address, with its counters, and close it', async () => {
    const services = await startBootServices(config(), capture().logger);
    try {
      expect(services.proxyDhcp?.address()).toMatchObject({ host: '127.0.0.1' });
      expect(services.proxyDhcpStats()).toMatchObject({ offers: 0, acks: 0 });
    } finally {
      await services.close();
    }
  });

  it('warn once and run without it when its port is taken', async () => {
    blocker = createSocket('udp4');
    await new Promise<void>((resolve) => blocker!.bind(0, '127.0.0.1', resolve));
    const taken = blocker.address().port;
    const { logger, lines } = capture();
    const services = await startBootServices(config({ IRONRING_DHCP_PROXY_PORT: String(taken) }), logger);
    try {
      expect(services.proxyDhcp).toBeNull();
      expect(services.proxyDhcpStats()).toBeNull();
      const warnings = lines.filter((l) => l.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toBe(`cannot listen for the ProxyDHCP responder on 127.0.0.1:${taken}: address already in use (change it with [dhcp] proxy_port); continuing without it`);
    } finally {
      await services.close();
    }
  });

  it('do not start it when proxy_enabled is false', async () => {
    const services = await startBootServices(config({ IRONRING_DHCP_PROXY_ENABLED: 'false' }), capture().logger);
    try {
      expect(services.proxyDhcp).toBeNull();
    } finally {
      await services.close();
    }
  });
});
