/**
 * API authentication. `noauth` trusts every caller (the default, with the API on 127.0.0.1);
 * `http_basic` checks HTTP Basic credentials against an Apache htpasswd file of bcrypt hashes, as
 * Ironic's `http_basic` does — off the event loop, unknown users at the cost of known ones, failed
 * attempts limited per client address (src/auth/). Version discovery and health stay public so
 * clients can negotiate and monitors can probe.
 */
import type { FastifyInstance } from 'fastify';
import type { BasicAuthenticator } from '../auth/basic-auth.js';
import { installListenerAuth } from '../auth/listener-auth.js';
import { basicAuthenticator } from '../auth/rpc-auth.js';
import type { Config } from '../config/options.js';

export { readHtpasswd } from '../auth/basic-auth.js';

const PUBLIC_PATHS = new Set(['/', '/v1', '/v1/', '/healthz']);

/**
 * Adds the credential check to every non-public request. `authenticator` replaces the one built
 * from the configuration (tests count its password checks).
 */
export function installBasicAuth(app: FastifyInstance, config: Config, authenticator?: BasicAuthenticator): BasicAuthenticator {
  const auth = authenticator ?? basicAuthenticator(config, config.DEFAULT.http_basic_auth_user_file, 'http_basic_auth_user_file');
  const guarded = [auth];
  installListenerAuth(app, (path) => (PUBLIC_PATHS.has(path) ? [] : guarded), { subject: 'this API' });
  return auth;
}
