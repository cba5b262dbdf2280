/**
 * An API app (`buildApi`, no conductor) behind `http_basic` for the tests of authentication: a
 * fresh directory with an htpasswd file holding `admin` / `s3cret`, a migrated SQLite database in
 * it, started before the file's tests and removed after them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';

/** An `Authorization` header value for HTTP Basic. */
export const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export interface BasicAuthApi {
  readonly app: FastifyInstance;
  readonly store: Store;
  /** The test's directory (the htpasswd file and the database are in it). */
  readonly dir: string;
  /** The htpasswd file: `admin` with password `s3cret`. */
  readonly usersFile: string;
}

/** Registers the beforeAll/afterAll that start and remove it; `name` names the temporary directory. */
export function useBasicAuthApi(name: string): BasicAuthApi {
  const state = {} as { -readonly [K in keyof BasicAuthApi]: BasicAuthApi[K] };
  beforeAll(async () => {
    state.dir = mkdtempSync(path.join(tmpdir(), `ironring-${name}-`));
    state.usersFile = path.join(state.dir, 'htpasswd');
    writeFileSync(state.usersFile, `# API users\nadmin:${bcrypt.hashSync('s3cret', 4)}\n`);
    state.store = await openDatabase(`sqlite://${path.join(state.dir, 'api.db')}`);
    await migrateDatabase(state.store);
    const config = loadConfig({ env: { IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: state.usersFile } }).config;
    state.app = buildApi({ store: state.store, config, logger: createLogger({ level: 'silent', pretty: false }) });
  });
  afterAll(async () => {
    await state.app?.close();
    await state.store?.close();
    if (state.dir) rmSync(state.dir, { recursive: true, force: true });
  });
  return state;
}
