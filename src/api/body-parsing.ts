/**
 * Request bodies: the API speaks JSON only, but an *empty* body is fine whatever its declared type.
 * The stock `baremetal` client sends `DELETE`s (node, port, maintenance) with
 * `Content-Type: application/octet-stream` and no body; fastify alone answers those 415.
 *
 * Every JSON body is checked here, before any route sees it: no key that reaches a prototype
 * (`__proto__`, `constructor`, `prototype`), no string a database cannot store (NUL, lone
 * surrogates), no nesting deeper than `[api] max_json_depth`. So no route, walk or store ever
 * handles such a document, and a refused request changes nothing.
 */
import type { FastifyInstance } from 'fastify';
import { IronringError, InvalidParameter } from '../common/errors.js';
import { checkJsonDocument } from '../common/json-safety.js';
import type { JsonLimits } from '../common/json-safety.js';

/** Thrown for a non-empty request body that is not JSON. 415, as the Ironic API answers. */
export class UnsupportedMediaType extends IronringError {
  override readonly httpStatus = 415;
}

/**
 * Parses JSON bodies with the checks above, accepts empty bodies of any content type (as no body)
 * and refuses non-empty non-JSON ones (`text/plain` included: fastify would pass it on as a string).
 */
export function installBodyParsing(app: FastifyInstance, limits: JsonLimits): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body: string, done) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    let document: unknown;
    try {
      document = JSON.parse(body);
    } catch (err) {
      done(new InvalidParameter(`request body: not valid JSON (${(err as Error).message})`), undefined);
      return;
    }
    try {
      checkJsonDocument(document, limits);
    } catch (err) {
      done(err as Error, undefined);
      return;
    }
    done(null, document);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    const type = request.headers['content-type'] ?? '(none)';
    done(new UnsupportedMediaType(`unsupported media type ${JSON.stringify(type)}: request bodies must be application/json`), undefined);
  });
}
