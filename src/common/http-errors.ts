/**
 * One error handler for the whole API: every thrown `IronringError` becomes its HTTP status and a
 * body in the Ironic API's format, so the stock clients print the message. Nothing else in the API
 * picks status codes for errors.
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { IronringError } from './errors.js';

/** The Ironic error body: `error_message` holds a JSON *string*, as the stock client expects. */
export function errorBody(status: number, message: string): { error_message: string } {
  return {
    error_message: JSON.stringify({ faultstring: message, faultcode: status < 500 ? 'Client' : 'Server', debuginfo: null }),
  };
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
