/**
 * HMAC-signed requests with a shared secret, for the conductor RPC: every API and conductor of a
 * deployment reads the same secret file. A request carries the time it was signed, a nonce and the
 * SHA-256 of its body; the signature covers the method, the path, those three and nothing else.
 * The receiver refuses a signature outside the replay window or a nonce it has already seen, and
 * compares the body digest after the body is read — so a captured request can be neither replayed
 * nor given another body. (It is not hidden: TLS would do that.)
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import { ConfigError } from '../common/errors.js';
import type { AuthRefusal, Authenticator } from './listener-auth.js';
import type { Clock } from './login-limiter.js';

export const HMAC_SCHEME = 'IRONRING-HMAC-SHA256';
/** Header carrying the hex SHA-256 of the body, which the signature covers. */
export const CONTENT_SHA256_HEADER = 'x-ironring-content-sha256';
/** Shortest secret accepted, in characters (the generated ones are 43). */
export const MIN_SECRET_LENGTH = 32;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function stringToSign(method: string, url: string, ts: string, nonce: string, contentSha256: string): string {
  return [HMAC_SCHEME, method.toUpperCase(), url, ts, nonce, contentSha256].join('\n');
}

/** Headers that sign one request: `Authorization` and the body digest. `url` is the path and query. */
export function signRequest(secret: string, method: string, url: string, body: string, clock: Clock = Date.now): Record<string, string> {
  const ts = String(clock());
  const nonce = randomBytes(16).toString('hex');
  const contentSha256 = sha256(body);
  const sig = createHmac('sha256', secret).update(stringToSign(method, url, ts, nonce, contentSha256)).digest('hex');
  return { authorization: `${HMAC_SCHEME} ts=${ts}, nonce=${nonce}, sig=${sig}`, [CONTENT_SHA256_HEADER]: contentSha256 };
}

/**
 * Reads the shared secret. Throws `ConfigError` naming `[json_rpc] secret_file` when the file is
 * missing, unreadable or too short.
 */
export function readSecret(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError(
      `[json_rpc] secret_file ${file}: cannot read it (${code}); every API and conductor needs the same secret there ` +
        `(create one with \`head -c 32 /dev/urandom | base64 > ${file}; chmod 600 ${file}\`)`,
      file,
      'json_rpc.secret_file',
    );
  }
  const secret = text.trim();
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(`[json_rpc] secret_file ${file}: the secret is ${secret.length} characters; at least ${MIN_SECRET_LENGTH} are needed`, file, 'json_rpc.secret_file');
  }
  return secret;
}

/**
 * Reads the secret, creating it first (32 random bytes, mode 0600) when the file does not exist.
 * Resolves to whether it was created. Two processes starting at once both end up with the winner's.
 */
export function ensureSecret(file: string): { secret: string; created: boolean } {
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ConfigError(`[json_rpc] secret_file ${file}: cannot create it (${(err as NodeJS.ErrnoException).code ?? String(err)})`, file, 'json_rpc.secret_file');
    }
    return { secret: readSecret(file), created: false };
  }
  return { secret: readSecret(file), created: true };
}

export interface HmacOptions {
  secret: string;
  /** Seconds a signature stays valid either side of the receiver's clock. */
  windowSeconds: number;
  clock?: Clock;
}

/** Nonces remembered at most; past it, requests are refused until old ones expire (a flood is bounded). */
const MAX_NONCES = 100_000;

/** Checks HMAC-signed requests: signature, replay window, single use of each nonce, then the body digest. */
export class HmacAuthenticator implements Authenticator {
  readonly challenge = HMAC_SCHEME;
  readonly describe = 'requests signed with the shared secret of [json_rpc] secret_file';
  private readonly clock: Clock;
  private readonly key: Buffer;
  /** nonce → when it may be forgotten (its timestamp leaves the window). */
  private readonly seen = new Map<string, number>();

  constructor(private readonly options: HmacOptions) {
    this.clock = options.clock ?? Date.now;
    this.key = Buffer.from(options.secret);
  }

  handles(authorization: string): boolean {
    return authorization.startsWith(`${HMAC_SCHEME} `);
  }

  async check(request: FastifyRequest, authorization: string): Promise<AuthRefusal | null> {
    const fields = new Map<string, string>();
    for (const part of authorization.slice(HMAC_SCHEME.length + 1).split(',')) {
      const eq = part.indexOf('=');
      if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
    }
    const ts = fields.get('ts') ?? '';
    const nonce = fields.get('nonce') ?? '';
    const sig = fields.get('sig') ?? '';
    const digest = request.headers[CONTENT_SHA256_HEADER];
    if (!/^\d{1,15}$/.test(ts) || !/^[0-9a-f]{32}$/.test(nonce) || !/^[0-9a-f]{64}$/.test(sig) || typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest)) {
      return { status: 401, message: `the credentials are not valid: expected ${HMAC_SCHEME} ts=…, nonce=…, sig=… and ${CONTENT_SHA256_HEADER}` };
    }
    const expected = createHmac('sha256', this.key).update(stringToSign(request.method, request.url, ts, nonce, digest)).digest();
    if (!timingSafeEqual(expected, Buffer.from(sig, 'hex'))) return { status: 401, message: 'the credentials are not valid: bad signature' };
    const now = this.clock();
    const windowMs = this.options.windowSeconds * 1000;
    if (Math.abs(now - Number(ts)) > windowMs) {
      return { status: 401, message: `the credentials are not valid: signed ${Math.round((now - Number(ts)) / 1000)} s from this conductor's clock, outside [json_rpc] replay_window (${this.options.windowSeconds} s)` };
    }
    this.forgetExpired(now);
    if (this.seen.has(nonce)) return { status: 401, message: 'the credentials are not valid: this request was already received (replay)' };
    if (this.seen.size >= MAX_NONCES) return { status: 503, message: 'too many signed requests in the replay window; try again shortly', retryAfter: 1 };
    this.seen.set(nonce, Number(ts) + windowMs);
    return null;
  }

  checkBody(request: FastifyRequest, rawBody: string): AuthRefusal | null {
    const claimed = request.headers[CONTENT_SHA256_HEADER] as string;
    if (!timingSafeEqual(Buffer.from(sha256(rawBody)), Buffer.from(claimed))) {
      return { status: 401, message: `the credentials are not valid: the body does not match ${CONTENT_SHA256_HEADER}` };
    }
    return null;
  }

  private forgetExpired(now: number): void {
    // Map order is insertion order, which is nearly expiry order: stop at the first live one.
    for (const [nonce, until] of this.seen) {
      if (until >= now - 1000) break;
      this.seen.delete(nonce);
    }
  }
}
