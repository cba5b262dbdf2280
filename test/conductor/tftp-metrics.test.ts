/**
 * A conductor's /metrics carries its embedded TFTP and HTTP boot servers' counters, read at scrape
 * time from a real server that a real client fetched from.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpBootServer } from '../../src/boot/http-boot.js';
import { ConductorMetrics } from '../../src/conductor/metrics.js';
import { MAC_LINK, rawPeer, request, runClient, startFixture, until } from '../boot/tftp/helpers.js';
import type { Fixture } from '../boot/tftp/helpers.js';
import { requirePeer } from '../helpers/peers.js';

const CURL = requirePeer('curl', 'curl');

let fx: Fixture;
beforeAll(async () => {
  fx = await startFixture();
});
afterAll(async () => {
  await fx.cleanup();
});

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, name: string, label = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('TFTP metrics', () => {
  it('exports no outcomes and zero counts while no TFTP server runs', async () => {
    const metrics = new ConductorMetrics({ conductor: 'c1', conductor_group: '' });
    const text = await metrics.registry.metrics();
    expect(sample(text, 'ironring_tftp_transfers_total')).toBeUndefined();
    expect(sample(text, 'ironring_tftp_transfers_started_total')).toBe(0);
    expect(sample(text, 'ironring_tftp_transfers_active')).toBe(0);
  });

  it.skipIf(!CURL)('follows the server: completed and refused transfers appear at the next scrape', async () => {
    const metrics = new ConductorMetrics({ conductor: 'c1', conductor_group: 'rack-1' });
    metrics.watchTftp(() => fx.server.stats());
    const before = await metrics.registry.metrics();
    expect(sample(before, 'ironring_tftp_transfers_total', 'outcome="completed"')).toBe(0);

    expect((await runClient('curl', ['-sS', '--fail', `tftp://127.0.0.1:${fx.port}/${MAC_LINK}`])).code).toBe(0);
    expect((await runClient('curl', ['-sS', '--fail', `tftp://127.0.0.1:${fx.port}/no-such-file`])).code).not.toBe(0);
    // curl exits once it has sent its last ACK; the server counts the transfer when that ACK arrives.
    await until(() => fx.server.stats().active === 0);

    const after = await metrics.registry.metrics();
    expect(sample(after, 'ironring_tftp_transfers_total', 'outcome="completed"')).toBe(1);
    expect(sample(after, 'ironring_tftp_transfers_total', 'outcome="failed"')).toBe(0);
    expect(sample(after, 'ironring_tftp_transfers_started_total')).toBe(1);
    expect(sample(after, 'ironring_tftp_requests_refused_total')).toBe(1);
    expect(sample(after, 'ironring_tftp_transfers_active')).toBe(0);
    expect(after).toMatch(/^ironring_tftp_transfers_total\{outcome="completed",conductor="c1",conductor_group="rack-1"\} 1$/m);
  });

  it('counts datagrams dropped unanswered and requests refused over the transfer limits (issue #14 item 5)', async () => {
    const own = await startFixture({ maxTransfersPerClient: 1, timeoutMs: 20_000 });
    const peer = await rawPeer();
    const other = await rawPeer();
    try {
      const metrics = new ConductorMetrics({ conductor: 'c1', conductor_group: '' });
      metrics.watchTftp(() => own.server.stats());
      peer.send(Buffer.from([0, 4, 0, 1]), own.port); // an ACK on the listening port
      peer.send(request(1, 'small.bin'), own.port); // held: never acknowledged
      expect((await peer.next())?.data.readUInt16BE(0)).toBe(3);
      other.send(request(1, 'small.bin'), own.port); // same address, over the cap of 1
      expect((await other.next())?.data.readUInt16BE(0)).toBe(5);
      const text = await metrics.registry.metrics();
      expect(sample(text, 'ironring_tftp_datagrams_ignored_total')).toBe(1);
      expect(sample(text, 'ironring_tftp_requests_over_limit_total')).toBe(1);
      expect(sample(text, 'ironring_tftp_transfers_active')).toBe(1);
    } finally {
      peer.close();
      other.close();
      await own.cleanup();
    }
  });
});

describe('HTTP boot metrics', () => {
  it('exports no outcomes and zero counts while no HTTP boot server runs', async () => {
    const text = await new ConductorMetrics({ conductor: 'c1', conductor_group: '' }).registry.metrics();
    expect(sample(text, 'ironring_http_boot_requests_total')).toBeUndefined();
    expect(sample(text, 'ironring_http_boot_sent_bytes_total')).toBe(0);
    expect(sample(text, 'ironring_http_boot_requests_active')).toBe(0);
  });

  it.skipIf(!CURL)('follows the server: files fetched and paths refused appear at the next scrape, with HELP and TYPE', async () => {
    await writeFile(join(fx.root, 'kernel.img'), Buffer.alloc(70_000, 7));
    const http = await startHttpBootServer({ root: fx.root, address: '127.0.0.1:0' });
    try {
      const metrics = new ConductorMetrics({ conductor: 'c1', conductor_group: 'rack-1' });
      metrics.watchHttpBoot(() => http.stats());
      expect(sample(await metrics.registry.metrics(), 'ironring_http_boot_requests_total', 'outcome="served"')).toBe(0);

      const curl = (...args: string[]) => promisify(execFile)('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', ...args], { encoding: 'utf8' });
      expect((await curl(`${http.url}/kernel.img`)).stdout).toBe('200');
      expect((await curl('-r', '0-999', `${http.url}/kernel.img`)).stdout).toBe('206');
      expect((await curl(`${http.url}/missing`)).stdout).toBe('404');
      expect((await curl('--path-as-is', `${http.url}/../etc/passwd`)).stdout).toBe('403');
      await until(() => http.stats().served + http.stats().notFound + http.stats().refused === 4);

      const text = await metrics.registry.metrics();
      expect(text).toContain('# HELP ironring_http_boot_requests_total HTTP boot requests answered, by outcome');
      expect(text).toContain('# TYPE ironring_http_boot_requests_total counter');
      expect(text).toContain('# TYPE ironring_http_boot_sent_bytes_total counter');
      expect(text).toContain('# TYPE ironring_http_boot_requests_active gauge');
      expect(text).toMatch(/^ironring_http_boot_requests_total\{outcome="served",conductor="c1",conductor_group="rack-1"\} 2$/m);
      expect(sample(text, 'ironring_http_boot_requests_total', 'outcome="not_found"')).toBe(1);
      expect(sample(text, 'ironring_http_boot_requests_total', 'outcome="refused"')).toBe(1);
      expect(sample(text, 'ironring_http_boot_requests_total', 'outcome="failed"')).toBe(0);
      expect(sample(text, 'ironring_http_boot_requests_total', 'outcome="not_modified"')).toBe(0);
      expect(sample(text, 'ironring_http_boot_sent_bytes_total')).toBe(71_000);
      expect(sample(text, 'ironring_http_boot_requests_active')).toBe(0);
    } finally {
      await http.close();
    }
  });
});
