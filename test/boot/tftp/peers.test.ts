/**
 * The embedded TFTP server against real Debian clients: curl, tftp-hpa and atftp, each fetching
 * through a real process what a PXE client would.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG, MAC_LINK, NODE_UUID, runClient, startFixture, TFTP_ENGINES, until } from './helpers.js';
import type { Fixture } from './helpers.js';
import { requirePeer } from '../../helpers/peers.js';

const CURL = requirePeer('curl', 'curl');
const TFTP_HPA = requirePeer('tftp', 'tftp-hpa');
const ATFTP = requirePeer('atftp', 'atftp');

describe.each(TFTP_ENGINES)('%s engine', (engine) => {
  const KERNEL = `${NODE_UUID}/deploy_kernel`;
  let fx: Fixture;

  beforeAll(async () => {
    // Every client here comes from 127.0.0.1, and 50 run at once: lift the per-client cap (default 8).
    fx = await startFixture({ engine, maxTransfersPerClient: 64 });
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  function curl(file: string, ...extra: string[]): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
    return runClient('curl', ['-sS', '--fail', ...extra, `tftp://127.0.0.1:${fx.port}/${file}`]);
  }

  describe.skipIf(!CURL)('curl', () => {
    it('fetches a per-MAC config through a symlink inside the root', async () => {
      const res = await curl(MAC_LINK);
      expect(res.code).toBe(0);
      expect(res.stdout.toString()).toBe(CONFIG);
    });

    it.each([[[]], [['--tftp-blksize', '1468']], [['--tftp-blksize', '65464']], [['--tftp-blksize', '8']]])(
      'fetches a multi-megabyte kernel byte-identical with options %j',
      async (extra) => {
        // blksize 8 makes 650k round trips for the kernel; a 100 kB file covers the tiny blocks.
        const file = extra.includes('8') ? 'small.bin' : KERNEL;
        const res = await curl(file, ...extra);
        expect(res.code).toBe(0);
        expect(res.stdout.equals(fx.files[file]!)).toBe(true);
      },
    );

    it('fetches a file that is an exact multiple of the block size', async () => {
      const exact = await curl('exact.bin');
      expect(exact.code).toBe(0);
      expect(exact.stdout.equals(fx.files['exact.bin']!)).toBe(true);
    });

    it('completes 50 parallel transfers, all intact', async () => {
      await until(() => fx.server.stats().active === 0);
      const before = fx.server.stats();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => curl(i % 2 ? 'small.bin' : 'medium.bin', '--tftp-blksize', i % 3 ? '1468' : '512')),
      );
      results.forEach((res, i) => {
        expect(res.code).toBe(0);
        expect(res.stdout.equals(fx.files[i % 2 ? 'small.bin' : 'medium.bin']!)).toBe(true);
      });
      // curl exits once it has sent its last ACK; the server counts the transfer when that ACK arrives.
      await until(() => fx.server.stats().active === 0);
      const after = fx.server.stats();
      expect(after.completed - before.completed).toBe(50);
      expect(after.failed).toBe(before.failed);
    });
  });

  describe.skipIf(!CURL)('IPv6', () => {
    it('serves on [::1] to curl', async () => {
      const v6 = await startFixture({ engine, address: '[::1]:0' });
      try {
        expect(v6.server.address().host).toBe('::1');
        const res = await runClient('curl', ['-sS', '--fail', `tftp://[::1]:${v6.port}/${MAC_LINK}`]);
        expect(res.code, res.stderr).toBe(0);
        expect(res.stdout.toString()).toBe(CONFIG);
      } finally {
        await v6.cleanup();
      }
    });
  });

  describe.skipIf(!TFTP_HPA)('tftp-hpa client', () => {
    it('fetches the kernel in binary mode and the per-MAC config', async () => {
      const dest = path.join(fx.dir, 'hpa-kernel');
      const res = await runClient('tftp', ['127.0.0.1', String(fx.port), '-m', 'binary', '-c', 'get', KERNEL, dest]);
      expect(res.code).toBe(0);
      expect(readFileSync(dest).equals(fx.files[KERNEL]!)).toBe(true);
      const cfg = path.join(fx.dir, 'hpa-config');
      expect((await runClient('tftp', ['127.0.0.1', String(fx.port), '-m', 'binary', '-c', 'get', MAC_LINK, cfg])).code).toBe(0);
      expect(readFileSync(cfg, 'utf8')).toBe(CONFIG);
    });

    it('fetches an empty file', async () => {
      // (curl refuses the "tsize 0" that both this server and tftpd-hpa acknowledge for it.)
      const dest = path.join(fx.dir, 'hpa-empty');
      const res = await runClient('tftp', ['127.0.0.1', String(fx.port), '-m', 'binary', '-c', 'get', 'empty.bin', dest]);
      expect(res.code).toBe(0);
      expect(readFileSync(dest).length).toBe(0);
    });

    it('serves netascii with CR/LF conversion that the client undoes', async () => {
      const dest = path.join(fx.dir, 'hpa-text');
      const res = await runClient('tftp', ['127.0.0.1', String(fx.port), '-m', 'ascii', '-c', 'get', 'text.txt', dest]);
      expect(res.code).toBe(0);
      expect(readFileSync(dest).equals(fx.files['text.txt']!)).toBe(true);
    });
  });

  describe.skipIf(!ATFTP)('atftp', () => {
    it.each([
      ['blksize 1468'],
      ['blksize 1468', 'windowsize 16'],
      ['blksize 512', 'windowsize 64', 'tsize enable'],
      ['blksize 65464'],
      ['blksize 8192', 'windowsize 8'],
    ])('fetches the kernel byte-identical with %s', async (...options: string[]) => {
      const dest = path.join(fx.dir, `atftp-${options.join('-').replace(/ /g, '')}`);
      const args = ['--get', '-r', KERNEL, '-l', dest, ...options.flatMap((o) => ['--option', o]), '127.0.0.1', String(fx.port)];
      const res = await runClient('atftp', args);
      expect(res.code, res.stderr).toBe(0);
      expect(readFileSync(dest).equals(fx.files[KERNEL]!)).toBe(true);
    });

    it('crosses the 16-bit block number wrap-around', async () => {
      // 65,536 full blocks of 8 bytes and a short last one: block numbers wrap to 0 and go on.
      const dest = path.join(fx.dir, 'atftp-wrap');
      const options = ['--option', 'blksize 8', '--option', 'windowsize 64'];
      const res = await runClient('atftp', ['--get', '-r', 'wrap.bin', '-l', dest, ...options, '127.0.0.1', String(fx.port)]);
      expect(res.code, res.stderr).toBe(0);
      expect(readFileSync(dest).equals(fx.files['wrap.bin']!)).toBe(true);
    });
  });
});
