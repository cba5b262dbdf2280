/**
 * The TFTP limits of issue #14 item 5 through the real process: `ironring up` with the [pxe]
 * options set from the environment, spoken to with raw UDP sockets. Requests asking for a 255 s
 * timeout cannot hold more transfers than the per-client cap, the rest get "server busy" from the
 * listening port, a warning names the options, garbage gets no answer, and abandoned transfers free
 * their places within tftp_max_idle.
 */
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../../helpers/cli.js';
import type { CliProcess } from '../../helpers/cli.js';
import { decode, request } from './helpers.js';

let dir: string;
let proc: CliProcess;
let port: number;
const sockets: Socket[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-tftp-up-'));
  proc = startCli(
    ['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'],
    { cwd: dir, env: { IRONRING_PXE_TFTP_MAX_TRANSFERS_PER_CLIENT: '2', IRONRING_PXE_TFTP_MAX_IDLE: '3', IRONRING_LOG_LEVEL: 'info' } },
  );
  await proc.waitForOutput(/API: +http/, 30_000);
  port = Number(/boot: +TFTP 127\.0\.0\.1:(\d+)/.exec(proc.stdout())![1]);
  writeFileSync(path.join(dir, 'tftpboot', 'big.bin'), Buffer.alloc(200_000, 7));
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.close();
  if (proc && proc.child.exitCode === null) {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function peer(): Promise<{ send(data: Buffer): void; next(ms?: number): Promise<(ReturnType<typeof decode> & { port: number }) | null> }> {
  const socket = createSocket('udp4');
  sockets.push(socket);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const queue: Array<ReturnType<typeof decode> & { port: number }> = [];
  let wake: (() => void) | null = null;
  socket.on('message', (msg: Buffer, rinfo) => {
    queue.push({ ...decode(msg), port: rinfo.port });
    wake?.();
  });
  return {
    send: (data) => socket.send(data, port, '127.0.0.1'),
    async next(ms = 5000) {
      if (queue.length === 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        wake = null;
      }
      return queue.shift() ?? null;
    },
  };
}

describe('TFTP limits in ironring up (issue #14 item 5)', () => {
  it('holds at most tftp_max_transfers_per_client transfers for one client, refuses the rest, ignores garbage, and frees abandoned places within tftp_max_idle', async () => {
    const clients = await Promise.all(Array.from({ length: 5 }, () => peer()));
    for (const c of clients) c.send(request(1, 'big.bin', 'octet', { timeout: '255', blksize: '1024' }));
    const first = await Promise.all(clients.map((c) => c.next()));
    const started = first.filter((p) => p?.op === 6);
    const busy = first.filter((p) => p?.op === 5);
    expect(started).toHaveLength(2);
    // 255 s per packet is not acknowledged: the transfer runs with the server's own timeout.
    for (const s of started) expect(s!.options).toEqual({ blksize: '1024' });
    expect(busy).toHaveLength(3);
    for (const b of busy) expect(b).toMatchObject({ code: 0, port });
    expect(busy[0]!.message).toMatch(/server busy/);
    expect(proc.stderr()).toMatch(/TFTP transfer limit reached: refusing requests \(\[pxe\] tftp_max_transfers, tftp_max_transfers_per_client\)/);

    const noise = await peer();
    for (const data of [Buffer.from([0, 4, 0, 1]), Buffer.from([0, 9]), Buffer.from('GET / HTTP/1.0\r\n\r\n'), Buffer.from([0, 5, 0, 0, 0])]) noise.send(data);

    // The two held transfers are never acknowledged: within tftp_max_idle (3 s) they are dropped,
    // and the client gets a request served again.
    const again = await peer();
    let served = false;
    const deadline = Date.now() + 15_000;
    while (!served && Date.now() < deadline) {
      again.send(request(1, 'big.bin', 'octet', { blksize: '1024' }));
      const reply = await again.next(1000);
      if (reply?.op === 6) served = true;
      else await new Promise((r) => setTimeout(r, 500));
    }
    expect(served).toBe(true);
    expect(await noise.next(200)).toBeNull();
  }, 60_000);
});
