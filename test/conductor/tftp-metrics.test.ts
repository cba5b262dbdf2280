/**
 * A conductor's /metrics carries its embedded TFTP server's counters, read at scrape time from a
 * real server that a real client fetched from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
