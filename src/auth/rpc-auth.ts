/**
 * Who may call a conductor's listener, and how the API proves it may. `/v1/rpc/…` and every other
 * path that is not a status path (`/v1/nodes/{uuid}/boot-files`…) need the RPC credentials of
 * `[json_rpc] auth_strategy`; the conductor's `/metrics`, `/v1/status` and
 * `/v1/reconcile` are guarded like the API's own routes (public under the API's `noauth`, its
 * htpasswd users under `http_basic`), and RPC callers may read them too.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ConfigError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { splitAddress } from '../common/listen.js';
import type { Config } from '../config/options.js';
import { BasicAuthenticator, readHtpasswd } from './basic-auth.js';
import { HmacAuthenticator, ensureSecret, readSecret, signRequest } from './hmac.js';
import type { AuthRoutes, Authenticator } from './listener-auth.js';
import { sharedPasswordPool } from './password-pool.js';

/** Paths of a conductor listener that report on it rather than act on nodes. */
const STATUS_PATHS = new Set(['/metrics', '/v1/status', '/v1/reconcile']);

/** An htpasswd authenticator with the process's password pool and the [api] login limits. */
export function basicAuthenticator(config: Config, file: string, option: string): BasicAuthenticator {
  const { api } = config;
  return new BasicAuthenticator({
    users: readHtpasswd(file, option),
    verify: sharedPasswordPool({ workers: api.password_check_threads, queue: api.password_check_queue }).verify,
    failureLimit: api.login_failure_limit,
    windowSeconds: api.login_failure_window,
  });
}

/** Whether `host:port` binds only the loopback interface. */
export function isLoopbackAddress(address: string): boolean {
  const { host } = splitAddress(address);
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * Prepares a conductor's RPC credentials before it binds `rpc_address`. Under `hmac` the secret
 * file is created when missing — but only for a loopback address, where the API that calls it runs
 * on this host; on any other address a missing secret refuses the start with a `ConfigError`
 * naming the option, never an open endpoint. Under `noauth` a warning says what is exposed.
 */
export function prepareRpcCredentials(config: Config, logger: Logger): void {
  const { json_rpc: rpc, conductor } = config;
  const loopback = isLoopbackAddress(conductor.rpc_address);
  rpcServerTls(config);
  if (rpc.auth_strategy === 'noauth') {
    logger.warn(
      { rpc_address: conductor.rpc_address },
      `[json_rpc] auth_strategy = "noauth": anyone who can reach ${conductor.rpc_address} can change, power off or delete any node of this conductor`,
    );
    return;
  }
  if (rpc.auth_strategy === 'http_basic') {
    readHtpasswd(rpc.http_basic_auth_user_file, '[json_rpc] http_basic_auth_user_file');
    return;
  }
  if (loopback) {
    const { created } = ensureSecret(rpc.secret_file);
    if (created) logger.info({ file: rpc.secret_file }, 'created the RPC secret ([json_rpc] secret_file); APIs on this host read it from there');
    return;
  }
  try {
    readSecret(rpc.secret_file);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError(
      `${err.message}; the conductor RPC on ${conductor.rpc_address} refuses to start unauthenticated (or set [json_rpc] auth_strategy = "noauth" explicitly)`,
      err.source,
      'json_rpc.secret_file',
    );
  }
}

/** The authentication rules of a conductor's listener. */
export function conductorListenerRoutes(config: Config): AuthRoutes {
  const rpc = config.json_rpc;
  const forRpc: Authenticator[] = [];
  if (rpc.auth_strategy === 'hmac') forRpc.push(new HmacAuthenticator({ secret: readSecret(rpc.secret_file), windowSeconds: rpc.replay_window }));
  if (rpc.auth_strategy === 'http_basic') forRpc.push(basicAuthenticator(config, rpc.http_basic_auth_user_file, '[json_rpc] http_basic_auth_user_file'));
  const forStatus: Authenticator[] =
    config.DEFAULT.auth_strategy === 'http_basic'
      ? [basicAuthenticator(config, config.DEFAULT.http_basic_auth_user_file, 'http_basic_auth_user_file'), ...forRpc.filter((a) => a instanceof HmacAuthenticator)]
      : [];
  return (path) => (STATUS_PATHS.has(path) ? forStatus : forRpc);
}

/** Headers a caller adds to one RPC request (`url` is the path and query). */
export type RpcCredentials = (method: string, url: string, body: string) => Record<string, string>;

/**
 * The API side: how to sign or authorize a request to a conductor. The secret is read on first use
 * (a conductor of this host may create it after the API starts), then kept; a missing one is a
 * `ConfigError` naming the option.
 */
export function rpcClientCredentials(config: Config): RpcCredentials {
  const rpc = config.json_rpc;
  if (rpc.auth_strategy === 'noauth') return () => ({});
  if (rpc.auth_strategy === 'http_basic') {
    return () => {
      if (rpc.username === '') throw new ConfigError('[json_rpc] username is empty: conductors use http_basic ([json_rpc] auth_strategy), so the API needs [json_rpc] username and password');
      return { authorization: `Basic ${Buffer.from(`${rpc.username}:${rpc.password}`).toString('base64')}` };
    };
  }
  let secret: string | undefined;
  return (method, url, body) => {
    secret ??= readSecret(rpc.secret_file);
    return signRequest(secret, method, url, body);
  };
}

/** Reads a PEM file named by a `[json_rpc]` option; a `ConfigError` naming the option when it cannot. */
function readPem(file: string, option: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError(`[json_rpc] ${option} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)}); it is needed because [json_rpc] use_ssl is on`, file, `json_rpc.${option}`);
  }
}

/** The conductor's TLS key and certificate when `[json_rpc] use_ssl` is on, else null. */
export function rpcServerTls(config: Config): { key: Buffer; cert: Buffer } | null {
  const rpc = config.json_rpc;
  if (!rpc.use_ssl) return null;
  return { key: readPem(rpc.key_file, 'key_file'), cert: readPem(rpc.cert_file, 'cert_file') };
}

/** CA certificates an API trusts for https:// conductors: `[json_rpc] cafile` when it exists, else undefined (the system's). */
export function rpcClientCa(config: Config): Buffer | undefined {
  const file = config.json_rpc.cafile;
  return existsSync(file) ? readPem(file, 'cafile') : undefined;
}
