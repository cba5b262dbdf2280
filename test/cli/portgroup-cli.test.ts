/**
 * `ironring portgroup list|show|create|set|unset|delete` and `ironring port create --port-group`
 * against a listening API with its conductor in this process, through the same main() that
 * bin/ironring runs: table and JSON output, the API's refusals as one line and exit code 1, a
 * usage error as exit code 2; and `port show|delete` by MAC address, which the API (finding ports by
 * uuid only, as Ironic's) answers through `?address=`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useCliApi } from '../helpers/cli-in-process.js';

describe('ironring portgroup commands', () => {
  const env = useCliApi();
  const cli = (...args: string[]) => env.run('portgroup', ...args);
  /** `json('port', …)` runs `ironring port …`; anything else is a `portgroup` command. */
  const json = <T = Record<string, unknown>>(...args: string[]) => (args[0] === 'port' ? env.json<T>('port', ...args.slice(1)) : env.json<T>('portgroup', ...args));
  let node: string;

  beforeAll(async () => {
    const res = await env.api().app.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { driver: 'fake-hardware', name: 'pg-node' } });
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
    expect(refused.stderr).toBe(`ironring: 400 from ${env.url()}/v1/portgroups/${uuid}: cannot complete the requested action because portgroup ${uuid} contains ports\n`);
    const gone = await env.run('port', 'delete', '52:54:00:ab:00:02');
    expect(gone.stdout).toBe('Deleted port 52:54:00:ab:00:02\n');
    const noPort = await env.run('port', 'show', '52:54:00:ab:00:02');
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
    expect(dup.stderr).toBe(`ironring: 409 from ${env.url()}/v1/portgroups: a portgroup with name "taken" already exists\n`);
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
