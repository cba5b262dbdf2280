/**
 * Busy polling: the descriptor behind a dgram socket, the bounded spinning read, and a server that
 * answers a real client's ACKs by spinning only when asked to.
 */
import { closeSync, openSync, rmSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKOFF_MAX, CYCLE_BLOCKS, MEASURE_BLOCKS, NOTHING_YET, READ_FAILED, SpinPolicy, socketFd, spinRead } from '../../../src/boot/tftp/busy-poll.js';
import { NODE_UUID, runClient, startFixture, until } from './helpers.js';
import type { Fixture } from './helpers.js';
import { requirePeer } from '../../helpers/peers.js';

const CURL = requirePeer('curl', 'curl');

const open: (Socket | Fixture)[] = [];
afterEach(async () => {
  for (const item of open.splice(0)) {
    if ('cleanup' in item) await item.cleanup();
    else item.close();
  }
});

function bound(type: 'udp4' | 'udp6', host: string): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = createSocket(type);
    open.push(socket);
    socket.bind(0, host, () => resolve(socket));
  });
}

describe('socketFd', () => {
  it.each([
    ['udp4', '127.0.0.1'],
    ['udp6', '::1'],
  ] as const)('finds the descriptor of a bound %s socket on this Node', async (type, host) => {
    // If a Node upgrade hides it, this fails rather than busy polling silently switching off.
    const fd = socketFd(await bound(type, host));
    expect(fd).not.toBeNull();
    expect(fd).toBeGreaterThan(2);
  });

  it('gives distinct descriptors to distinct sockets', async () => {
    const [a, b] = [await bound('udp4', '127.0.0.1'), await bound('udp4', '127.0.0.1')];
    expect(socketFd(a)).not.toBe(socketFd(b));
  });
});

describe('spinRead', () => {
  it('gives up after about the budget when nothing arrives', async () => {
    const fd = socketFd(await bound('udp4', '127.0.0.1'))!;
    const t0 = performance.now();
    expect(spinRead(fd, Buffer.alloc(64), 2000)).toBe(NOTHING_YET);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(2);
  });

  it('returns a queued datagram, which the event loop then never sees', async () => {
    const receiver = await bound('udp4', '127.0.0.1');
    const sender = await bound('udp4', '127.0.0.1');
    let delivered = 0;
    receiver.on('message', () => (delivered += 1));
    await new Promise<void>((resolve) => sender.send(Buffer.from([0, 4, 0, 7]), receiver.address().port, '127.0.0.1', () => resolve()));
    const buf = Buffer.alloc(64);
    const n = spinRead(socketFd(receiver)!, buf, 200_000);
    expect(n).toBe(4);
    expect([...buf.subarray(0, n)]).toEqual([0, 4, 0, 7]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(delivered).toBe(0);
  });

  it('reports an error other than "nothing yet" as a failed read', () => {
    const file = path.join(os.tmpdir(), `ironring-busy-${process.pid}`);
    const fd = openSync(file, 'w');
    try {
      expect(spinRead(fd, Buffer.alloc(8), 1000)).toBe(READ_FAILED);
    } finally {
      closeSync(fd);
      rmSync(file, { force: true });
    }
  });
});

describe('SpinPolicy', () => {
  /** Acknowledges `blocks` one at a time, each costing `msPerBlock`; returns the clock. */
  function run(policy: SpinPolicy, blocks: number, msPerBlock: number, clock: number): number {
    for (let i = 0; i < blocks; i += 1) {
      clock += msPerBlock;
      policy.acknowledged(1, clock);
    }
    return clock;
  }

  it('measures spinning, then sleeping, then keeps the faster for the rest of the cycle', () => {
    const fast = new SpinPolicy(0);
    expect(fast.spinning).toBe(true);
    let t = run(fast, MEASURE_BLOCKS, 0.03, 0);
    expect(fast.spinning).toBe(false);
    t = run(fast, MEASURE_BLOCKS, 0.08, t);
    expect(fast.spinning).toBe(true);

    const slow = new SpinPolicy(0);
    t = run(slow, MEASURE_BLOCKS, 0.03, 0);
    run(slow, MEASURE_BLOCKS, 0.015, t);
    expect(slow.spinning).toBe(false);
    expect(slow.takeTurn()).toBe(false);
  });

  it('measures again every cycle, so a machine that becomes idle gets spinning back', () => {
    const policy = new SpinPolicy(0);
    let t = run(policy, MEASURE_BLOCKS, 0.03, 0);
    t = run(policy, MEASURE_BLOCKS, 0.015, t);
    expect(policy.spinning).toBe(false);
    t = run(policy, CYCLE_BLOCKS - 2 * MEASURE_BLOCKS, 0.015, t);
    expect(policy.spinning).toBe(true); // a new cycle starts by measuring spinning
    t = run(policy, MEASURE_BLOCKS, 0.03, t);
    run(policy, MEASURE_BLOCKS, 0.08, t);
    expect(policy.spinning).toBe(true);
  });

  it('counts windows by the blocks they acknowledge', () => {
    const policy = new SpinPolicy(0);
    policy.acknowledged(MEASURE_BLOCKS, 1);
    expect(policy.spinning).toBe(false);
    policy.acknowledged(MEASURE_BLOCKS, 10); // sleeping cost 9 ms against spinning's 1 ms
    expect(policy.spinning).toBe(true);
  });

  it('backs off after late ACKs, doubling up to the maximum, and forgets on a hit', () => {
    const policy = new SpinPolicy(0);
    const skipped = (): number => {
      let n = 0;
      while (!policy.takeTurn()) n += 1;
      return n;
    };
    policy.miss();
    expect(skipped()).toBe(1);
    policy.miss();
    expect(skipped()).toBe(2);
    policy.miss();
    expect(skipped()).toBe(4);
    for (let i = 0; i < 20; i += 1) policy.miss();
    expect(skipped()).toBe(BACKOFF_MAX);
    policy.hit();
    policy.miss();
    expect(skipped()).toBe(1);
  });
});

describe.skipIf(!CURL)('a server busy polling for a real client', () => {
  const kernel = `${NODE_UUID}/deploy_kernel`;
  const fetch = async (fx: Fixture): Promise<void> => {
    const res = await runClient('curl', ['-sS', '--fail', '--tftp-blksize', '1468', `tftp://127.0.0.1:${fx.port}/${kernel}`]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout.equals(fx.files[kernel]!)).toBe(true);
    // curl exits once it has sent its last ACK; the server counts the transfer when that ACK arrives.
    await until(() => fx.server.stats().active === 0);
  };

  it('reads ACKs by spinning when a transfer runs alone, and the file arrives intact', async () => {
    // The largest budget, and up to ten transfers one after the other: on a loaded machine the
    // client may be descheduled past the budget for every ACK of one transfer, never of all ten.
    // The assertion is that spinning catches ACKs at all; how much it gains is bench/tftp.ts's.
    const fx = await startFixture({ busyPollUs: 10_000 });
    open.push(fx);
    const blocks = Math.ceil((fx.files[kernel]!.length + 1) / 1468);
    let transfers = 0;
    let before = 0;
    do {
      await fetch(fx);
      transfers += 1;
      const polled = fx.server.stats().busyPolled;
      expect(polled - before).toBeLessThanOrEqual(blocks + 1);
      before = polled;
    } while (before === 0 && transfers < 10);
    expect(fx.server.stats().completed).toBe(transfers);
    expect(before).toBeGreaterThan(0);
  });

  it('never spins with a zero budget', async () => {
    const fx = await startFixture({ busyPollUs: 0 });
    open.push(fx);
    await fetch(fx);
    expect(fx.server.stats()).toMatchObject({ completed: 1, busyPolled: 0 });
  });
});
