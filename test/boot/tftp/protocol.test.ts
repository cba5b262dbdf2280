/**
 * The protocol spoken by hand over a raw UDP socket: malformed datagrams, refused writes, option
 * edge cases, duplicate ACKs, windows, retransmission limits and shutdown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListenError } from '../../../src/common/errors.js';
import { startTftpServer } from '../../../src/boot/tftp/index.js';
import type { TftpServerOptions } from '../../../src/boot/tftp/index.js';
import { ack, decode, fetchRaw, rawPeer, request, runClient, startFixture, TFTP_ENGINES, until } from './helpers.js';
import type { Fixture, RawPeer, Received } from './helpers.js';
import { requirePeer } from '../../helpers/peers.js';

const CURL = requirePeer('curl', 'curl');

describe.each(TFTP_ENGINES)('%s engine', (engine) => {
  let fx: Fixture;

  beforeAll(async () => {
    // A long timeout: nothing here may be explained by a retransmission on timeout.
    fx = await startFixture({ engine, timeoutMs: 20_000, maxBlksize: 16384 });
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  /** Runs `body` against a server of its own and a fresh raw peer, and releases both. */
  async function withOwnServer(options: Partial<TftpServerOptions>, body: (own: Fixture, peer: RawPeer) => Promise<void>): Promise<void> {
    const own = await startFixture({ engine, ...options });
    const peer = await rawPeer();
    try {
      await body(own, peer);
    } finally {
      peer.close();
      await own.cleanup();
    }
  }

  async function expectPacket(peer: RawPeer): Promise<Received & ReturnType<typeof decode>> {
    const got = await peer.next();
    if (!got) throw new Error('no packet from the server');
    return { ...got, ...decode(got.data) };
  }

  const raw = (...parts: (number[] | string)[]): Buffer =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

  describe('malformed datagrams', () => {
    // Not well-formed requests: the listening port answers none of them (issue #14 item 5), so it
    // cannot be used to reflect packets at a spoofed source, and the server keeps serving.
    const ignored: [string, Buffer][] = [
      ['one byte', raw([0])],
      ['unknown opcode', raw([0, 9], 'x\0octet\0')],
      ['opcode 0xffff', raw([0xff, 0xff])],
      ['RRQ missing the NUL after the filename', raw([0, 1], 'small.bin')],
      ['RRQ missing the NUL after the mode', raw([0, 1], 'small.bin\0octet')],
      ['RRQ without a mode', raw([0, 1], 'small.bin\0')],
      ['RRQ with an empty filename', raw([0, 1], '\0octet\0')],
      ['RRQ with an unknown mode', raw([0, 1], 'small.bin\0bogus\0')],
      ['an option without a value', raw([0, 1], 'small.bin\0octet\0blksize\0')],
      ['an option value without its NUL', raw([0, 1], 'small.bin\0octet\0blksize\0' + '1468')],
      ['DATA sent to the listener', raw([0, 3, 0, 1], 'payload')],
      ['OACK sent to the listener', raw([0, 6], 'blksize\x00512\x00')],
      ['ACK sent to the listener', raw([0, 4, 0, 1])],
      ['truncated ACK', raw([0, 4, 0])],
      ['an ERROR', raw([0, 5, 0, 0], 'bye\0')],
      ['a truncated ERROR', raw([0, 5, 0])],
      ['an empty datagram', Buffer.alloc(0)],
    ];

    it.each(ignored)('%s gets no answer (the next reply is for the next valid request)', async (_name, packet) => {
      await withOwnServer({}, async (own, peer) => {
        peer.send(packet, own.port);
        await until(() => own.server.stats().ignored === 1);
        peer.send(request(1, 'small.bin'), own.port);
        const reply = await expectPacket(peer);
        expect(reply).toMatchObject({ op: 3, block: 1 });
        expect(own.server.stats()).toMatchObject({ refused: 0, ignored: 1 });
      });
    });

    it('answers a well-formed request it cannot serve (mail mode) with error 4 from a new transfer ID', async () => {
      const peer = await rawPeer();
      try {
        peer.send(raw([0, 1], 'small.bin\0mail\0'), fx.port);
        const reply = await expectPacket(peer);
        expect(reply).toMatchObject({ op: 5, code: 4 });
        expect(reply.port).not.toBe(fx.port);
      } finally {
        peer.close();
      }
    });

    it('refuses a write request with error 2 from a new transfer ID', async () => {
      const peer = await rawPeer();
      try {
        peer.send(request(2, 'upload.bin'), fx.port);
        const reply = await expectPacket(peer);
        expect(reply.op).toBe(5);
        expect(reply.code).toBe(2);
        expect(reply.port).not.toBe(fx.port);
      } finally {
        peer.close();
      }
    });

    it.skipIf(!CURL)('keeps serving after all of that', async () => {
      const res = await fetchRaw(fx.port, 'small.bin');
      expect(res.data.equals(fx.files['small.bin']!)).toBe(true);
      const viaCurl = await runClient('curl', ['-sS', '--fail', `tftp://127.0.0.1:${fx.port}/small.bin`]);
      expect(viaCurl.stdout.equals(fx.files['small.bin']!)).toBe(true);
    });
  });

  describe('option values', () => {
    it.each([
      [{ blksize: '0' }],
      [{ blksize: '7' }],
      [{ blksize: 'abc' }],
      [{ blksize: '-1468' }],
      [{ blksize: '99999999999999999999' }],
      [{ windowsize: '0' }],
      [{ timeout: '0' }],
      [{ timeout: '256' }],
      [{ timeout: '1e3' }],
    ])('refuses %j with error 8', async (options) => {
      const res = await fetchRaw(fx.port, 'small.bin', options);
      expect(res.error?.code).toBe(8);
      expect(res.data.length).toBe(0);
    });

    it('clamps blksize and windowsize above the maximum, and the transfer still works', async () => {
      const res = await fetchRaw(fx.port, 'small.bin', { blksize: '4294967295', windowsize: '100000' });
      expect(res.oack).toMatchObject({ blksize: '16384', windowsize: '64' });
      expect(res.data.equals(fx.files['small.bin']!)).toBe(true);
    });

    it('acknowledges tsize with the size, timeout as asked, and ignores unknown options', async () => {
      const res = await fetchRaw(fx.port, 'small.bin', { tsize: '0', timeout: '3', frobnicate: 'yes', blksize: '1468' });
      expect(res.oack).toEqual({ tsize: '100000', timeout: '3', blksize: '1468' });
      expect(res.data.equals(fx.files['small.bin']!)).toBe(true);
    });

    it('does not offer tsize for netascii, whose size on the wire is not known', async () => {
      const res = await fetchRaw(fx.port, 'text.txt', { tsize: '0', blksize: '512' }, 'netascii');
      expect(res.oack).toEqual({ blksize: '512' });
      expect(res.data.toString('latin1')).toBe('line one\r\nline two\r\0\r\nbare\r\0carriage\r\n');
    });
  });

  describe('acknowledgements', () => {
    it('does not answer duplicate ACKs with duplicate data (lock-step)', async () => {
      const peer = await rawPeer();
      try {
        peer.send(request(1, 'exact.bin'), fx.port);
        const seen: number[] = [];
        for (;;) {
          const p = await expectPacket(peer);
          expect(p.op).toBe(3);
          seen.push(p.block!);
          // Every ACK three times: a sorcerer's apprentice server would triple each block.
          for (let i = 0; i < 3; i += 1) peer.send(ack(p.block!), p.port);
          if (p.payload!.length < 512) break;
        }
        // 2048 bytes: four full blocks and an empty fifth, each exactly once.
        expect(seen).toEqual([1, 2, 3, 4, 5]);
      } finally {
        peer.close();
      }
    });

    it('sends each window once despite duplicate ACKs, and restarts a window after a partial ACK', async () => {
      const peer = await rawPeer();
      const next = async (): Promise<number> => {
        const p = await expectPacket(peer);
        expect(p.op).toBe(3);
        return p.block!;
      };
      try {
        peer.send(request(1, 'small.bin', 'octet', { blksize: '512', windowsize: '4' }), fx.port);
        const oack = await expectPacket(peer);
        expect(oack.options).toEqual({ blksize: '512', windowsize: '4' });
        const tid = oack.port;
        peer.send(ack(0), tid);
        peer.send(ack(0), tid);
        expect([await next(), await next(), await next(), await next()]).toEqual([1, 2, 3, 4]);
        peer.send(ack(4), tid);
        peer.send(ack(4), tid);
        expect([await next(), await next(), await next(), await next()]).toEqual([5, 6, 7, 8]);
        // Blocks 7 and 8 "lost": ACK 6 restarts the window at 7 (RFC 7440).
        peer.send(ack(6), tid);
        expect([await next(), await next(), await next(), await next()]).toEqual([7, 8, 9, 10]);
        // A stale ACK changes nothing; the next real one moves on.
        peer.send(ack(3), tid);
        peer.send(ack(10), tid);
        expect(await next()).toBe(11);
        peer.send(raw([0, 5, 0, 0], 'done\0'), tid);
      } finally {
        peer.close();
      }
    });
  });

  describe('timeouts and shutdown', () => {
    it('retransmits a bounded number of times to a silent client, then ends the session', async () => {
      await withOwnServer({ timeoutMs: 30, retries: 3 }, async (quick, peer) => {
        peer.send(request(1, 'small.bin'), quick.port);
        const received: ReturnType<typeof decode>[] = [];
        for (;;) {
          const p = await expectPacket(peer);
          received.push(p);
          if (p.op === 5) break;
        }
        // The first send and three retransmissions of block 1, then an error saying why.
        expect(received.map((p) => p.op === 3 && p.block)).toEqual([1, 1, 1, 1, false]);
        expect(received[4]!.message).toMatch(/timed out/);
        await until(() => quick.server.stats().failed === 1);
        expect(quick.server.stats()).toMatchObject({ started: 1, completed: 0, failed: 1, active: 0 });
      });
    });

    it('retransmits an unacknowledged OACK the same way', async () => {
      await withOwnServer({ timeoutMs: 30, retries: 2 }, async (quick, peer) => {
        peer.send(request(1, 'small.bin', 'octet', { blksize: '1024' }), quick.port);
        const ops: number[] = [];
        for (;;) {
          const p = await expectPacket(peer);
          ops.push(p.op);
          if (p.op === 5) break;
        }
        expect(ops).toEqual([6, 6, 6, 5]);
      });
    });

    it('ends a transfer the client aborts with an ERROR', async () => {
      await withOwnServer({}, async (own, peer) => {
        peer.send(request(1, 'small.bin'), own.port);
        const first = await expectPacket(peer);
        peer.send(raw([0, 5, 0, 0], 'changed my mind\0'), first.port);
        await until(() => own.server.stats().failed === 1);
        expect(own.server.stats().active).toBe(0);
      });
    });

    it('starts one transfer for a retransmitted request', async () => {
      await withOwnServer({}, async (own, peer) => {
        peer.send(request(1, 'exact.bin'), own.port);
        peer.send(request(1, 'exact.bin'), own.port);
        const first = await expectPacket(peer);
        peer.send(raw([0, 5, 0, 0], 'enough\0'), first.port);
        await until(() => own.server.stats().active === 0);
        expect(own.server.stats().started).toBe(1);
      });
    });

    it('close() aborts transfers in progress, is idempotent and frees the port', async () => {
      await withOwnServer({}, async (own, peer) => {
        peer.send(request(1, 'small.bin'), own.port);
        expect((await expectPacket(peer)).op).toBe(3);
        await Promise.all([own.server.close(), own.server.close()]);
        const bye = await expectPacket(peer);
        expect(bye.op).toBe(5);
        expect(bye.message).toMatch(/shutting down/);
        expect(own.server.stats()).toMatchObject({ active: 0, failed: 1 });
        const again = await startTftpServer({ engine, root: own.root, address: `127.0.0.1:${own.port}` });
        await again.close();
      });
    });

    it('throws a one-line ListenError when the port is taken', async () => {
      const err = await startTftpServer({ engine, root: fx.root, address: `127.0.0.1:${fx.port}` }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ListenError);
      expect((err as Error).message).toBe(
        `cannot listen for the TFTP server on 127.0.0.1:${fx.port}: address already in use (change it with --tftp-address or [pxe] tftp_address)`,
      );
    });
  });
});
