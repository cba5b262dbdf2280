/**
 * An app with the ring, conductors, timeline and compute pages on a test database, for rendering
 * tests through `app.inject`: the page modules alone (no API routes), with the conductors' rings as
 * the API builds them, and an event hub that only records what the pages ask of it.
 */
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach } from 'vitest';
import type { ComputeStores } from '../../src/cells/compute-stores.js';
import { conductorRings } from '../../src/cluster/conductor-rings.js';
import type { ConductorRings } from '../../src/cluster/conductor-rings.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/options.js';
import type { Store } from '../../src/db/connect.js';
import type { DriverRegistry } from '../../src/drivers/index.js';
import type { WebDeps } from '../../src/web/deps.js';
import { computePages } from '../../src/web/pages/compute.js';
import { conductorPages } from '../../src/web/pages/conductors.js';
import { ringPages } from '../../src/web/pages/ring.js';
import { timelinePages } from '../../src/web/pages/timeline.js';
import type { EventHub } from '../../src/web/sse.js';

export interface PagesApp {
  app(): FastifyInstance;
  config(): Config;
  /** Events the pages watch, by name. */
  watched(): Map<string, () => Promise<string>>;
  get(url: string): Promise<{ status: number; body: string }>;
}

/** Starts the pages on `db.store` before each test; `env` are IRONRING_* settings. */
export function usePagesApp(db: { readonly store: Store }, env: Record<string, string> = {}, compute?: () => ComputeStores): PagesApp {
  let app: FastifyInstance;
  let config: Config;
  let rings: ConductorRings;
  let watched: Map<string, () => Promise<string>>;
  beforeEach(async () => {
    config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth', ...env } }).config;
    const logger = createLogger({ level: 'silent', pretty: false });
    rings = conductorRings(db.store, config.conductor, { logger, pollIntervalMs: 0, maxAgeMs: 0 });
    watched = new Map();
    const events: EventHub = { publish: () => undefined, watch: (name, fp) => void watched.set(name, fp), streams: 0 };
    const stores = compute?.();
    const deps: WebDeps = { store: db.store, config, logger, rings, drivers: {} as DriverRegistry, events, ...(stores ? { compute: stores } : {}) };
    app = Fastify();
    for (const module of [ringPages, conductorPages, timelinePages, computePages]) module(app, deps);
    await app.ready();
  });
  afterEach(async () => {
    await app.close();
    await rings.stop();
  });
  return {
    app: () => app,
    config: () => config,
    watched: () => watched,
    async get(url) {
      const res = await app.inject({ method: 'GET', url });
      return { status: res.statusCode, body: res.body };
    },
  };
}

/** The text of an HTML fragment with tags removed and whitespace collapsed (for reading numbers). */
export function textOf(htmlText: string): string {
  return htmlText.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
}
