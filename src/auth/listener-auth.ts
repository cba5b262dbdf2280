/**
 * One authentication gate for every HTTP listener (the API, a conductor's RPC endpoint): each path
 * is public or needs one of a list of authenticators, picked by the scheme of the `Authorization`
 * header. Refusals are Ironic-shaped errors: 401 with a challenge, 429 with Retry-After after too
 * many failures, 503 with Retry-After when password checks are queued out.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../common/http-errors.js';

/** Why a request was refused; `retryAfter` in seconds for 429 and 503. */
export interface AuthRefusal {
  status: 401 | 429 | 503;
  message: string;
  retryAfter?: number;
}

/** A way of proving who calls: HTTP Basic against an htpasswd file, or an HMAC-signed request. */
export interface Authenticator {
  /** The `WWW-Authenticate` challenge, e.g. `Basic realm="ironring"`. */
  readonly challenge: string;
  /** Words for "authentication required: …", e.g. `HTTP Basic authentication`. */
  readonly describe: string;
  /** Whether the `Authorization` header is of this authenticator's scheme. */
  handles(authorization: string): boolean;
  /** Checks the credentials; null when they are good. */
  check(request: FastifyRequest, authorization: string): Promise<AuthRefusal | null>;
  /** Checks the raw body after parsing, for schemes that sign it; null when it matches. */
  checkBody?(request: FastifyRequest, rawBody: string): AuthRefusal | null;
}

/** Which authenticators a request (its path, and method) needs; an empty list means it is public. */
export type AuthRoutes = (path: string, method: string) => readonly Authenticator[];

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticator that accepted this request, when one did. */
    authenticatedBy: Authenticator | null;
    /** The request body as received, kept for authenticators that sign it. */
    rawBody: string | null;
  }
}

function refuse(reply: FastifyReply, refusal: AuthRefusal, challenges: readonly Authenticator[]): FastifyReply {
  if (refusal.status === 401) reply.header('WWW-Authenticate', challenges.map((a) => a.challenge).join(', '));
  if (refusal.retryAfter !== undefined) reply.header('Retry-After', String(refusal.retryAfter));
  return sendError(reply, refusal.status, refusal.message);
}

/**
 * Adds the gate to `app`. Installed before the routes; for body-signing schemes it also keeps the
 * raw JSON body (fastify's own JSON parser does the parsing, with its prototype-poisoning checks).
 */
export function installListenerAuth(app: FastifyInstance, routes: AuthRoutes, options: { keepRawBody?: boolean; subject?: string } = {}): void {
  const subject = options.subject ?? 'this endpoint';
  app.decorateRequest('authenticatedBy', null);
  app.decorateRequest('rawBody', null);
  if (options.keepRawBody) {
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      request.rawBody = body as string;
      void parseJson(request, body as string, done);
    });
  }
  app.addHook('onRequest', async (request, reply) => {
    const needed = routes(request.url.split('?')[0]!, request.method);
    if (needed.length === 0) return;
    const header = request.headers.authorization ?? '';
    const by = needed.find((a) => a.handles(header));
    if (by === undefined) {
      const message = header
        ? 'the credentials are not valid'
        : `authentication required: ${subject} uses ${needed.map((a) => a.describe).join(' or ')}`;
      return refuse(reply, { status: 401, message }, needed);
    }
    const refusal = await by.check(request, header);
    if (refusal) return refuse(reply, refusal, needed);
    request.authenticatedBy = by;
  });
  app.addHook('preValidation', async (request, reply) => {
    const by = request.authenticatedBy;
    if (by?.checkBody === undefined) return;
    const refusal = by.checkBody(request, request.rawBody ?? '');
    if (refusal) return refuse(reply, refusal, [by]);
  });
}
