/**
 * Bounded TFTP resources (issue #14 item 5), with raw UDP sockets against a real server, on both
 * engines: transfers are capped in total and per client address (a request over a cap gets a
 * "server busy" ERROR from the listening port and nothing is opened for it), a client's long timeout
 * option cannot hold a transfer for minutes, an abandoned transfer is released within the bound,
 * and refusals are logged at debug with one warning per minute.
 */
import { createSocket } from 'node:dgram';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { boundedRetries } from '../../../src/boot/tftp/server.js';
import type { TftpServerOptions } from '../../../src/boot/tftp/index.js';
import { ack, decode, fetchRaw, NODE_UUID, request, startFixture, TFTP_ENGINES, until } from './helpers.js';
import type { Fixture, Received } from './helpers.js';

/** A raw UDP peer bound to `host` (127.0.0.x: distinct client addresses on one machine). */
async function peerAt(host = '127.0.0.1') {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  const queue: Received[] = [];
  let waiter: (() => void) | null = null;
  socket.on('message', (data: Buffer, rinfo) => {
    queue.push({ data, port: rinfo.port });
    waiter?.();
  });
  return {
    send: (data: Buffer, port: number) => socket.send(data, port, '127.0.0.1'),
    /** The next datagram, or null after `timeoutMs`. */
    async next(timeoutMs = 5000): Promise<(Received & ReturnType<typeof decode>) | null> {
      if (queue.length === 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeoutMs);
          waiter = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        waiter = null;
      }
      const got = queue.shift();
      return got ? { ...got, ...decode(got.data) } : null;
    },
    close: () => socket.close(),
  };
}
type Peer = Awaited<ReturnType<typeof peerAt>>;

/** A logger whose JSON lines are kept, to count refusals by level. */
function capturingLogger() {
  const lines: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', pretty: false, destination: sink }), lines };
}

let fixtures: Fixture[] = [];
let peers: Peer[] = [];
afterEach(async () => {
  for (const p of peers) p.close();
  peers = [];
  await Promise.all(fixtures.map((f) => f.cleanup()));
  fixtures = [];
});

async function server(options: Partial<TftpServerOptions>): Promise<Fixture> {
  const fx = await startFixture(options);
  fixtures.push(fx);
  return fx;
}

async function peer(host?: string): Promise<Peer> {
  const p = await peerAt(host);
  peers.push(p);
  return p;
}

/** Starts a transfer from `p` that is never acknowledged: the server holds it until it gives up. */
async function hold(fx: Fixture, p: Peer, options: Record<string, string> = { blksize: '1024' }): Promise<void> {
  p.send(request(1, 'small.bin', 'octet', options), fx.port);
  const first = await p.next();
  expect(first?.op, 'the held transfer starts').toBe(6);
}

describe('boundedRetries', () => {
  it('keeps timeout × (retries + 1) within the idle bound, never below one wait', () => {
    expect(boundedRetries(5, 1000, 60_000)).toBe(5);
    expect(boundedRetries(5, 20_000, 60_000)).toBe(2);
    expect(boundedRetries(5, 60_000, 60_000)).toBe(0);
    expect(boundedRetries(5, 255_000, 60_000)).toBe(0);
  });
});

describe.each(TFTP_ENGINES)('%s engine: transfer limits', (engine) => {
  it('caps transfers per client address: the one over the cap gets "server busy" from the listening port, other clients are served', async () => {
    const fx = await server({ engine, maxTransfersPerClient: 3, timeoutMs: 20_000 });
    for (let i = 0; i < 3; i += 1) await hold(fx, await peer());
    expect(fx.server.stats()).toMatchObject({ active: 3, overLimit: 0 });

    const extra = await peer();
    extra.send(request(1, 'small.bin'), fx.port);
    const busy = await extra.next();
    expect(busy).toMatchObject({ op: 5, code: 0, port: fx.port });
    expect(busy!.message).toMatch(/server busy/);
    expect(fx.server.stats()).toMatchObject({ active: 3, overLimit: 1, started: 3 });

    // Another address is not held back by the first one's transfers.
    const other = await peer('127.0.0.2');
    other.send(request(1, 'small.bin'), fx.port);
    expect(await other.next()).toMatchObject({ op: 3, block: 1 });
  });

  it('caps transfers in total across clients', async () => {
    const fx = await server({ engine, maxTransfers: 4, maxTransfersPerClient: 100, timeoutMs: 20_000 });
    for (let i = 0; i < 4; i += 1) await hold(fx, await peer(`127.0.0.${i + 1}`));
    const extra = await peer('127.0.0.9');
    extra.send(request(1, 'small.bin'), fx.port);
    expect(await extra.next()).toMatchObject({ op: 5, code: 0, port: fx.port });
    expect(fx.server.stats()).toMatchObject({ active: 4, overLimit: 1 });
  });

  it('with the defaults, 40 requests asking for timeout 255 from one client hold at most 8 transfers; the rest get "server busy"', async () => {
    const fx = await server({ engine });
    const many = await Promise.all(Array.from({ length: 40 }, () => peer()));
    for (const p of many) p.send(request(1, 'small.bin', 'octet', { timeout: '255', blksize: '1024' }), fx.port);
    const replies = await Promise.all(many.map((p) => p.next()));
    const busy = replies.filter((r) => r?.op === 5);
    const started = replies.filter((r) => r?.op === 6);
    expect(started).toHaveLength(8);
    expect(busy).toHaveLength(32);
    for (const b of busy) expect(b).toMatchObject({ code: 0, port: fx.port });
    // 255 s per packet is not acknowledged: the transfers run with the server's own timeout.
    for (const s of started) expect(s!.options).toEqual({ blksize: '1024' });
    expect(fx.server.stats()).toMatchObject({ active: 8, overLimit: 32 });
  });

  it('does not acknowledge a timeout above the idle bound, and acknowledges one within it', async () => {
    const fx = await server({ engine, maxIdleMs: 10_000 });
    const long = await fetchRaw(fx.port, 'small.bin', { timeout: '11', tsize: '0' });
    expect(long.oack).toEqual({ tsize: '100000' });
    expect(long.data.equals(fx.files['small.bin']!)).toBe(true);
    const fine = await fetchRaw(fx.port, 'small.bin', { timeout: '10', tsize: '0' });
    expect(fine.oack).toEqual({ timeout: '10', tsize: '100000' });
  });

  it('releases a transfer its client abandoned within the idle bound, retransmitting no more than fits, and frees its place', async () => {
    // timeout 1 s, idle bound 2.5 s: one retransmission (2 × 1 s fits, 3 × 1 s does not).
    const fx = await server({ engine, maxIdleMs: 2500, maxTransfersPerClient: 1, retries: 5 });
    const gone = await peer();
    gone.send(request(1, 'small.bin', 'octet', { timeout: '1', blksize: '1024' }), fx.port);
    const ops: number[] = [];
    for (;;) {
      const p = await gone.next(10_000);
      if (!p) throw new Error('the server neither retransmitted nor gave up');
      ops.push(p.op);
      if (p.op === 5) break;
    }
    expect(ops).toEqual([6, 6, 5]);
    await until(() => fx.server.stats().active === 0, 5000);
    expect(fx.server.stats()).toMatchObject({ failed: 1, active: 0 });
    // Its place under the per-client cap is free again.
    const back = await fetchRaw(fx.port, 'small.bin');
    expect(back.data.equals(fx.files['small.bin']!)).toBe(true);
  });

  it('a transfer that completes frees its place at once', async () => {
    const fx = await server({ engine, maxTransfersPerClient: 1 });
    const p = await peer();
    for (let i = 0; i < 3; i += 1) {
      // One block: the boot config is shorter than 512 bytes.
      p.send(request(1, `${NODE_UUID}/config`), fx.port);
      const data = await p.next();
      expect(data).toMatchObject({ op: 3, block: 1 });
      p.send(ack(1), data!.port);
      await until(() => fx.server.stats().completed === i + 1);
    }
    expect(fx.server.stats()).toMatchObject({ completed: 3, overLimit: 0, active: 0 });
  });

  it('logs each refusal at debug and warns once for a burst, naming the options', async () => {
    const { logger, lines } = capturingLogger();
    const fx = await server({ engine, maxTransfersPerClient: 1, timeoutMs: 20_000, logger });
    await hold(fx, await peer());
    const flood = await Promise.all(Array.from({ length: 20 }, () => peer()));
    for (const p of flood) p.send(request(1, 'small.bin'), fx.port);
    await Promise.all(flood.map((p) => p.next()));
    const refusals = lines.filter((l) => l.msg.startsWith('TFTP request refused: transfer limit reached'));
    const warnings = lines.filter((l) => l.level === 40 && /transfer limit/.test(l.msg));
    expect(refusals).toHaveLength(20);
    expect(refusals.every((l) => l.level === 20)).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/tftp_max_transfers, tftp_max_transfers_per_client/);
    // Closing sums up the rest of the burst in one more warning.
    await fx.server.close();
    const summary = lines.filter((l) => l.level === 40 && /refused 19 more requests/.test(l.msg));
    expect(summary).toHaveLength(1);
  });
});
