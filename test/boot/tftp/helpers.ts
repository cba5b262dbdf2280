/** Shared fixtures for the TFTP tests: a root with known files, real clients, a raw UDP peer. */
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTftpServer } from '../../../src/boot/tftp/index.js';
import type { TftpServer, TftpServerOptions } from '../../../src/boot/tftp/index.js';

/** Both transfer engines run the protocol and client suites. */
export const TFTP_ENGINES = ['native', 'js'] as const;

export const NODE_UUID = '1be26c0b-03f2-4d2e-ae87-c02d7bcb9b3c';
export const MAC_LINK = 'pxelinux.cfg/01-aa-bb-cc-dd-ee-ff';
export const CONFIG = 'default deploy\nlabel deploy\n  kernel deploy_kernel\n  append initrd=deploy_ramdisk\n';
/** A marker that must never appear in anything the server sends. */
export const SECRET = 'ironring-secret-outside-root\n';

/** Deterministic pseudo-random bytes (so a failure is reproducible and comparisons are exact). */
export function bytes(size: number, seed = 1): Buffer {
  const buf = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf[i] = x & 0xff;
  }
  return buf;
}

export interface Fixture {
  dir: string;
  root: string;
  /** Files in the root by name, with their content. */
  files: Record<string, Buffer>;
  server: TftpServer;
  port: number;
  cleanup(): Promise<void>;
}

/**
 * A temp dir holding `root/` (the TFTP root: a node's config behind a per-MAC symlink, a
 * multi-megabyte kernel, small files) and, beside it, `outside/secret` with links to it from
 * inside the root.
 */
export async function startFixture(options: Partial<TftpServerOptions> = {}): Promise<Fixture> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ironring-tftp-'));
  const root = path.join(dir, 'root');
  const files: Record<string, Buffer> = {
    [`${NODE_UUID}/config`]: Buffer.from(CONFIG),
    [`${NODE_UUID}/deploy_kernel`]: bytes(5 * 1024 * 1024 + 123, 7),
    'small.bin': bytes(100_000, 3),
    'medium.bin': bytes(400_000, 4),
    'wrap.bin': bytes(65536 * 8 + 5, 9),
    'exact.bin': bytes(512 * 4, 5),
    'empty.bin': Buffer.alloc(0),
    'etc/passwd': Buffer.from('inside-the-root\n'),
    'text.txt': Buffer.from('line one\nline two\r\nbare\rcarriage\n'),
  };
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), content);
  }
  mkdirSync(path.join(root, 'pxelinux.cfg'));
  symlinkSync(`../${NODE_UUID}/config`, path.join(root, MAC_LINK));
  files[MAC_LINK] = files[`${NODE_UUID}/config`]!;
  mkdirSync(path.join(dir, 'outside'));
  writeFileSync(path.join(dir, 'outside', 'secret'), SECRET);
  symlinkSync('../outside/secret', path.join(root, 'escape'));
  symlinkSync(path.join(dir, 'outside'), path.join(root, 'outdir'));
  const server = await startTftpServer({ root, address: '127.0.0.1:0', ...options });
  return {
    dir,
    root,
    files,
    server,
    port: server.address().port,
    async cleanup() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RunResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** Runs a client to completion (killed after `timeoutMs`), collecting its output. */
export function runClient(cmd: string, args: string[], timeoutMs = 30_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
  });
}

/** A datagram received by the raw peer, with the port it came from (the server's TID). */
export interface Received {
  data: Buffer;
  port: number;
}

/** A raw UDP peer for speaking (and mis-speaking) TFTP by hand. */
export interface RawPeer {
  socket: Socket;
  send(data: Buffer, port: number): void;
  /** The next datagram (waiting up to `timeoutMs`), or null if none arrived. */
  next(timeoutMs?: number): Promise<Received | null>;
  close(): void;
}

export async function rawPeer(): Promise<RawPeer> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const queue: Received[] = [];
  let waiter: ((r: Received) => void) | null = null;
  socket.on('message', (data: Buffer, rinfo) => {
    const r = { data, port: rinfo.port };
    if (waiter) {
      const w = waiter;
      waiter = null;
      w(r);
    } else queue.push(r);
  });
  return {
    socket,
    send: (data, port) => socket.send(data, port, '127.0.0.1'),
    next(timeoutMs = 5000) {
      const queued = queue.shift();
      if (queued) return Promise.resolve(queued);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiter = null;
          resolve(null);
        }, timeoutMs);
        waiter = (r) => {
          clearTimeout(timer);
          resolve(r);
        };
      });
    },
    close: () => socket.close(),
  };
}

/** Builds a request packet: opcode, filename, mode, then option name/value pairs. */
export function request(opcode: 1 | 2, filename: string, mode = 'octet', options: Record<string, string> = {}): Buffer {
  const fields = [filename, mode, ...Object.entries(options).flat()];
  return Buffer.concat([Buffer.from([0, opcode]), ...fields.map((f) => Buffer.from(`${f}\0`, 'latin1'))]);
}

export function ack(block: number): Buffer {
  return Buffer.from([0, 4, (block >> 8) & 0xff, block & 0xff]);
}

/** Decodes what the server sent, for assertions. */
export function decode(packet: Buffer): { op: number; block?: number; code?: number; message?: string; payload?: Buffer; options?: Record<string, string> } {
  const op = packet.readUInt16BE(0);
  if (op === 3) return { op, block: packet.readUInt16BE(2), payload: packet.subarray(4) };
  if (op === 5) return { op, code: packet.readUInt16BE(2), message: packet.toString('latin1', 4, packet.length - 1) };
  if (op === 6) {
    const parts = packet.toString('latin1', 2, packet.length - 1).split('\0');
    const options: Record<string, string> = {};
    for (let i = 0; i + 1 < parts.length; i += 2) options[parts[i]!] = parts[i + 1]!;
    return { op, options };
  }
  return { op };
}

/** Polls `check` every 10 ms until it holds (a condition wait, never a timed assertion). */
export async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** What a hand-driven read request came back with. */
export interface RawFetch {
  /** The server's error, when it answered with one. */
  error?: { code: number; message: string };
  /** The bytes received (also when an error came after some data). */
  data: Buffer;
  /** Options the server acknowledged. */
  oack?: Record<string, string>;
}

/** A correct lock-step client over the raw peer, for checking what a request yields. */
export async function fetchRaw(port: number, filename: string, options: Record<string, string> = {}, mode = 'octet'): Promise<RawFetch> {
  const peer = await rawPeer();
  try {
    peer.send(request(1, filename, mode, options), port);
    const chunks: Buffer[] = [];
    let blksize = 512;
    let expected = 1;
    let oack: Record<string, string> | undefined;
    for (;;) {
      const got = await peer.next();
      if (!got) throw new Error(`no answer for ${filename}`);
      const p = decode(got.data);
      const data = Buffer.concat(chunks);
      if (p.op === 5) return { error: { code: p.code!, message: p.message! }, data, ...(oack ? { oack } : {}) };
      if (p.op === 6) {
        oack = p.options!;
        blksize = Number(oack.blksize ?? 512);
        peer.send(ack(0), got.port);
        continue;
      }
      if (p.op !== 3) throw new Error(`unexpected opcode ${p.op}`);
      if (p.block === (expected & 0xffff)) {
        chunks.push(p.payload!);
        expected += 1;
      }
      peer.send(ack(p.block!), got.port);
      if (p.payload!.length < blksize) return { data: Buffer.concat(chunks), ...(oack ? { oack } : {}) };
    }
  } finally {
    peer.close();
  }
}
