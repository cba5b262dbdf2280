import { request } from 'node:http';
import net from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { listenFastify } from '../../src/common/listen.js';

const connect = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });

/** `promise`, or a failure naming `what` once `ms` have passed. */
const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref())]);

const ended = (socket: net.Socket) => new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));

describe('listenFastify: closing', () => {
  it('ends a connection that never sent a request and an idle keep-alive one at once, and lets a request in flight finish', async () => {
    const app = Fastify();
    let release: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => (release = resolve));
    app.get('/slow', async () => {
      await slow;
      return { done: true };
    });
    app.get('/fast', async () => ({ ok: true }));
    const base = await listenFastify(app, '127.0.0.1:0', 'test server', '--test-address');
    const port = Number(new URL(base).port);

    // A spare connection, as browsers open ahead of use: connected, nothing sent.
    const spare = await connect(port);
    // A keep-alive connection that served one request and now waits.
    const idle = await connect(port);
    idle.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => idle.once('data', resolve));
    // A request in flight when the close begins.
    const inFlight = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request(`${base}/slow`, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
        .on('error', reject)
        .end();
    });
    await new Promise((resolve) => setTimeout(resolve, 100));

    const closed = app.close();
    await within(Promise.all([ended(spare), ended(idle)]), 2000, 'the spare and the idle connection ended');
    release();
    expect(await inFlight).toEqual({ status: 200, body: JSON.stringify({ done: true }) });
    await within(closed, 2000, 'the close finished once the request in flight was answered');
    spare.destroy();
    idle.destroy();
  });
});
