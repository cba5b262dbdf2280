/**
 * How client commands (`node …`, `port …`, `server …`, `compute list`, `conductor list`, `ring show`) talk to a
 * running API: over HTTP at `--url` (default: `[api] address`), with HTTP Basic credentials when
 * given, and one-line errors for an API that is down, refuses the credentials or the request.
 *
 * Credentials are spelt as the OpenStack client spells them — `--os-username` / `--os-password`,
 * else `OS_USERNAME` / `OS_PASSWORD` — else the `[baremetal] username` / `password` the compute
 * tier uses against the same API, so one config file serves both. The password is never printed:
 * not in errors, not in `--help` (no default is shown), and `config show` masks it.
 */
import { Option } from 'commander';
import type { Command } from 'commander';
import { IronringError, UsageError } from '../common/errors.js';
import { faultOf } from '../common/http-errors.js';
import type { Config } from '../config/options.js';
import { commandContext } from './context.js';
import { formatOption } from './output.js';
import type { OutputFormat } from './output.js';

/** Thrown when the API cannot be reached or answers with an error. */
export class ApiRequestFailed extends IronringError {
  override readonly exitCode = 1;
}

/** Thrown when the API answers 401: no credentials were given, or it refused them. */
export class AuthenticationFailed extends ApiRequestFailed {}

/** Where client commands send their requests, and with which credentials. */
export interface ApiEndpoint {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:6385`. */
  url: string;
  /** The `Authorization` header (`Basic …`) when credentials were given. */
  authorization?: string;
  /** Who and from where, for error messages: `user "admin" (from --os-username and --os-password)`. Never the password. */
  credentials?: string;
}

/** How an operator gives credentials, for error messages and help. */
const HOW_TO_AUTHENTICATE = 'give credentials with --os-username and --os-password, OS_USERNAME and OS_PASSWORD, or [baremetal] username and password in the config file';

export function urlOption(): Option {
  return new Option('--url <url>', 'base URL of the ironring API (default: http://<[api] address>)');
}

/**
 * `--os-username` and `--os-password`. No default is declared, so `--help` never shows a password;
 * commander only names the variables.
 */
export function credentialOptions(): Option[] {
  return [
    new Option('--os-username <user>', "user for an API with auth_strategy http_basic (default: [baremetal] username)").env('OS_USERNAME'),
    new Option('--os-password <password>', "password of --os-username (prefer OS_PASSWORD: flags are visible to other users in ps; default: [baremetal] password)").env('OS_PASSWORD'),
  ];
}

/** The API base URL: `--url`, else `[api] address` (a wildcard bind address means this host). */
export function apiBaseUrl(url: string | undefined, config: Config): string {
  if (url) {
    // fetch refuses such URLs, and echoing one in an error would print the password.
    if (/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url)) throw new UsageError(`--url must not contain credentials: ${HOW_TO_AUTHENTICATE}`);
    return url.replace(/\/+$/, '');
  }
  const address = config.api.address.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:');
  return `http://${address}`;
}

/**
 * The credentials a client command sends: the flags or `OS_*` variables (a pair, never mixed with
 * the config file's), else `[baremetal] username` / `password`; none when no user is named.
 */
export function apiCredentials(command: Command, config: Config): Pick<ApiEndpoint, 'authorization' | 'credentials'> {
  const opts = command.opts<{ osUsername?: string; osPassword?: string }>();
  // An exported-but-empty variable usually means "unset"; an empty password is no password.
  const flagUser = opts.osUsername || undefined;
  const flagPassword = opts.osPassword || undefined;
  const named = (key: 'osUsername' | 'osPassword') =>
    command.getOptionValueSource(key) === 'env' ? (key === 'osUsername' ? 'OS_USERNAME' : 'OS_PASSWORD') : key === 'osUsername' ? '--os-username' : '--os-password';
  let user: string;
  let password: string;
  let from: string;
  if (flagUser !== undefined) {
    if (flagPassword === undefined) throw new UsageError(`${named('osUsername')} is set but no password: add --os-password or set OS_PASSWORD`);
    [user, password, from] = [flagUser, flagPassword, `${named('osUsername')} and ${named('osPassword')}`];
  } else if (flagPassword !== undefined) {
    throw new UsageError(`${named('osPassword')} is set but no user: add --os-username or set OS_USERNAME`);
  } else if (config.baremetal.username !== '') {
    [user, password, from] = [config.baremetal.username, config.baremetal.password, '[baremetal] username and password'];
  } else {
    return {};
  }
  if (user.includes(':')) throw new UsageError(`user ${JSON.stringify(user)}: HTTP Basic user names cannot contain ":"`);
  return {
    authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`,
    credentials: `user ${JSON.stringify(user)} (from ${from})`,
  };
}

/** GETs `path` (JSON) from the API at the latest microversion; throws `ApiRequestFailed`. */
export function apiGet<T>(api: ApiEndpoint, path: string): Promise<T> {
  return apiRequest<T>(api, 'GET', path);
}

/** Sends a request (JSON body) at the latest microversion; resolves to the JSON answer (or `{}`). */
export async function apiRequest<T>(api: ApiEndpoint, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const base = api.url;
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: {
        'X-OpenStack-Ironic-API-Version': 'latest',
        Accept: 'application/json',
        ...(api.authorization !== undefined ? { Authorization: api.authorization } : {}),
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const reason = cause?.code === 'ECONNREFUSED' ? 'connection refused' : (cause?.message ?? cause?.code ?? (err as Error).message);
    throw new ApiRequestFailed(`cannot reach the ironring API at ${base}: ${reason} (is \`ironring api\` or \`ironring up\` running? point --url at it)`);
  }
  const text = await res.text();
  if (res.status === 401) {
    const refused = api.credentials === undefined ? `the API at ${base} requires credentials (${faultOf(text)})` : `the API at ${base} refused ${api.credentials} (${faultOf(text)})`;
    throw new AuthenticationFailed(`authentication failed: ${refused}; ${HOW_TO_AUTHENTICATE}`);
  }
  if (!res.ok) throw new ApiRequestFailed(`${res.status} from ${base}${path}: ${faultOf(text)}${retryAfter(res)}`);
  if (text === '') return {} as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiRequestFailed(`${base}${path} did not answer JSON; is --url pointing at an ironring API?`);
  }
}

/** " (Retry-After: 42 s)" for a 429 or 503 that says when to come back, else "". */
function retryAfter(res: Response): string {
  const value = res.headers.get('retry-after');
  if (value === null || (res.status !== 429 && res.status !== 503)) return '';
  return /^\d+$/.test(value.trim()) ? ` (Retry-After: ${value.trim()} s)` : ` (Retry-After: ${value.trim().slice(0, 64)})`;
}

/** Adds `--url`, `--os-username`, `--os-password` and `--format` to a client command. */
export function withClientOptions(cmd: Command): Command {
  cmd.addOption(urlOption());
  for (const option of credentialOptions()) cmd.addOption(option);
  return cmd.addOption(formatOption());
}

/** The API endpoint (URL and credentials) and output format of a client command, from its flags, the environment and the configuration. */
export function clientContext(command: Command): { base: ApiEndpoint; format: OutputFormat } {
  const opts = command.opts<{ url?: string; format?: OutputFormat }>();
  const { config } = commandContext(command);
  return { base: { url: apiBaseUrl(opts.url, config), ...apiCredentials(command, config) }, format: opts.format ?? 'table' };
}
