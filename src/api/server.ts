/**
 * The HTTP API process: builds the fastify app (authentication, version discovery, health, metrics,
 * the Ironic resource routes and the compute routes) and binds it, turning bind failures into
 * one-line `ListenError`s.
 */
import { withDefaultVersion } from './unversioned-paths.js';
import swagger from '@fastify/swagger';
import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { conductorRings } from '../cluster/conductor-rings.js';
import { listenFastify } from '../common/listen.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';
import { createDriverRegistry } from '../drivers/index.js';
import type { DriverRegistry } from '../drivers/index.js';
import { clientErrorHandler, frameworkErrors, installErrorHandling } from '../common/http-errors.js';
import { installBasicAuth } from './auth.js';
import { installBodyParsing } from './body-parsing.js';
import { installQueryChecks } from './query.js';
import { BODY_LIMIT } from './json-fields.js';
import type { Microversion } from './microversions.js';
import { MAX_VERSION, MAX_VERSION_HEADER, MIN_VERSION, MIN_VERSION_HEADER, VERSION_HEADER, formatVersion, negotiateVersion } from './microversions.js';
import { agentRoutes } from './routes/agent.js';
import { allocationRoutes } from './routes/allocations.js';
import { chassisRoutes } from './routes/chassis.js';
import { deployTemplateRoutes } from './routes/deploy-templates.js';
import { nodeTraitRoutes } from './routes/node-traits.js';
import { inspectionRuleRoutes } from './routes/inspection-rules.js';
import { computeServerRoutes } from './routes/compute-servers.js';
import type { ComputeStores } from '../cells/compute-stores.js';
import { conductorRoutes } from './routes/conductors.js';
import { driverRoutes } from './routes/drivers.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { nodeActionRoutes } from './routes/node-actions.js';
import { nodeConsoleRaidRoutes } from './routes/node-console-raid.js';
import { nodeBiosRoutes } from './routes/node-bios.js';
import { nodeBootModeRoutes } from './routes/node-boot-mode.js';
import { nodeHistoryRoutes } from './routes/node-history.js';
import { shardRoutes } from './routes/shards.js';
import { nodeRoutes } from './routes/nodes.js';
import { nodeValidateRoutes } from './routes/node-validate.js';
import { ConductorRouter } from './conductor-router.js';
import type { LocalConductor } from './conductor-router.js';
import { portRoutes } from './routes/ports.js';
import { portgroupRoutes } from './routes/portgroups.js';
import { ringRoutes } from './routes/ring.js';
import { rootRoutes } from './routes/root.js';
import { volumeRoutes } from './routes/volume.js';
import { eventRoutes } from './routes/events.js';
import { nodeManagementRoutes } from './routes/node-management.js';
import { nodeVifRoutes } from './routes/node-vifs.js';
import { vendorPassthruRoutes } from './routes/vendor-passthru.js';
import { webRoutes } from '../web/routes.js';

export interface ApiDeps {
  store: Store;
  config: Config;
  logger: Logger;
  /** Hardware types for validation (and the descriptions `/v1/drivers` shows); the built-in catalogue by default. */
  drivers?: DriverRegistry;
  /** The compute tier's databases, when the caller has them open (else opened from config on use). */
  compute?: ComputeStores;
  /** The conductor of this process, called in-process for the nodes it owns (`ironring up`). */
  localConductor?: () => LocalConductor | null;
}

export { BODY_LIMIT };

export function buildApi({ store, config, logger, drivers = createDriverRegistry(), compute, localConductor }: ApiDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger.child({ component: 'api' }) as FastifyBaseLogger,
    disableRequestLogging: true,
    bodyLimit: BODY_LIMIT,
    // A trait may be 255 characters (and 256 must reach the route to get its 400); the router's
    // default of 100 would answer 404 for them.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    rewriteUrl: (req) => withDefaultVersion(req.url ?? '/'),
    clientErrorHandler,
    frameworkErrors,
  });
  installErrorHandling(app);
  // Registered before the routes so that every route lands in the OpenAPI document.
  void app.register(swagger, {
    openapi: {
      info: { title: 'ironring API', description: 'Ironic v1 compatible bare-metal API with ironring extensions', version: formatVersion(MAX_VERSION) },
    },
  });
  // Two levels above a field's own limit: the JSON Patch array and operation around a value.
  installBodyParsing(app, { maxDepth: config.api.max_json_depth + 2, source: `counted from the request body: [api] max_json_depth ${config.api.max_json_depth}, plus 2 for a JSON Patch` });
  // Set for every request by the hook below; fastify wants reference-type decorations to start null.
  app.decorateRequest('apiVersion', null as unknown as Microversion);

  if (config.DEFAULT.auth_strategy === 'http_basic') installBasicAuth(app, config);
  installQueryChecks(app);

  // Microversion negotiation for everything under /v1: the answer always says which range is served.
  app.addHook('onRequest', async (request, reply) => {
    request.apiVersion = MIN_VERSION;
    if (!request.url.startsWith('/v1')) return;
    reply.header(MIN_VERSION_HEADER, formatVersion(MIN_VERSION));
    reply.header(MAX_VERSION_HEADER, formatVersion(MAX_VERSION));
    const raw = request.headers[VERSION_HEADER.toLowerCase()];
    const version = negotiateVersion(Array.isArray(raw) ? raw[0] : raw);
    request.apiVersion = version;
    reply.header(VERSION_HEADER, formatVersion(version));
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  // The conductors' rings, read when a request needs them and kept for at most a second: dropped
  // at once on every membership notification (PostgreSQL) or after any other process's commit
  // (SQLite's change token). The second bounds how late a conductor that stopped heartbeating is
  // seen dead after its heartbeat timeout.
  const rings = conductorRings(store, config.conductor, {
    logger: logger.child({ component: 'api' }),
    pollIntervalMs: 0,
    maxAgeMs: 1000,
  });
  app.addHook('onClose', () => rings.stop());

  // Routes live in a plugin registered after @fastify/swagger, which records routes as they are added.
  void app.register(async (api) => {
    rootRoutes(api, { publicEndpoint: config.api.public_endpoint });
    healthRoutes(api, store);
    metricsRoutes(api, { store, config, rings });
    conductorRoutes(api, { store, heartbeatTimeout: config.conductor.heartbeat_timeout, publicEndpoint: config.api.public_endpoint, maxLimit: config.api.max_limit });
    ringRoutes(api, { store, config, rings });
    nodeRoutes(api, { store, config, drivers, rings });
    const router = new ConductorRouter(config, rings, localConductor);
    nodeActionRoutes(api, { store, config, rings, router });
    nodeConsoleRaidRoutes(api, { store, config, router });
    nodeVifRoutes(api, { store, router });
    nodeManagementRoutes(api, { store, config, router });
    vendorPassthruRoutes(api, { store, config, router, drivers });
    eventRoutes(api);
    nodeBiosRoutes(api, { store, config });
    nodeBootModeRoutes(api, { store, config, router });
    nodeHistoryRoutes(api, { store, config });
    shardRoutes(api, { store });
    agentRoutes(api, { store, config, router, drivers });
    inspectionRuleRoutes(api, { store, config });
    nodeTraitRoutes(api, { store });
    nodeValidateRoutes(api, { store, drivers });
    driverRoutes(api, { store, config, drivers });
    portRoutes(api, { store, config });
    chassisRoutes(api, { store, config });
    deployTemplateRoutes(api, { store, config });
    volumeRoutes(api, { store, config });
    portgroupRoutes(api, { store, config });
    allocationRoutes(api, { store, config });
    void api.register(computeServerRoutes, { config, logger, ...(compute ? { stores: compute } : {}) });
    // The web dashboard under /ui (and `/` for browsers, routes/root.ts), behind the same authentication.
    webRoutes(api, { store, config, logger, rings, drivers, ...(compute ? { compute } : {}) });
  });
  return app;
}

/** Binds the API; resolves to the URL it serves on. */
export function listenApi(app: FastifyInstance, address: string): Promise<string> {
  return listenFastify(app, address, 'API', '--api-address or [api] address');
}
