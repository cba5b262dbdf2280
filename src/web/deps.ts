/**
 * What the dashboard's pages need from the API process: the same store, configuration, conductor
 * rings, router and drivers the API routes use, and the compute stores where this API serves them.
 */
import type { FastifyInstance } from 'fastify';
import type { ComputeStores } from '../cells/compute-stores.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';
import type { DriverRegistry } from '../drivers/index.js';
import type { EventHub } from './sse.js';

export interface WebDeps {
  store: Store;
  config: Config;
  logger: Logger;
  rings: ConductorRings;
  drivers: DriverRegistry;
  compute?: ComputeStores;
  /** The dashboard's event stream: publish events, or watch for changes to send them (src/web/sse.ts). */
  events: EventHub;
}

/** A page module: registers its GET routes (and htmx fragments) under `/ui/…`. */
export type PageModule = (app: FastifyInstance, deps: WebDeps) => void;
