/**
 * API authentication. `noauth` trusts every caller (the default, with the API on 127.0.0.1);
 * `http_basic` checks HTTP Basic credentials against an Apache htpasswd file of bcrypt hashes, as
 * Ironic's `http_basic` does — off the event loop, unknown users at the cost of known ones, failed
 * attempts limited per client address (src/auth/). Version discovery and health stay public so
 * clients can negotiate and monitors can probe; the agent's lookup, heartbeat and inventory too, guarded by
 * the node's agent token instead (routes/agent.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { BasicAuthenticator } from '../auth/basic-auth.js';
import { installListenerAuth } from '../auth/listener-auth.js';
import { basicAuthenticator } from '../auth/rpc-auth.js';
import type { Config } from '../config/options.js';

export { readHtpasswd } from '../auth/basic-auth.js';

const PUBLIC_PATHS = new Set(['/', '/v1', '/v1/', '/healthz']);

/**
 * The agent's three requests, which a deploy ramdisk makes without user credentials (as Ironic's
 * policy lets them through): `GET /v1/lookup`, `POST /v1/heartbeat/{node}` and
 * `POST /v1/continue_inspection`, nothing under or beside them and no other method. The heartbeat
 * is proven by the node's agent token instead, an inventory by the token too once the node issued
 * one, and the lookup hands out no more than a restricted view of a node that waits for its agent.
 */
function isAgentRequest(path: string, method: string): boolean {
  if (method === 'GET') return path === '/v1/lookup';
  if (method === 'POST') return /^\/v1\/heartbeat\/[^/]+$/.test(path) || path === '/v1/continue_inspection';
  return false;
}

/**
 * Adds the credential check to every non-public request. `authenticator` replaces the one built
 * from the configuration (tests count its password checks).
 */
export function installBasicAuth(app: FastifyInstance, config: Config, authenticator?: BasicAuthenticator): BasicAuthenticator {
  const auth = authenticator ?? basicAuthenticator(config, config.DEFAULT.http_basic_auth_user_file, 'http_basic_auth_user_file');
  const guarded = [auth];
  installListenerAuth(app, (path, method) => (PUBLIC_PATHS.has(path) || isAgentRequest(path, method) ? [] : guarded), { subject: 'this API' });
  return auth;
}
