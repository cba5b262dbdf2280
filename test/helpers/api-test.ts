/**
 * What the API tests of one resource share: the patterns of a uuid and of a timestamp as the API
 * shows them, the text of an Ironic-style error body, microversion headers, and an in-process API
 * (its conductor in this process) started before each test on the test's migrated database.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, expect } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { loadConfig } from '../../src/config/load.js';
import type { DriverRegistry } from '../../src/drivers/registry.js';
import type { Store } from '../../src/db/connect.js';
import { startInProcessApi } from './in-process-api.js';

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A timestamp as the API shows it (Ironic's: seconds, `+00:00`). */
export const TIME_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

export type Json = Record<string, unknown>;

/** The microversion header for `version` (`'1.52'`, `'latest'`). */
export const at = (version: string): Record<string, string> => ({ 'x-openstack-ironic-api-version': version });
export const LATEST = at('latest');

/** The `faultstring` of an error body (Ironic's: JSON inside `error_message`). */
export function fault(body: string): string {
  return (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiUnderTest {
  app(): FastifyInstance;
  /** The in-process conductor's operations (their `running` work is awaited after each test). */
  ops(): NodeOperations;
  /** A request with `headers` (the default given to `useInProcessApi` when left out). */
  send(method: Method, url: string, payload?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  get(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** A POST that must answer 201; its body. */
  made(url: string, body: Json, headers?: Record<string, string>): Promise<Json>;
}

/**
 * Registers a beforeEach that starts the API on `db.store` with `env` as its settings (noauth
 * JSON-RPC unless `env` says otherwise) and `drivers()` as its hardware (the built-in types when
 * left out), and an afterEach that lets the conductor's work end and closes it. Call it after
 * `useMigratedDatabase`, whose store it needs.
 */
export function useInProcessApi(db: { readonly store: Store }, env: Record<string, string> = {}, headers: Record<string, string> = LATEST, drivers?: () => DriverRegistry): ApiUnderTest {
  let app: FastifyInstance;
  let ops: NodeOperations;
  let close: () => Promise<void>;
  beforeEach(async () => {
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth', ...env } }).config;
    ({ app, ops, close } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false }), drivers?.()));
  });
  afterEach(() => close());
  const send = (method: Method, url: string, payload?: unknown, h: Record<string, string> = headers) =>
    app.inject({ method, url, headers: h, ...(payload !== undefined ? { payload: payload as object } : {}) });
  return {
    app: () => app,
    ops: () => ops,
    send,
    get: (url, h) => send('GET', url, undefined, h),
    async made(url, body, h) {
      const res = await send('POST', url, body, h);
      expect(res.statusCode, res.body).toBe(201);
      return res.json() as Json;
    },
  };
}
