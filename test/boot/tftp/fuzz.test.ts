/**
 * Fuzzing the TFTP server (issue #14, done-when): random datagrams and near-valid requests with
 * random options, from several client addresses and ports, at the listening port and at the transfer
 * ports that answer, for a bounded time per engine. Afterwards: no crash, the counters add up, every
 * transfer has ended (within the idle bound), no descriptor or thread is left behind, garbage got no
 * answer, and a valid request is still served intact.
 *
 * The seed is printed; `FUZZ_SEED=<n>` replays a run (and `FUZZ_MS` changes the time per engine).
 */
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { readdirSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fetchRaw, NODE_UUID, MAC_LINK, startFixture, TFTP_ENGINES, until } from './helpers.js';

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const TIME_MS = Number(process.env.FUZZ_MS ?? 5000);
// Short waits: a transfer whose client wanders off ends within about a second.
const SERVER = { timeoutMs: 150, retries: 2, maxIdleMs: 1000, maxTransfersPerClient: 3, maxTransfers: 10 } as const;
const CLIENT_HOSTS = ['127.0.0.1', '127.0.0.2', '127.0.0.3'] as const;

const openDescriptors = (): number => readdirSync('/proc/self/fd').length;
const threads = (): number => readdirSync('/proc/self/task').length;

const filename = fc.oneof(
  fc.constantFrom('small.bin', 'empty.bin', 'exact.bin', 'text.txt', MAC_LINK, `${NODE_UUID}/config`, 'no-such-file', '../outside/secret', 'escape', '/etc/passwd', 'outdir/secret', ''),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
);
const mode = fc.oneof(fc.constantFrom('octet', 'netascii', 'OCTET', 'mail', 'bogus', ''), fc.string({ maxLength: 10 }));
const optionName = fc.oneof(fc.constantFrom('blksize', 'timeout', 'tsize', 'windowsize', 'BLKSIZE', 'multicast', ''), fc.string({ maxLength: 12 }));
const optionValue = fc.oneof(
  fc.constantFrom('0', '1', '7', '8', '512', '1468', '65464', '65465', '255', '256', '-1', '1e3', '99999999999', 'abc', ''),
  fc.nat({ max: 70_000 }).map(String),
  fc.string({ maxLength: 12 }),
);

/** A request that is nearly right: real or odd opcode, filename, mode and options, maybe truncated. */
const wildRequest: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.constantFrom(1, 1, 1, 2, 3, 4, 5, 6, 7, 0, 0x0101),
    filename,
    mode,
    fc.array(fc.tuple(optionName, optionValue), { maxLength: 5 }),
    fc.nat({ max: 600 }),
    fc.boolean(),
  )
  .map(([op, file, m, options, cut, truncate]) => {
    const parts = [file, m, ...options.flat()].map((p) => Buffer.from(`${p}\0`, 'latin1'));
    const whole = Buffer.concat([Buffer.from([op >> 8, op & 0xff]), ...parts]);
    return truncate ? whole.subarray(0, Math.min(whole.length, cut)) : whole;
  });

/** A read request a server should serve (or refuse cleanly): real files, real modes, plausible options. */
const plausibleRequest: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.constantFrom('small.bin', 'empty.bin', 'exact.bin', 'wrap.bin', 'text.txt', MAC_LINK, `${NODE_UUID}/config`, 'no-such-file', 'escape'),
    fc.constantFrom('octet', 'octet', 'netascii'),
    fc.subarray(['blksize', 'timeout', 'tsize', 'windowsize']),
    fc.array(fc.constantFrom('8', '512', '1024', '1468', '65464', '1', '2', '30', '255', '0', '4', '16'), { minLength: 4, maxLength: 4 }),
  )
  .map(([file, m, names, values]) => Buffer.concat([Buffer.from([0, 1]), ...[file, m, ...names.flatMap((n, i) => [n, values[i]!])].map((p) => Buffer.from(`${p}\0`, 'latin1'))]));

const nearRequest: fc.Arbitrary<Buffer> = fc.oneof({ arbitrary: plausibleRequest, weight: 2 }, { arbitrary: wildRequest, weight: 3 });

/** What a client may send on a transfer it takes part in: ACKs of any block, ERRORs, repeats, noise. */
const transferDatagram: fc.Arbitrary<Buffer> = fc.oneof(
  fc.nat({ max: 0xffff }).map((b) => Buffer.from([0, 4, b >> 8, b & 0xff])),
  fc.constantFrom(0, 1, 2, 3).map((b) => Buffer.from([0, 4, 0, b])),
  fc.string({ maxLength: 30 }).map((m) => Buffer.concat([Buffer.from([0, 5, 0, 0]), Buffer.from(`${m}\0`, 'latin1')])),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
  nearRequest,
);

/** Pure garbage for the listening port: never a read or write request (first bytes are not 0 1 / 0 2). */
const garbage: fc.Arbitrary<Buffer> = fc
  .uint8Array({ maxLength: 700 })
  .map((b) => Buffer.from(b))
  .filter((b) => !(b.length >= 2 && b[0] === 0 && (b[1] === 1 || b[1] === 2)));

type Action =
  | { to: 'listener'; client: number; data: Buffer }
  | { to: 'transfer'; client: number; data: Buffer }
  | { to: 'garbage'; data: Buffer };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ to: fc.constant('listener' as const), client: fc.nat({ max: 11 }), data: nearRequest }),
  fc.record({ to: fc.constant('transfer' as const), client: fc.nat({ max: 11 }), data: transferDatagram }),
  fc.record({ to: fc.constant('garbage' as const), data: garbage }),
);

interface Client {
  socket: Socket;
  /** The last transfer port (server TID) that talked to this client. */
  tid: number | null;
}

async function bound(host: string): Promise<Socket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  return socket;
}

describe.each(TFTP_ENGINES)('%s engine: fuzzed datagrams', (engine) => {
  it(`survives ${TIME_MS} ms of random and near-valid datagrams, then ends every transfer and still serves (seed ${SEED})`, async () => {
    console.log(`TFTP fuzz (${engine}): seed ${SEED}; replay with FUZZ_SEED=${SEED}`);
    const fx = await startFixture({ engine, ...SERVER });
    const clients: Client[] = [];
    let garbagePeer: Socket | undefined;
    try {
      // Warm up (libuv's thread pool starts on the first file access), then take the baseline.
      expect((await fetchRaw(fx.port, 'small.bin')).data.equals(fx.files['small.bin']!)).toBe(true);
      await until(() => fx.server.stats().active === 0);
      const fdsBefore = openDescriptors();
      const threadsBefore = threads();

      for (let i = 0; i < 12; i += 1) {
        const client: Client = { socket: await bound(CLIENT_HOSTS[i % CLIENT_HOSTS.length]!), tid: null };
        client.socket.on('message', (_msg, rinfo) => {
          if (rinfo.port !== fx.port) client.tid = rinfo.port;
        });
        clients.push(client);
      }
      garbagePeer = await bound('127.0.0.4');
      const answersToGarbage: Buffer[] = [];
      garbagePeer.on('message', (msg: Buffer) => answersToGarbage.push(msg));
      let garbageSent = 0;

      const property = fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 12 }), async (actions) => {
        for (const a of actions) {
          if (a.to === 'garbage') {
            garbagePeer!.send(a.data, fx.port, '127.0.0.1');
            garbageSent += 1;
            continue;
          }
          const client = clients[a.client]!;
          const port = a.to === 'transfer' && client.tid !== null ? client.tid : fx.port;
          client.socket.send(a.data, port, '127.0.0.1');
        }
        // Let the server take them in, then check it is consistent and within its limits.
        await new Promise((resolve) => setTimeout(resolve, 2));
        const s = fx.server.stats();
        expect(s.started).toBe(s.completed + s.failed + s.active);
        expect(s.active).toBeLessThanOrEqual(SERVER.maxTransfers);
      });
      const started = Date.now();
      await fc.assert(property, { seed: SEED, numRuns: 1_000_000, interruptAfterTimeLimit: TIME_MS, markInterruptAsFailure: false });

      const fuzzedMs = Date.now() - started;
      // Every transfer ends within the idle bound once its client falls silent.
      for (const c of clients) c.socket.close();
      clients.length = 0;
      await until(() => fx.server.stats().active === 0, SERVER.maxIdleMs * 3 + 2000);
      const after = fx.server.stats();
      expect(after.started).toBe(after.completed + after.failed);
      expect(after.started).toBeGreaterThan(1);
      console.log(`TFTP fuzz (${engine}): ${fuzzedMs} ms, ${JSON.stringify(after)}`);

      // Garbage was counted and never answered.
      expect(garbageSent).toBeGreaterThan(0);
      expect(after.ignored).toBeGreaterThanOrEqual(garbageSent);
      garbagePeer.close();
      garbagePeer = undefined;
      expect(answersToGarbage).toEqual([]);

      // Nothing left behind: descriptors and (native) threads back to where they were.
      await until(() => openDescriptors() <= fdsBefore && threads() <= threadsBefore, 5000).catch(() => undefined);
      expect(openDescriptors()).toBeLessThanOrEqual(fdsBefore);
      expect(threads()).toBeLessThanOrEqual(threadsBefore);

      // And it still serves, byte for byte.
      const res = await fetchRaw(fx.port, 'medium.bin', { blksize: '1468', windowsize: '4' });
      expect(res.error).toBeUndefined();
      expect(res.data.equals(fx.files['medium.bin']!)).toBe(true);
    } finally {
      for (const c of clients) c.socket.close();
      garbagePeer?.close();
      await fx.cleanup();
    }
  }, TIME_MS + 60_000);
});
