/**
 * API authentication. `noauth` trusts every caller (the default, with the API on 127.0.0.1);
 * `http_basic` checks HTTP Basic credentials against an Apache htpasswd file of bcrypt hashes, as
 * Ironic's `http_basic` does. Version discovery and health stay public so clients can negotiate.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import bcrypt from 'bcryptjs';
import type { FastifyInstance } from 'fastify';
import { ConfigError } from '../common/errors.js';
import { sendError } from '../common/http-errors.js';

const PUBLIC_PATHS = new Set(['/', '/v1', '/v1/', '/healthz']);
const BCRYPT = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

/** Reads an htpasswd file: `user:bcrypt-hash` per line. Throws `ConfigError` naming the file and line. */
export function readHtpasswd(file: string): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`http_basic_auth_user_file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)}); create it with \`htpasswd -cB ${file} USER\``, file);
  }
  const users = new Map<string, string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const colon = line.indexOf(':');
    const user = line.slice(0, colon);
    const hash = line.slice(colon + 1);
    if (colon <= 0 || !BCRYPT.test(hash)) {
      throw new ConfigError(`http_basic_auth_user_file ${file}, line ${i + 1}: expected user:bcrypt-hash (create entries with \`htpasswd -B\`)`, file);
    }
    users.set(user, hash);
  });
  return users;
}

/** Adds the credential check to every non-public request. */
export function installBasicAuth(app: FastifyInstance, file: string): void {
  const users = readHtpasswd(file);
  // bcrypt is slow on purpose; a client sends the same header on every request, so remember the
  // headers that passed (by digest, never the password itself).
  const verified = new Set<string>();
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0]!;
    if (PUBLIC_PATHS.has(path)) return;
    const header = request.headers.authorization ?? '';
    const digest = createHash('sha256').update(header).digest('hex');
    if (verified.has(digest)) return;
    const m = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header);
    const decoded = m ? Buffer.from(m[1]!, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const hash = colon > 0 ? users.get(decoded.slice(0, colon)) : undefined;
    if (hash !== undefined && (await bcrypt.compare(decoded.slice(colon + 1), hash))) {
      if (verified.size > 10_000) verified.clear();
      verified.add(digest);
      return;
    }
    reply.header('WWW-Authenticate', 'Basic realm="ironring"');
    return sendError(reply, 401, header ? 'the credentials are not valid' : 'authentication required: this API uses HTTP Basic authentication');
  });
}
