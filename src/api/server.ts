/**
 * The HTTP API process: builds the fastify app (version discovery, health, and the resource routes
 * later issues add) and binds it, turning bind failures into one-line `ListenError`s.
 */
import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { ListenError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';
import { installErrorHandling } from './errors.js';
import { MAX_VERSION, MAX_VERSION_HEADER, MIN_VERSION, MIN_VERSION_HEADER, VERSION_HEADER, formatVersion, negotiateVersion } from './microversions.js';
import { healthRoutes } from './routes/health.js';
import { rootRoutes } from './routes/root.js';

export interface ApiDeps {
  store: Store;
  config: Config;
  logger: Logger;
}

/** Largest request body accepted; bigger ones get 413. */
export const BODY_LIMIT = 1024 * 1024;

export function buildApi({ store, config, logger }: ApiDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger.child({ component: 'api' }) as FastifyBaseLogger,
    disableRequestLogging: true,
    bodyLimit: BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: true },
  });
  installErrorHandling(app);

  // Microversion negotiation for everything under /v1: the answer always says which range is served.
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1')) return;
    reply.header(MIN_VERSION_HEADER, formatVersion(MIN_VERSION));
    reply.header(MAX_VERSION_HEADER, formatVersion(MAX_VERSION));
    const raw = request.headers[VERSION_HEADER.toLowerCase()];
    const version = negotiateVersion(Array.isArray(raw) ? raw[0] : raw);
    reply.header(VERSION_HEADER, formatVersion(version));
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  rootRoutes(app, { publicEndpoint: config.api.public_endpoint });
  healthRoutes(app, store);
  return app;
}

/** Splits `host:port` (IPv6 in brackets) into its parts. */
export function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(i + 1)) };
}

/** Binds the API; resolves to the URL it serves on. */
export async function listenApi(app: FastifyInstance, address: string): Promise<string> {
  const { host, port } = splitAddress(address);
  try {
    await app.listen({ host, port });
  } catch (err) {
    throw listenError(err, address, 'API', '--api-address or [api] address');
  }
  const bound = app.server.address();
  const actualPort = typeof bound === 'object' && bound ? bound.port : port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return `http://${shownHost}:${actualPort}`;
}

/** One line saying which address could not be bound, why, and which option changes it. */
export function listenError(err: unknown, address: string, what: string, option: string): ListenError {
  const code = (err as NodeJS.ErrnoException).code;
  const reason =
    code === 'EADDRINUSE'
      ? 'address already in use'
      : code === 'EACCES'
        ? 'permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)'
        : code === 'EADDRNOTAVAIL'
          ? 'address not available on this host'
          : (err as Error).message;
  return new ListenError(`cannot listen for the ${what} on ${address}: ${reason} (change it with ${option})`, { cause: err });
}
