/**
 * One error handler for the whole API: every thrown `IronringError` becomes its HTTP status and a
 * body in the Ironic API's format, so the stock clients print the message. Nothing else in the API
 * picks status codes for errors.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { IronringError } from './errors.js';

/** The Ironic error body: `error_message` holds a JSON *string*, as the stock client expects. */
export function errorBody(status: number, message: string): { error_message: string } {
  return {
    error_message: JSON.stringify({ faultstring: message, faultcode: status < 500 ? 'Client' : 'Server', debuginfo: null }),
  };
}

/**
 * The message of an error body in the Ironic format (`errorBody`'s, read back by every client of an
 * Ironic-style API: the CLI, the compute tier, the API calling a conductor), else the raw text
 * trimmed to `maxLength` characters, so a proxy's HTML page cannot flood a one-line error.
 */
export function faultOf(body: string, maxLength = 300): string {
  try {
    const outer = JSON.parse(body) as { error_message?: unknown };
    if (typeof outer.error_message === 'string') {
      const inner = JSON.parse(outer.error_message) as { faultstring?: unknown };
      if (typeof inner.faultstring === 'string' && inner.faultstring !== '') return inner.faultstring;
    }
  } catch {
    // not the Ironic format: the text as it is
  }
  return body.trim().slice(0, maxLength);
}

export function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).type('application/json').send(errorBody(status, message));
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | IronringError | Error, request, reply) => {
    if (err instanceof IronringError) return sendError(reply, err.httpStatus, err.message);
    const fastifyErr = err as FastifyError;
    if (fastifyErr.validation) return sendError(reply, 400, fastifyErr.message);
    if (typeof fastifyErr.statusCode === 'number' && fastifyErr.statusCode >= 400 && fastifyErr.statusCode < 500) {
      // Fastify's own client errors: malformed JSON, body too large, unsupported media type.
      return sendError(reply, fastifyErr.statusCode, fastifyErr.message);
    }
    request.log.error({ err }, 'unhandled error in API request');
    return sendError(reply, 500, 'internal server error; see the API log for details');
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, 404, `the resource could not be found: ${request.method} ${request.url.split('?')[0]}`));
}

/**
 * Answers the errors fastify raises before routing (a malformed URL such as `/v1/nodes/%ED%A0%80`,
 * a bad `Content-Type` header) in the Ironic format too. Pass it as fastify's `frameworkErrors`.
 */
export function frameworkErrors(error: FastifyError, _request: unknown, reply: FastifyReply): void {
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
  void sendError(reply, status, error.message);
}

/**
 * Answers what Node's HTTP parser refuses before fastify sees a request (headers too large → 431,
 * a timed-out or malformed request → 408/400) in the same Ironic format as every other error;
 * fastify's own default writes `{"error": …}`, which the stock client cannot read. Pass it as
 * fastify's `clientErrorHandler`.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'malformed HTTP request';
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'the request was not received in time';
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'request header fields too large: the request line and headers together must fit in the HTTP parser\'s limit (16 KiB by default)';
  }
  const body = JSON.stringify(errorBody(status, message));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}
