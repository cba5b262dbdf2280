/**
 * Vendor passthru: `…/vendor_passthru/methods` lists a node's (or a hardware type's) vendor
 * methods with their metadata; `…/vendor_passthru/{method}` (or `?method=`) calls one with the
 * request's HTTP method and its JSON body as arguments. A node's call goes to its conductor
 * (`src/conductor/vendor-passthru.ts`): 202 with no body when the method runs in the background,
 * 200 with its value when it answers at once, as Ironic. A driver's methods are its default vendor
 * interface's driver-level ones; this API process runs them from its own catalogue of interfaces
 * (the built-in ones have none: every call is refused, 400). `no-vendor` is refused (400, naming
 * it). Arguments are bounded: a JSON object within `[api] max_json_depth` and 64 KiB.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listServedHardwareTypes } from '../../cluster/hardware-interfaces.js';
import { listConductors } from '../../cluster/membership.js';
import { InvalidParameter, NotFound } from '../../common/errors.js';
import { checkJsonDocument } from '../../common/json-safety.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { UnsupportedDriverExtension } from '../../drivers/index.js';
import type { DriverRegistry, VendorInterface } from '../../drivers/index.js';
import { getNode } from '../../nodes/node-store.js';
import type { ConductorRouter } from '../conductor-router.js';

/** The largest JSON argument object a vendor method is passed. */
export const MAX_PASSTHRU_BYTES = 64 * 1024;
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const METHOD_NAME = /^[A-Za-z0-9_.-]{1,255}$/;

type Call = { Params: { ident: string; method?: string }; Querystring: { method?: string } };

/** The method named by the path or `?method=`; 400 when none or malformed (Ironic: "Method not specified"). */
function methodOf(request: FastifyRequest<Call>): string {
  const method = request.params.method ?? request.query.method;
  if (method === undefined || method === '') throw new InvalidParameter('method: not specified; name the vendor method in the path or as ?method=');
  if (!METHOD_NAME.test(method)) throw new InvalidParameter(`method: ${JSON.stringify(method.slice(0, 300))} is not a vendor method name`);
  return method;
}

/** The call's arguments: the JSON body (an object), `{}` without one; bounded in depth and size. */
function argsOf(request: FastifyRequest, config: Config): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object of the vendor method\'s arguments');
  checkJsonDocument(body, { maxDepth: config.api.max_json_depth, source: '[api] max_json_depth' });
  if (Buffer.byteLength(JSON.stringify(body)) > MAX_PASSTHRU_BYTES) throw new InvalidParameter(`request body: vendor method arguments are limited to ${MAX_PASSTHRU_BYTES} bytes of JSON`);
  return body as Record<string, unknown>;
}

function answer(reply: FastifyReply, result: { async: boolean; return: unknown }) {
  if (result.async) return reply.code(202).send();
  return reply.code(200).type('application/json; charset=utf-8').send(JSON.stringify(result.return ?? null));
}

export function vendorPassthruRoutes(app: FastifyInstance, options: { store: Store; config: Config; router: ConductorRouter; drivers: DriverRegistry }): void {
  const { store, config, router, drivers } = options;

  app.get<{ Params: { ident: string } }>('/v1/nodes/:ident/vendor_passthru/methods', async (request) => {
    const node = await getNode(store, request.params.ident);
    return router.call(node, 'GET', 'vendor_methods');
  });

  const callNode = async (request: FastifyRequest<Call>, reply: FastifyReply) => {
    const method = methodOf(request);
    const args = argsOf(request, config);
    const node = await getNode(store, request.params.ident);
    const result = await router.call<{ async: boolean; return: unknown }>(node, 'POST', 'vendor_passthru', { method, http_method: request.method, data: args });
    return answer(reply, result);
  };
  for (const url of ['/v1/nodes/:ident/vendor_passthru', '/v1/nodes/:ident/vendor_passthru/:method']) {
    app.route<Call>({ method: [...HTTP_METHODS], url, handler: callNode });
  }

  /** The default vendor interface of a hardware type some live conductor serves; 404 for none. */
  async function driverVendor(name: string): Promise<{ vendorName: string; vendor: VendorInterface | undefined }> {
    const live = (await listConductors(store, config.conductor.heartbeat_timeout)).filter((c) => c.alive);
    const info = (await listServedHardwareTypes(store, live)).find((d) => d.name === name);
    if (!info) throw new NotFound(`driver ${name} could not be found`);
    const vendorName = info.interfaces.vendor?.default ?? 'no-vendor';
    return { vendorName, vendor: drivers.vendorInterface(vendorName) };
  }

  app.get<{ Params: { ident: string } }>('/v1/drivers/:ident/vendor_passthru/methods', async (request) => {
    const { vendor } = await driverVendor(request.params.ident);
    return { ...(vendor?.driverMethods() ?? {}) };
  });

  const callDriver = async (request: FastifyRequest<Call>, reply: FastifyReply) => {
    const method = methodOf(request);
    const args = argsOf(request, config);
    const driver = request.params.ident;
    const { vendorName, vendor } = await driverVendor(driver);
    if (vendor === undefined || vendorName === 'no-vendor') throw new UnsupportedDriverExtension(driver, 'vendor', vendorName);
    const methods = vendor.driverMethods();
    const found = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (found === undefined) throw new InvalidParameter(`method: no handler for method ${JSON.stringify(method)}; driver ${driver} has ${Object.keys(methods).join(', ') || 'no driver vendor methods'}`);
    if (!found.http_methods.includes(request.method)) throw new InvalidParameter(`The method ${method} does not support HTTP ${request.method}; it takes ${found.http_methods.join(', ')}`);
    const value = await vendor.callDriver(driver, method, request.method, args);
    return answer(reply, { async: false, return: value });
  };
  for (const url of ['/v1/drivers/:ident/vendor_passthru', '/v1/drivers/:ident/vendor_passthru/:method']) {
    app.route<Call>({ method: [...HTTP_METHODS], url, handler: callDriver });
  }
}
