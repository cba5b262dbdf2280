/**
 * The raw plain-HTTP reader the image writer receives bodies with (src/agent/disk/raw-http.ts),
 * against a TCP server that writes its responses by hand, in pieces: a head split across reads,
 * body bytes that arrive with the head, more bytes than Content-Length, an early close, a stall
 * while every block is taken, malformed and oversized heads, redirects and chunked bodies (left to
 * node:http), header injection, abort.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { RawHttpGet } from '../../../src/agent/disk/raw-http.js';
import type { BodyTarget } from '../../../src/agent/disk/raw-http.js';

/** A server whose every connection gets `respond(socket)` once the request head has arrived. */
async function server(respond: (socket: net.Socket, request: string) => unknown): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((socket) => {
    sockets.add(socket);
    let request = '';
    socket.on('error', () => undefined);
    socket.on('data', (d) => {
      request += d.toString('latin1');
      if (request.includes('\r\n\r\n')) void respond(socket, request);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/image.raw`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
}

/**
 * The block sink's zero-copy interface over `blocks` blocks of `size` bytes; a full block is
 * "written" (its bytes kept) after `delayMs`, then free again.
 */
function target(size: number, blocks: number, delayMs = 2): BodyTarget & { bytes(): Buffer; stalls: number } {
  const views = Array.from({ length: blocks }, () => Buffer.alloc(size));
  const free = views.map((_, i) => i);
  let current = free.shift()!;
  let fill = 0;
  let waiting: Array<() => void> = [];
  const out: Buffer[] = [];
  const t = {
    stalls: 0,
    region: () => (current < 0 ? null : views[current]!.subarray(fill)),
    commit(n: number): boolean {
      fill += n;
      if (fill < size) return true;
      const slot = current;
      out.push(Buffer.from(views[slot]!));
      current = -1;
      fill = 0;
      setTimeout(() => {
        free.push(slot);
        const w = waiting;
        waiting = [];
        for (const f of w) f();
      }, delayMs);
      if (free.length === 0) return false;
      current = free.shift()!;
      return true;
    },
    async writable(): Promise<void> {
      if (current >= 0) return;
      t.stalls++;
      while (free.length === 0) await new Promise<void>((r) => waiting.push(r));
      current = free.shift()!;
    },
    bytes: () => Buffer.concat([...out, current >= 0 ? views[current]!.subarray(0, fill) : Buffer.alloc(0)]),
  };
  return t;
}

let srv: Awaited<ReturnType<typeof server>> | null = null;
afterEach(async () => {
  await srv?.close();
  srv = null;
});

const opts = { stallMs: 5_000 };

describe('RawHttpGet', () => {
  it('parses a head split across reads, keeps the body bytes that came with it, and receives the rest in pieces into the blocks', async () => {
    const body = randomBytes(100_000);
    let request = '';
    srv = await server(async (socket, req) => {
      request = req;
      const head = `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nETag: "v1"\r\nX-Repeated: a\r\nx-repeated: b\r\n\r\n`;
      socket.write(head.slice(0, 10));
      await sleep(20);
      socket.write(Buffer.concat([Buffer.from(head.slice(10), 'latin1'), body.subarray(0, 700)]));
      for (let at = 700; at < body.length; at += 7_001) {
        await sleep(1);
        socket.write(body.subarray(at, at + 7_001));
      }
    });
    const get = await RawHttpGet.open(new URL(srv.url), { Range: 'bytes=0-', 'user-agent': 'ironring-agent' }, opts);
    expect(request).toMatch(/^GET \/image\.raw HTTP\/1\.1\r\nHost: 127\.0\.0\.1:\d+\r\nConnection: close\r\nAccept-Encoding: identity\r\nRange: bytes=0-\r\nuser-agent: ironring-agent\r\n\r\n$/);
    expect(get).toMatchObject({ status: 200, statusMessage: 'OK', length: body.length, usable: true });
    expect(get.headers.etag).toBe('"v1"');
    expect(get.headers['x-repeated']).toBe('a, b');
    // Blocks of 3000 bytes, two of them: the reader waits for the writer many times.
    const t = target(3000, 2);
    const pieces: number[] = [];
    const received = await get.receive(t, (view) => pieces.push(view.length));
    expect(received).toBe(body.length);
    expect(pieces.reduce((a, b) => a + b, 0)).toBe(body.length);
    expect(pieces[0]).toBe(700);
    expect(t.bytes().equals(body)).toBe(true);
    expect(t.stalls).toBeGreaterThan(0);
  });

  it('counts no byte past Content-Length, and reports a body cut short as a short count', async () => {
    const body = randomBytes(10_000);
    srv = await server(async (socket) => {
      // The bytes past the length come in a later read than the head, into a block.
      socket.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: 6000\r\n\r\n`), body.subarray(0, 100)]));
      await sleep(20);
      socket.end(body.subarray(100));
    });
    const get = await RawHttpGet.open(new URL(srv.url), {}, opts);
    const t = target(4096, 2);
    let seen = 0;
    expect(await get.receive(t, (view) => (seen += view.length))).toBe(6000);
    expect(seen).toBe(6000);
    expect(t.bytes().equals(body.subarray(0, 6000))).toBe(true);
    await srv.close();

    srv = await server(async (socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 50000\r\n\r\n`);
      await sleep(10);
      socket.end(body);
    });
    const short = await RawHttpGet.open(new URL(srv.url), {}, opts);
    const t2 = target(4096, 2);
    expect(await short.receive(t2, () => undefined)).toBe(10_000);
    expect(t2.bytes().equals(body)).toBe(true);
  });

  it('leaves redirects and bodies without a known length to node:http; answers errors as they are', async () => {
    const cases: Array<[string, Partial<RawHttpGet>]> = [
      ['HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n', { status: 302, usable: false }],
      ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', { status: 200, length: null, usable: false }],
      ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Encoding: gzip\r\n\r\nxxxxx', { status: 200, length: null, usable: false }],
      ['HTTP/1.0 200 OK\r\n\r\nno length', { status: 200, length: null, usable: false }],
      ['HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n', { status: 404, statusMessage: 'Not Found', usable: true }],
    ];
    for (const [response, expected] of cases) {
      srv = await server((socket) => socket.end(response));
      const get = await RawHttpGet.open(new URL(srv.url), {}, opts);
      expect(get).toMatchObject(expected);
      get.destroy();
      await srv.close();
    }
    srv = null;
  });

  it('refuses a malformed or oversized head, a header with a line break, and a URL that is not http', async () => {
    srv = await server((socket) => socket.end('SSH-2.0-OpenSSH_9.2\r\n\r\n'));
    await expect(RawHttpGet.open(new URL(srv.url), {}, opts)).rejects.toThrow('not an HTTP/1.x response: "SSH-2.0-OpenSSH_9.2"');
    await srv.close();
    srv = await server((socket) => socket.write(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(70_000)}`));
    await expect(RawHttpGet.open(new URL(srv.url), {}, opts)).rejects.toThrow('the response head is larger than 65536 bytes');
    await srv.close();
    let connections = 0;
    srv = await server(() => {
      connections++;
    });
    await expect(RawHttpGet.open(new URL(srv.url), { 'if-range': '"v1"\r\nX-Injected: 1' }, opts)).rejects.toThrow('request header "if-range": not a valid header');
    await expect(RawHttpGet.open(new URL('https://127.0.0.1/x'), {}, opts)).rejects.toThrow('https: is not plain http');
    expect(connections).toBe(0);
    srv = await server((socket) => socket.end('HTTP/1.1 200 OK\r\n'));
    await expect(RawHttpGet.open(new URL(srv.url), {}, opts)).rejects.toThrow('the connection closed before the response head');
  });

  it('stops on a stall and on abort, with the reason', async () => {
    srv = await server((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc'));
    const stalled = await RawHttpGet.open(new URL(srv.url), {}, { stallMs: 100 });
    await expect(stalled.receive(target(4096, 2), () => undefined)).rejects.toThrow('no data for 0.1 s');

    const controller = new AbortController();
    const get = await RawHttpGet.open(new URL(srv.url), {}, { stallMs: 5_000, signal: controller.signal });
    const receiving = get.receive(target(4096, 2), () => undefined);
    setTimeout(() => controller.abort(new Error('deploy aborted')), 20);
    await expect(receiving).rejects.toThrow('deploy aborted');
  });

  it('stops when the consumer throws on a piece, without counting it', async () => {
    const body = randomBytes(20_000);
    srv = await server((socket) => socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body])));
    const get = await RawHttpGet.open(new URL(srv.url), {}, opts);
    let seen = 0;
    const t = target(100_000, 2);
    await expect(
      get.receive(t, (view) => {
        if (seen + view.length > 10_000) throw new Error('device too small');
        seen += view.length;
      }),
    ).rejects.toThrow('device too small');
    expect(t.bytes().length).toBe(seen);
  });
});
