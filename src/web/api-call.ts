/**
 * The dashboard's calls to the API: each goes through the API's own route in-process
 * (`app.inject`), at the latest microversion, with the browser's `Authorization` header. So what a
 * page shows is what the API shows (secrets masked the same way) and what an action does passes the
 * API's authentication and every one of its validations — the dashboard has no second copy of them.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

export interface ApiAnswer {
  status: number;
  /** The parsed JSON body (null when there was none). */
  body: unknown;
  /** The API's own words when it refused: Ironic's `error_message.faultstring`, or the body's text. */
  error: string | null;
}

/** The refusal message of an Ironic-shaped error body. */
export function errorMessage(status: number, body: unknown, text: string): string | null {
  if (status < 400) return null;
  const raw = (body as { error_message?: unknown } | null)?.error_message;
  const parsed = typeof raw === 'string' ? safeJson(raw) : raw;
  const fault = (parsed as { faultstring?: unknown } | null)?.faultstring;
  if (typeof fault === 'string' && fault !== '') return fault;
  return text.trim().slice(0, 500) || `the API answered ${status}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Calls `method url` on the API as the browser's request would (its credentials), JSON both ways. */
export async function callApi(app: FastifyInstance, request: FastifyRequest, method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<ApiAnswer> {
  const headers: Record<string, string> = { 'x-openstack-ironic-api-version': 'latest', accept: 'application/json' };
  const auth = request.headers.authorization;
  if (auth !== undefined) headers.authorization = auth;
  if (payload !== undefined) headers['content-type'] = 'application/json';
  const res = await app.inject({
    method,
    url,
    headers,
    // The login limiter counts failures per client address: the browser's, not the loopback's.
    remoteAddress: request.ip,
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });
  const body = res.body === '' ? null : safeJson(res.body);
  return { status: res.statusCode, body, error: errorMessage(res.statusCode, body, res.body) };
}
