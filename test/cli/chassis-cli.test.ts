/**
 * `ironring chassis list|show|create|set|unset|delete` against a listening API with its conductor
 * in this process, through the same main() that bin/ironring runs: table and JSON output, the
 * API's refusals as one line and exit code 1, a usage error as exit code 2.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';
import type { InProcessApi } from '../helpers/in-process-api.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('ironring chassis commands', () => {
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

  /** `ironring chassis <args> --url <api>` in this process: exit code and output. */
  async function cli(...args: string[]): Promise<Run> {
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
      return { code: await main(['node', 'ironring', 'chassis', ...args, '--url', url]), stdout, stderr };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  }
  async function json<T = Record<string, unknown>>(...args: string[]): Promise<T> {
    const res = await cli(...args, '--format', 'json');
    expect(res.code, `chassis ${args.join(' ')}: ${res.stderr}`).toBe(0);
    return JSON.parse(res.stdout) as T;
  }

  it('creates, shows, lists, changes and deletes a chassis', async () => {
    const made = await json('create', '--description', 'rack 1', '--extra', 'row=a', '--extra', 'pdus=2');
    expect(made).toMatchObject({ description: 'rack 1', extra: { row: 'a', pdus: 2 } });
    const uuid = made.uuid as string;
    expect(await json('show', uuid)).toEqual(made);

    const table = await cli('show', uuid);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/│ description +│ rack 1 +│/);
    expect(table.stdout).not.toMatch(/links|bookmark/);

    const given = '5e0c9f6e-2a34-4a77-9d0e-0f7b1a2b3c4d';
    expect(await json('create', '--uuid', given)).toMatchObject({ uuid: given, description: null, extra: {} });
    expect((await json<Array<{ uuid: string }>>('list')).map((c) => c.uuid)).toEqual([uuid, given]);
    const list = await cli('list');
    expect(list.stdout).toMatch(new RegExp(`│ ${uuid} +│ rack 1 +│`));
    expect((await cli('list', '--long')).stdout).toMatch(/Extra.*Created At.*Updated At/);

    expect(await json('set', uuid, '--description', 'rack 1, row a', '--extra', 'pdus=3')).toMatchObject({ description: 'rack 1, row a', extra: { row: 'a', pdus: 3 } });
    expect(await json('unset', uuid, '--description', '--extra', 'row')).toMatchObject({ description: null, extra: { pdus: 3 } });

    const deleted = await cli('delete', uuid, given);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe(`Deleted chassis ${uuid}\nDeleted chassis ${given}\n`);
    expect(await json('list')).toEqual([]);
  });

  it("prints the API's refusals as one line with exit code 1, and a command without changes as a usage error", async () => {
    const full = (await json('create', '--description', 'full')).uuid as string;
    const res = await api.app.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { driver: 'fake-hardware', chassis_uuid: full } });
    expect(res.statusCode, res.body).toBe(201);

    const refused = await cli('delete', full);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`ironring: 400 from ${url}/v1/chassis/${full}: cannot complete the requested action because chassis ${full} contains nodes\n`);
    const tooLong = await cli('set', full, '--description', 'x'.repeat(256));
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toMatch(/^ironring: 400 from .*: \/description: expected a string of at most 255 characters/);
    const missing = await cli('show', '00000000-0000-4000-8000-000000000000');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^ironring: 404 from .*: chassis 00000000-0000-4000-8000-000000000000 could not be found\n$/);

    const nothing = await cli('set', full);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toBe('ironring: chassis set: name at least one field to change\n');
    const badExtra = await cli('create', '--extra', 'novalue');
    expect(badExtra.code).toBe(2);
    expect(badExtra.stderr).toMatch(/^ironring: --extra: expected key=value/);
  });
});
