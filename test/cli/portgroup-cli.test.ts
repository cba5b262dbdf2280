/**
 * `ironring portgroup list|show|create|set|unset|delete` and `ironring port create --port-group`
 * against a listening API with its conductor in this process, through the same main() that
 * bin/ironring runs: table and JSON output, the API's refusals as one line and exit code 1, a
 * usage error as exit code 2; and `port show|delete` by MAC address, which the API (finding ports by
 * uuid only, as Ironic's) answers through `?address=`.
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

describe('ironring portgroup commands', () => {
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

  /** `ironring <command> <args> --url <api>` in this process: exit code and output. */
  async function run(command: string, ...args: string[]): Promise<Run> {
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
      return { code: await main(['node', 'ironring', command, ...args, '--url', url]), stdout, stderr };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  }
  const cli = (...args: string[]) => run('portgroup', ...args);
  async function json<T = Record<string, unknown>>(...args: string[]): Promise<T> {
    const res = await run(args[0] === 'port' ? 'port' : 'portgroup', ...(args[0] === 'port' ? args.slice(1) : args), '--format', 'json');
    expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(0);
    return JSON.parse(res.stdout) as T;
  }
  let node: string;

  beforeAll(async () => {
    const res = await api.app.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { driver: 'fake-hardware', name: 'pg-node' } });
    expect(res.statusCode, res.body).toBe(201);
    node = (res.json() as { uuid: string }).uuid;
  });

  it('creates, shows, lists, changes and deletes a port group, and puts a port in it', async () => {
    const made = await json('create', '--node', 'pg-node', '--name', 'bond0', '--address', '52:54:00:ab:00:01', '--mode', '802.3ad', '--property', 'miimon=100', '--extra', 'row=a', '--unsupport-standalone-ports');
    expect(made).toMatchObject({ name: 'bond0', address: '52:54:00:ab:00:01', node_uuid: node, mode: '802.3ad', properties: { miimon: 100 }, extra: { row: 'a' }, standalone_ports_supported: false });
    const uuid = made.uuid as string;
    expect(await json('show', 'bond0')).toEqual(made);
    const table = await cli('show', uuid);
    expect(table.stdout).toMatch(/│ mode +│ 802\.3ad +│/);
    expect(table.stdout).not.toMatch(/links|bookmark/);

    const given = '5e0c9f6e-2a34-4a77-9d0e-0f7b1a2b3c4e';
    expect(await json('create', '--node', node, '--uuid', given)).toMatchObject({ uuid: given, name: null, address: null, mode: 'active-backup', standalone_ports_supported: true });
    expect((await json<Array<{ uuid: string }>>('list')).map((g) => g.uuid)).toEqual([uuid, given]);
    expect((await json<Array<{ uuid: string }>>('list', '--address', '52-54-00-AB-00-01')).map((g) => g.uuid)).toEqual([uuid]);
    expect((await cli('list', '--node', 'pg-node')).stdout).toMatch(new RegExp(`│ ${uuid} +│ 52:54:00:ab:00:01 +│ bond0 +│`));
    expect((await cli('list', '--long')).stdout).toMatch(/Node UUID.*Mode.*Standalone Ports Supported.*Properties.*Extra/);

    expect(await json('set', 'bond0', '--name', 'bond1', '--mode', 'balance-rr', '--extra', 'row=b', '--support-standalone-ports')).toMatchObject({ name: 'bond1', mode: 'balance-rr', extra: { row: 'b' }, standalone_ports_supported: true });
    expect(await json('unset', 'bond1', '--address', '--extra', 'row', '--property', 'miimon')).toMatchObject({ address: null, extra: {}, properties: {} });

    const port = await json('port', 'create', '52:54:00:ab:00:02', '--node', 'pg-node', '--port-group', 'bond1');
    expect(port).toMatchObject({ address: '52:54:00:ab:00:02', portgroup_uuid: uuid });
    // The API finds ports by uuid only: the command looks a MAC address up first.
    expect(await json('port', 'show', '52:54:00:AB:00:02')).toMatchObject({ uuid: port.uuid, portgroup_uuid: uuid });
    const refused = await cli('delete', uuid);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`ironring: 400 from ${url}/v1/portgroups/${uuid}: cannot complete the requested action because portgroup ${uuid} contains ports\n`);
    const gone = await run('port', 'delete', '52:54:00:ab:00:02');
    expect(gone.stdout).toBe('Deleted port 52:54:00:ab:00:02\n');
    const noPort = await run('port', 'show', '52:54:00:ab:00:02');
    expect(noPort.code).toBe(1);
    expect(noPort.stderr).toMatch(/port 52:54:00:ab:00:02 could not be found/);

    const deleted = await cli('delete', 'bond1', given);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe(`Deleted port group bond1\nDeleted port group ${given}\n`);
    expect(await json('list')).toEqual([]);
  });

  it("prints the API's refusals as one line with exit code 1, and a command without changes as a usage error", async () => {
    await json('create', '--node', node, '--name', 'taken');
    const dup = await cli('create', '--node', node, '--name', 'taken');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe(`ironring: 409 from ${url}/v1/portgroups: a portgroup with name "taken" already exists\n`);
    const badMac = await cli('set', 'taken', '--address', 'zz');
    expect(badMac.code).toBe(1);
    expect(badMac.stderr).toMatch(/^ironring: 400 from .*: \/address: "zz" is not a valid MAC address\n$/);
    const missing = await cli('show', 'nowhere');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^ironring: 404 from .*: portgroup nowhere could not be found\n$/);
    const nothing = await cli('set', 'taken');
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toBe('ironring: portgroup set: name at least one field to change\n');
    const both = await cli('create', '--node', node, '--support-standalone-ports', '--unsupport-standalone-ports');
    expect(both.code).toBe(2);
  });
});
