/**
 * How client commands (`conductor list`, `ring show`, later `node …`) talk to a running API: over
 * HTTP at `--url` (default: `[api] address`), with one-line errors for an API that is down or
 * refuses the request.
 */
import { Option } from 'commander';
import type { Command } from 'commander';
import { IronringError } from '../common/errors.js';
import type { Config } from '../config/options.js';
import { commandContext } from './context.js';
import { formatOption } from './output.js';
import type { OutputFormat } from './output.js';

/** Thrown when the API cannot be reached or answers with an error. */
export class ApiRequestFailed extends IronringError {
  override readonly exitCode = 1;
}

export function urlOption(): Option {
  return new Option('--url <url>', 'base URL of the ironring API (default: http://<[api] address>)');
}

/** The API base URL: `--url`, else `[api] address` (a wildcard bind address means this host). */
export function apiBaseUrl(url: string | undefined, config: Config): string {
  if (url) return url.replace(/\/+$/, '');
  const address = config.api.address.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:');
  return `http://${address}`;
}

/** GETs `path` (JSON) from the API at the latest microversion; throws `ApiRequestFailed`. */
export function apiGet<T>(base: string, path: string): Promise<T> {
  return apiRequest<T>(base, 'GET', path);
}

/** Sends a request (JSON body) at the latest microversion; resolves to the JSON answer (or `{}`). */
export async function apiRequest<T>(base: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: {
        'X-OpenStack-Ironic-API-Version': 'latest',
        Accept: 'application/json',
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
  if (!res.ok) throw new ApiRequestFailed(`${res.status} from ${base}${path}: ${errorMessage(text)}`);
  if (text === '') return {} as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiRequestFailed(`${base}${path} did not answer JSON; is --url pointing at an ironring API?`);
  }
}

/** The message of an Ironic-format error body, or the raw text. */
function errorMessage(body: string): string {
  try {
    const outer = JSON.parse(body) as { error_message?: string };
    if (typeof outer.error_message === 'string') {
      const inner = JSON.parse(outer.error_message) as { faultstring?: string };
      if (inner.faultstring) return inner.faultstring;
    }
  } catch {
    // not Ironic's format: show it as it is
  }
  return body.trim().slice(0, 300);
}

/** Adds `--url` and `--format` to a client command. */
export function withClientOptions(cmd: Command): Command {
  return cmd.addOption(urlOption()).addOption(formatOption());
}

/** The API base URL and output format of a client command, from its flags and the configuration. */
export function clientContext(command: Command): { base: string; format: OutputFormat } {
  const opts = command.opts<{ url?: string; format?: OutputFormat }>();
  return { base: apiBaseUrl(opts.url, commandContext(command).config), format: opts.format ?? 'table' };
}
