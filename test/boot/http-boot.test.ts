import { execFile } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListenError } from '../../src/common/errors.js';
import { parseRange, startHttpBootServer } from '../../src/boot/http-boot.js';
import type { HttpBootServer } from '../../src/boot/http-boot.js';
import { requirePeer } from '../helpers/peers.js';
import { MAC_A, UUID_A, randomBlob, sandbox } from './helpers.js';
import type { BootSandbox } from './helpers.js';

const run = promisify(execFile);
let s: BootSandbox;
let server: HttpBootServer;
const big = randomBlob(6 * 1024 * 1024 + 123);

interface CurlResult {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Runs real curl; headers from -D, body from -o. */
async function curl(path: string, ...args: string[]): Promise<CurlResult> {
  const out = join(s.dir, `curl-${Math.random().toString(16).slice(2)}`);
  const { stdout } = await run('curl', ['-s', '-S', '-D', '-', '-o', out, ...args, `${server.url}${path}`], { encoding: 'utf8' });
  const blocks = stdout.trim().split(/\r?\n\r?\n/);
  const lines = (blocks[blocks.length - 1] ?? '').split(/\r?\n/);
  const status = Number(lines[0]?.split(' ')[1]);
  const headers = Object.fromEntries(
    lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  const body = await readFile(out).catch(() => Buffer.alloc(0));
  return { status, headers, body };
}

beforeAll(async () => {
  s = await sandbox();
  const images = await s.images();
  await s.env({ defaultBootInterface: 'ipxe' }).prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: true }], images);
  await writeFile(join(s.httpRoot, 'big.img'), big);
  await writeFile(join(s.httpRoot, 'empty'), '');
  await mkdir(join(s.dir, 'outside'), { recursive: true });
  await writeFile(join(s.dir, 'outside', 'secret'), 'secret bytes');
  await symlink(join(s.dir, 'outside', 'secret'), join(s.httpRoot, 'escape-file'));
  await symlink(join(s.dir, 'outside'), join(s.httpRoot, 'escape-dir'));
  await symlink('/etc/passwd', join(s.httpRoot, 'passwd'));
  server = await startHttpBootServer({ root: s.httpRoot, address: '127.0.0.1:0' });
});
afterAll(async () => {
  await server.close();
  await s.dispose();
});

describe.skipIf(!requirePeer('curl', 'curl'))('HTTP boot server (real curl)', () => {
  it('serves boot.ipxe and a per-MAC config through its relative symlink', async () => {
    const bootIpxe = await curl('/boot.ipxe');
    expect(bootIpxe.status).toBe(200);
    expect(bootIpxe.body.toString()).toMatch(/^#!ipxe\n/);
    const config = await curl('/pxelinux.cfg/52-54-00-12-34-56');
    expect(config.status).toBe(200);
    expect(config.body.toString()).toContain(`kernel http://10.0.0.5:8080/${UUID_A}/deploy_kernel`);
    expect(config.headers['content-length']).toBe(String(config.body.length));
  });

  it('serves a multi-megabyte image byte for byte with the right Content-Length', async () => {
    const res = await curl('/big.img');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe(String(big.length));
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.body.equals(big)).toBe(true);
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const res = await curl('/big.img', '-I');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe(String(big.length));
    // With -I curl saves the headers where the body would go: nothing else arrived.
    expect(res.body.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n$/);
    expect(res.body.length).toBeLessThan(512);
  });

  it('serves single byte ranges with 206 and Content-Range', async () => {
    const first = await curl('/big.img', '-r', '0-99');
    expect(first.status).toBe(206);
    expect(first.headers['content-range']).toBe(`bytes 0-99/${big.length}`);
    expect(first.body.equals(big.subarray(0, 100))).toBe(true);

    const tail = await curl('/big.img', '-r', `${big.length - 10}-`);
    expect(tail.status).toBe(206);
    expect(tail.body.equals(big.subarray(big.length - 10))).toBe(true);

    const suffix = await curl('/big.img', '-r', '-1000');
    expect(suffix.headers['content-range']).toBe(`bytes ${big.length - 1000}-${big.length - 1}/${big.length}`);
    expect(suffix.body.equals(big.subarray(big.length - 1000))).toBe(true);

    const past = await curl('/big.img', '-r', `1000-${big.length + 5000}`);
    expect(past.headers['content-length']).toBe(String(big.length - 1000));
  });

  it('answers an unsatisfiable range with 416 and the size', async () => {
    const res = await curl('/big.img', '-r', `${big.length}-`);
    expect(res.status).toBe(416);
    expect(res.headers['content-range']).toBe(`bytes */${big.length}`);
  });

  it('serves an empty file', async () => {
    const res = await curl('/empty');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('0');
  });

  it('refuses traversal and symlinks out of the root without leaking a byte', async () => {
    for (const [path, status] of [
      ['/../outside/secret', 403],
      ['/%2e%2e/outside/secret', 403],
      ['/pxelinux.cfg/..%2f..%2fetc/passwd', 403],
      ['/escape-file', 403],
      ['/escape-dir/secret', 403],
      ['/passwd', 403],
      ['/nothing-here', 404],
      ['/pxelinux.cfg', 403],
      ['/%zz', 400],
    ] as const) {
      const res = await curl(path, '--path-as-is');
      expect([path, res.status]).toEqual([path, status]);
      expect(res.body.toString()).not.toContain('secret bytes');
      expect(res.body.toString()).not.toContain('root:');
    }
  });

  it('allows only GET and HEAD', async () => {
    const res = await curl('/boot.ipxe', '-X', 'POST', '-d', 'x');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });
});

/** Polls until `check` holds: a response is counted when it ends, which curl need not wait for. */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.skipIf(!requirePeer('curl', 'curl'))('HTTP boot server counters (real curl)', () => {
  it('counts each answer by outcome and the file bytes sent, as they happen', async () => {
    // A server of its own, so the counts are this test's alone.
    const own = await startHttpBootServer({ root: s.httpRoot, address: '127.0.0.1:0' });
    const shared = server;
    server = own;
    try {
      expect(own.stats()).toEqual({ served: 0, notModified: 0, notFound: 0, refused: 0, failed: 0, bytesSent: 0, active: 0 });
      expect((await curl('/big.img')).body.length).toBe(big.length);
      expect((await curl('/big.img', '-r', '100-199')).status).toBe(206);
      expect((await curl('/big.img', '-I')).status).toBe(200); // HEAD: served, no body bytes
      await until(() => own.stats().served === 3);
      expect(own.stats()).toMatchObject({ served: 3, notFound: 0, refused: 0, failed: 0, bytesSent: big.length + 100 });

      expect((await curl('/nothing-here')).status).toBe(404);
      expect((await curl('/../outside/secret', '--path-as-is')).status).toBe(403);
      expect((await curl('/boot.ipxe', '-X', 'POST', '-d', 'x')).status).toBe(405);
      expect((await curl('/big.img', '-r', `${big.length}-`)).status).toBe(416);
      await until(() => own.stats().refused === 3);
      expect(own.stats()).toEqual({ served: 3, notModified: 0, notFound: 1, refused: 3, failed: 0, bytesSent: big.length + 100, active: 0 });

      // A client that hangs up after the first chunk of a 6 MiB download: failed, with what was written.
      await new Promise<void>((resolve, reject) => {
        const req = httpGet(`${own.url}/big.img`, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      });
      await until(() => own.stats().failed === 1);
      const after = own.stats();
      expect(after).toMatchObject({ served: 3, notFound: 1, refused: 3, failed: 1, active: 0 });
      expect(after.bytesSent).toBeGreaterThan(big.length + 100);
      expect(after.bytesSent).toBeLessThan(2 * big.length + 100);
    } finally {
      server = shared;
      await own.close();
    }
  });
});

describe('HTTP boot server lifecycle', () => {
  it('reports a taken port as a ListenError naming the option to change', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const err = await startHttpBootServer({ root: s.httpRoot, address: `127.0.0.1:${port}` }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ListenError);
      expect((err as Error).message).toBe(
        `cannot listen for the HTTP boot server on 127.0.0.1:${port}: address already in use (change it with --http-address or [deploy] http_address)`,
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('closes idempotently', async () => {
    const other = await startHttpBootServer({ root: s.httpRoot, address: '127.0.0.1:0' });
    await Promise.all([other.close(), other.close()]);
    await other.close();
  });
});

describe('parseRange', () => {
  it('parses the forms iPXE and curl send and ignores what it cannot serve', () => {
    expect(parseRange('bytes=0-0', 10)).toEqual({ start: 0, end: 0 });
    expect(parseRange('bytes=5-', 10)).toEqual({ start: 5, end: 9 });
    expect(parseRange('bytes=-3', 10)).toEqual({ start: 7, end: 9 });
    expect(parseRange('bytes=-30', 10)).toEqual({ start: 0, end: 9 });
    expect(parseRange('bytes=10-', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=-0', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-1,3-4', 10)).toBe('none');
    expect(parseRange('items=0-1', 10)).toBe('none');
    expect(parseRange('bytes=5-2', 10)).toBe('none');
    expect(parseRange(undefined, 10)).toBe('none');
  });
});
