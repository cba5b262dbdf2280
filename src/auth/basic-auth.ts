/**
 * HTTP Basic authentication against an Apache htpasswd file of bcrypt hashes, as Ironic's
 * `http_basic`. The password check runs on worker threads (`password-pool.ts`); an unknown user
 * is checked against a dummy hash of the same cost, so a wrong user name takes as long as a wrong
 * password; failures are limited per client address (`login-limiter.ts`).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import bcrypt from 'bcryptjs';
import type { FastifyRequest } from 'fastify';
import { ConfigError } from '../common/errors.js';
import type { AuthRefusal, Authenticator } from './listener-auth.js';
import { LoginLimiter } from './login-limiter.js';
import type { Clock } from './login-limiter.js';
import { PasswordQueueFull } from './password-pool.js';
import type { PasswordVerifier } from './password-pool.js';

const BCRYPT = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

/**
 * Reads an htpasswd file: `user:bcrypt-hash` per line. Throws `ConfigError` naming the file, the
 * line and `option` (the setting that names the file).
 */
export function readHtpasswd(file: string, option = 'http_basic_auth_user_file'): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${option} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)}); create it with \`htpasswd -cB ${file} USER\``, file);
  }
  const users = new Map<string, string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const colon = line.indexOf(':');
    const user = line.slice(0, colon);
    const hash = line.slice(colon + 1);
    if (colon <= 0 || !BCRYPT.test(hash)) {
      throw new ConfigError(`${option} ${file}, line ${i + 1}: expected user:bcrypt-hash (create entries with \`htpasswd -B\`)`, file);
    }
    users.set(user, hash);
  });
  return users;
}

/**
 * A hash no password matches (random salt and digest) whose check costs as much as a real one of
 * `cost`: built from random characters, not by hashing, so making it costs nothing at start.
 */
export function dummyHash(cost: number): string {
  return `$2b$${String(cost).padStart(2, '0')}$${bcrypt.encodeBase64(randomBytes(16), 16)}${bcrypt.encodeBase64(randomBytes(23), 23)}`;
}

export interface BasicAuthOptions {
  /** user → bcrypt hash. */
  users: ReadonlyMap<string, string>;
  verify: PasswordVerifier;
  /** Failed logins per address within `windowSeconds` before 429; 0: no limit. */
  failureLimit: number;
  windowSeconds: number;
  /** `realm` of the challenge. */
  realm?: string;
  clock?: Clock;
}

/** Verified credentials are remembered this long, so a client's every request does not cost a bcrypt. */
const VERIFIED_TTL_MS = 5 * 60_000;
const VERIFIED_MAX = 1000;

/** HTTP Basic against htpasswd users: one off-loop password check per attempt, limited per client address. */
export class BasicAuthenticator implements Authenticator {
  readonly challenge: string;
  readonly describe = 'HTTP Basic authentication';
  readonly limiter: LoginLimiter;
  private readonly dummy: string;
  private readonly clock: Clock;
  // Headers that passed, by HMAC under a key of this process: never the password itself, and a
  // memory dump of the table is no faster to attack than the htpasswd file. Only a correct header
  // can be in it, so a hit says nothing about a wrong one.
  private readonly verified = new Map<string, number>();
  private readonly cacheKey = randomBytes(32);

  constructor(private readonly options: BasicAuthOptions) {
    this.challenge = `Basic realm="${options.realm ?? 'ironring'}"`;
    this.clock = options.clock ?? Date.now;
    this.limiter = new LoginLimiter({ limit: options.failureLimit, windowSeconds: options.windowSeconds, clock: this.clock });
    const costs = [...options.users.values()].map((h) => bcrypt.getRounds(h));
    this.dummy = dummyHash(costs.length > 0 ? Math.max(...costs) : 12);
  }

  handles(authorization: string): boolean {
    return /^Basic\s/i.test(authorization);
  }

  async check(request: FastifyRequest, authorization: string): Promise<AuthRefusal | null> {
    const address = request.ip;
    // Before the remembered credentials: a blocked address must not learn, even from a fast 200,
    // that its guess is someone's valid header.
    const blocked = this.limiter.blockedFor(address);
    if (blocked > 0) return tooMany(address, blocked);
    const digest = createHmac('sha256', this.cacheKey).update(authorization).digest('hex');
    const until = this.verified.get(digest);
    if (until !== undefined && until > this.clock()) return null;
    const wait = this.limiter.begin(address);
    if (wait !== null) return tooMany(address, wait);
    let ok = false;
    try {
      ok = await this.verifyHeader(authorization);
    } catch (err) {
      this.limiter.finish(address, true);
      if (err instanceof PasswordQueueFull) return { status: 503, message: err.message, retryAfter: 1 };
      throw err;
    }
    this.limiter.finish(address, ok);
    if (!ok) return { status: 401, message: 'the credentials are not valid' };
    if (this.verified.size >= VERIFIED_MAX) this.verified.clear();
    this.verified.set(digest, this.clock() + VERIFIED_TTL_MS);
    return null;
  }

  /** Runs exactly one password check, whether or not the user exists. */
  private async verifyHeader(authorization: string): Promise<boolean> {
    const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
    const decoded = m ? Buffer.from(m[1]!, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const user = colon > 0 ? decoded.slice(0, colon) : '';
    const password = colon > 0 ? decoded.slice(colon + 1) : '';
    const hash = colon > 0 ? this.options.users.get(user) : undefined;
    const ok = await this.options.verify(password, hash ?? this.dummy);
    return ok && hash !== undefined;
  }
}

function tooMany(address: string, seconds: number): AuthRefusal {
  return { status: 429, message: `too many failed logins from ${address}; try again in ${seconds} s`, retryAfter: seconds };
}
