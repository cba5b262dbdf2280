/**
 * The HTTP boot server: serves `http_root` read-only to iPXE (scripts, kernels, ramdisks). GET and
 * HEAD, one byte range per request (206 / 416), exact Content-Length. Confined to the root: a path
 * with `..` is refused, and a symlink is followed only when its real target is inside the root —
 * the per-MAC links are, a link to `/etc` is not. Plain `node:http`: nothing here needs a framework,
 * and a kernel download should cost a `sendfile`-like stream, not a request pipeline.
 */
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { listenError, splitAddress } from '../common/listen.js';
import { isMissing } from './atomic-fs.js';
import type { BootLogger } from './types.js';

/** Options of the HTTP boot server. */
export interface HttpBootServerOptions {
  /** Directory served (`http_root`). */
  root: string;
  /** `host:port` to bind; port 0 picks a free one. */
  address: string;
  logger?: BootLogger;
}

/** A running HTTP boot server. */
export interface HttpBootServer {
  /** Base URL it serves on, with the real port: `http://127.0.0.1:8080`. */
  url: string;
  /** Requests being answered, and when the last one came in: what a stopping conductor lingers on. */
  activity(): { inFlight: number; lastRequestAt: number | null };
  /** Its counters since it started (exported on the conductor's `/metrics`). */
  stats(): HttpBootStats;
  /** Stops accepting, drops open connections (cutting downloads in flight); idempotent. */
  close(): Promise<void>;
}

/**
 * Requests answered, counted once each when its response ends (sent in full or its connection
 * gone), by what was answered; and the file bytes written to responses.
 */
export interface HttpBootStats {
  /** 200 or 206 sent in full (GET and HEAD alike). */
  served: number;
  /** 304 answers (the server answers no conditional request today, so this stays 0). */
  notModified: number;
  /** 404: no such file in the root. */
  notFound: number;
  /** Other 4xx: a path out of the root or malformed (400/403), a method other than GET/HEAD (405), an unsatisfiable range (416). */
  refused: number;
  /** 5xx, or a response cut before its end (the client hung up mid-download, the server closed). */
  failed: number;
  /** File content written to responses (bodies of 200/206, a cut download's part included); not headers or error texts. */
  bytesSent: number;
  /** Requests being answered now. */
  active: number;
}

/** Counts of one server, kept by `handle` and the response's end (`active` is read off the server). */
type Counts = Omit<HttpBootStats, 'active'>;

/** Which counter a response that ended with `status`, in full or not, goes to. */
export function outcomeOf(status: number, finished: boolean): keyof Omit<Counts, 'bytesSent'> {
  if (!finished || status >= 500) return 'failed';
  if (status === 200 || status === 206) return 'served';
  if (status === 304) return 'notModified';
  if (status === 404) return 'notFound';
  return 'refused';
}

/** A single byte range, inclusive, or why there is none. */
export type RangeResult = { start: number; end: number } | 'none' | 'unsatisfiable';

/**
 * Parses a `Range` header for a file of `size` bytes. Multiple ranges and malformed headers yield
 * `none` (the whole file, which RFC 9110 allows a server to send instead).
 */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (header === undefined) return 'none';
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null) return 'none';
  const [, first = '', last = ''] = m;
  if (first === '' && last === '') return 'none';
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (start >= size) return 'unsatisfiable';
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (end < start) return 'none';
  return { start, end };
}

const TYPES: Record<string, string> = { '.ipxe': 'text/plain; charset=utf-8', '.cfg': 'text/plain; charset=utf-8', '.conf': 'text/plain; charset=utf-8' };

function contentType(path: string): string {
  const base = path.slice(path.lastIndexOf('/') + 1);
  if (base === 'config') return 'text/plain; charset=utf-8';
  const dot = base.lastIndexOf('.');
  return (dot > 0 && TYPES[base.slice(dot)]) || 'application/octet-stream';
}

function plain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = `${text}\n`;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** Maps a request path to a real file path inside `realRoot`, or an HTTP status for why not. */
export async function resolveInRoot(realRoot: string, rawPath: string): Promise<string | 400 | 403 | 404> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath.split('?')[0] ?? '');
  } catch {
    return 400;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return 400;
  const segments = decoded.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) return 403;
  let real: string;
  try {
    real = await realpath(join(realRoot, ...segments));
  } catch (err) {
    return isMissing(err) || (err as NodeJS.ErrnoException).code === 'ELOOP' ? 404 : 403;
  }
  // The real path, after every symlink: inside the root or refused.
  if (real !== realRoot && !real.startsWith(realRoot + sep)) return 403;
  return real;
}

async function handle(realRoot: string, req: IncomingMessage, res: ServerResponse, counts: Counts): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'method not allowed', { Allow: 'GET, HEAD' });
  const resolved = await resolveInRoot(realRoot, req.url ?? '/');
  if (typeof resolved === 'number') return plain(res, resolved, resolved === 404 ? 'not found' : resolved === 403 ? 'forbidden' : 'bad request');
  const st = await stat(resolved).catch(() => null);
  if (st === null) return plain(res, 404, 'not found');
  if (!st.isFile()) return plain(res, 403, 'forbidden');

  const size = st.size;
  const range = parseRange(req.headers.range, size);
  const headers: Record<string, string | number> = {
    'Content-Type': contentType(resolved),
    'Accept-Ranges': 'bytes',
    'Last-Modified': st.mtime.toUTCString(),
  };
  if (range === 'unsatisfiable') return plain(res, 416, 'range not satisfiable', { 'Content-Range': `bytes */${size}` });
  let start = 0;
  let end = size - 1;
  if (range !== 'none') {
    ({ start, end } = range);
    headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  }
  headers['Content-Length'] = size === 0 ? 0 : end - start + 1;
  res.writeHead(range === 'none' ? 200 : 206, headers);
  if (req.method === 'HEAD' || size === 0) {
    res.end();
    return;
  }
  const file = createReadStream(resolved, { start, end });
  // Each chunk read is written to the response next: what the client was sent, or was being sent.
  file.on('data', (chunk: Buffer | string) => {
    counts.bytesSent += Buffer.byteLength(chunk);
  });
  await pipeline(file, res);
}

/**
 * Starts serving `options.root`. Bind failures throw a `ListenError` naming the address and the
 * option that changes it.
 */
export async function startHttpBootServer(options: HttpBootServerOptions): Promise<HttpBootServer> {
  const realRoot = await realpath(options.root);
  const logger = options.logger;
  let inFlight = 0;
  let lastRequestAt: number | null = null;
  const counts: Counts = { served: 0, notModified: 0, notFound: 0, refused: 0, failed: 0, bytesSent: 0 };
  const server = createServer((req, res) => {
    inFlight += 1;
    lastRequestAt = Date.now();
    // 'close' comes once per response: sent in full, or its connection gone.
    res.once('close', () => {
      inFlight -= 1;
      counts[outcomeOf(res.statusCode, res.writableFinished)] += 1;
    });
    handle(realRoot, req, res, counts).then(
      () => logger?.debug({ method: req.method, url: req.url, status: res.statusCode }, 'http boot request'),
      (err: unknown) => {
        // A client that hangs up mid-download lands here too: nothing to answer, only to log.
        logger?.debug({ method: req.method, url: req.url, err: (err as Error).message }, 'http boot request failed');
        if (!res.headersSent) plain(res, 500, 'internal error');
        else res.destroy();
      },
    );
  });
  const { host, port } = splitAddress(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: unknown) => {
    throw listenError(err, options.address, 'HTTP boot server', '--http-address or [deploy] http_address');
  });
  const bound = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${bound.port}`;
  logger?.info({ url, root: realRoot }, 'HTTP boot server listening');

  let closing: Promise<void> | null = null;
  return {
    url,
    activity: () => ({ inFlight, lastRequestAt }),
    stats: () => ({ ...counts, active: inFlight }),
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
