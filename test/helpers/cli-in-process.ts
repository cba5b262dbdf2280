/**
 * Running `ironring` commands through the same main() that bin/ironring runs, in this process, with
 * stdout and stderr captured — and, for the commands that talk to the API, a listening API with its
 * conductor in this process on a fresh SQLite database (`useCliApi`).
 */
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createTestDatabase } from './databases.js';
import type { TestDatabase } from './databases.js';
import { startInProcessApi } from './in-process-api.js';
import type { InProcessApi } from './in-process-api.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `ironring <args>` run by main() in this process: its exit code and what it wrote. */
export async function runMain(args: readonly string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  });
  try {
    return { code: await main(['node', 'ironring', ...args]), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

export interface CliApi {
  /** The in-process API (for set-up through `api().app.inject`). */
  api(): InProcessApi;
  /** Its database, for set-up a route cannot do (a node's power state). */
  store(): Store;
  /** Where it listens (`http://127.0.0.1:…`). */
  url(): string;
  /** `ironring <command> <args> --url <api>`. */
  run(command: string, ...args: string[]): Promise<CliRun>;
  /** The same with `--format json`, expected to succeed; its output parsed. */
  json<T = Record<string, unknown>>(command: string, ...args: string[]): Promise<T>;
}

/**
 * Registers beforeAll/afterAll that start a listening API (noauth JSON-RPC, its conductor in this
 * process) on a fresh migrated SQLite database and take it down again.
 */
export function useCliApi(): CliApi {
  let target: TestDatabase;
  let store: Store;
  let api: InProcessApi;
  let url: string;

  beforeAll(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    api = await startInProcessApi(store, config, createLogger({ level: 'silent', pretty: false }));
    url = await api.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await api.close();
    await store.close();
    await target.drop();
  });

  const run = (command: string, ...args: string[]) => runMain([command, ...args, '--url', url]);
  return {
    api: () => api,
    store: () => store,
    url: () => url,
    run,
    async json<T = Record<string, unknown>>(command: string, ...args: string[]): Promise<T> {
      const res = await run(command, ...args, '--format', 'json');
      expect(res.code, `${command} ${args.join(' ')}: ${res.stderr}`).toBe(0);
      return JSON.parse(res.stdout) as T;
    },
  };
}
