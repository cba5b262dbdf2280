import http from 'node:http';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { createNode } from '../../src/nodes/node-store.js';
import { SseHub } from '../../src/web/sse.js';
import type { EventHubOptions } from '../../src/web/sse.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const logger = createLogger({ level: 'silent', pretty: false });

/** An open event stream: everything received so far, and a wait for a pattern in it. */
interface Stream {
  status: number;
  text(): string;
  waitFor(pattern: RegExp, ms?: number): Promise<void>;
  abort(): void;
  ended: Promise<void>;
}

/**
 * Opens `/ui/events` with node:http on a connection of its own (no agent): fetch's pool opens a
 * spare connection after an abort, which the server's close() then waits out (headersTimeout).
 */
async function openStream(base: string): Promise<Stream> {
  let received = '';
  const waiters: Array<() => void> = [];
  let req!: http.ClientRequest;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    req = http.get(`${base}/ui/events`, { agent: false }, resolve);
    req.on('error', reject);
  });
  res.setEncoding('utf8');
  const ended = new Promise<void>((resolve) => {
    res.on('data', (chunk: string) => {
      received += chunk;
      for (const w of waiters.splice(0)) w();
    });
    res.on('close', () => resolve());
    res.on('error', () => resolve());
  });
  return {
    status: res.statusCode ?? 0,
    text: () => received,
    async waitFor(pattern, ms = 5000) {
      const deadline = Date.now() + ms;
      while (!pattern.test(received)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} in the stream within ${ms} ms; got:\n${received}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
    abort: () => req.destroy(),
    ended,
  };
}

describe.each(await testEngines())('dashboard events on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function serve(options: Partial<EventHubOptions> = {}): Promise<{ base: string; hub: SseHub }> {
    app = Fastify();
    const hub = new SseHub({ store: db.store, heartbeatTimeout: 60, logger, ...options });
    hub.register(app);
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    return { base, hub };
  }

  it('streams nodes and node-<uuid> within about a second of a change made by this process', async () => {
    const { base } = await serve();
    const stream = await openStream(base);
    expect(stream.status).toBe(200);
    await stream.waitFor(/: connected/);
    // The hub's first check takes its baseline; a change after it is news.
    await new Promise((r) => setTimeout(r, 300));
    const node = await createNode(db.store, { driver: 'fake-hardware', name: 'n1', provision_state: 'enroll' });
    await stream.waitFor(new RegExp(`event: node-${node.uuid}\\n`), 3000);
    await stream.waitFor(/event: nodes\n/, 3000);
    stream.abort();
  });

  it('sends conductors and ring when a conductor joins', async () => {
    const { base } = await serve();
    const stream = await openStream(base);
    await new Promise((r) => setTimeout(r, 300));
    await registerConductor(db.store, { hostname: 'c1', group: '', drivers: ['fake-hardware'], rpcUrl: null }, 60);
    await stream.waitFor(/event: ring\n/, 3000);
    await stream.waitFor(/event: conductors\n/, 3000);
    stream.abort();
  });

  it('sends what a page module publishes or watches', async () => {
    const { base, hub } = await serve();
    let value = 'a';
    hub.watch('timeline', () => Promise.resolve(value));
    const stream = await openStream(base);
    await new Promise((r) => setTimeout(r, 300));
    hub.publish('custom-event', 'line one\nline two');
    await stream.waitFor(/event: custom-event\ndata: line one line two\n\n/);
    value = 'b';
    await stream.waitFor(/event: timeline\n/, 3000);
    expect(() => hub.publish('bad\nname')).toThrow(/letters, digits/);
    stream.abort();
  });

  it('bounds the streams (503 beyond), sends a heartbeat comment, and ends the streams when the app closes', async () => {
    const { base, hub } = await serve({ maxStreams: 2, heartbeatMs: 100 });
    const a = await openStream(base);
    const b = await openStream(base);
    const c = await new Promise<http.IncomingMessage>((resolve) => http.get(`${base}/ui/events`, { agent: false }, resolve));
    expect(c.statusCode).toBe(503);
    expect(c.headers['retry-after']).toBe('10');
    c.resume();
    expect(hub.streams).toBe(2);
    await a.waitFor(/: ping\n\n/, 2000);
    const closing = app!.close();
    await Promise.all([a.ended, b.ended]);
    await closing;
    app = undefined;
    expect(hub.streams).toBe(0);
  });
});
