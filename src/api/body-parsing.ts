/**
 * Request bodies: the API speaks JSON only, but an *empty* body is fine whatever its declared type.
 * The stock `baremetal` client sends `DELETE`s (node, port, maintenance) with
 * `Content-Type: application/octet-stream` and no body; fastify alone answers those 415.
 */
import type { FastifyInstance } from 'fastify';
import { IronringError } from '../common/errors.js';

/** Thrown for a non-empty request body that is not JSON. 415, as the Ironic API answers. */
export class UnsupportedMediaType extends IronringError {
  override readonly httpStatus = 415;
}

/** Accepts empty bodies of any content type (as no body) and refuses non-empty non-JSON ones. */
export function installBodyParsing(app: FastifyInstance): void {
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    const type = request.headers['content-type'] ?? '(none)';
    done(new UnsupportedMediaType(`unsupported media type ${JSON.stringify(type)}: request bodies must be application/json`), undefined);
  });
}
