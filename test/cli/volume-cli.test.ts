/**
 * `ironring volume connector|target list|show|create|set|unset|delete` against a listening API with
 * its conductor in this process, through the same main() that bin/ironring runs: table and JSON
 * output, the API's refusals (a powered-on node) as one line and exit code 1, usage errors as 2.
 */
import { describe, expect, it } from 'vitest';
import { useCliApi } from '../helpers/cli-in-process.js';

describe('ironring volume commands', () => {
  const env = useCliApi();
  const cli = (...args: string[]) => env.run('volume', ...args);
  const json = <T = Record<string, unknown>>(...args: string[]) => env.json<T>('volume', ...args);

  /** A node with the given power state (set in the database: no conductor timing). */
  async function node(power: string): Promise<string> {
    const res = await env.api().app.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { driver: 'fake-hardware' } });
    expect(res.statusCode, res.body).toBe(201);
    const uuid = (res.json() as { uuid: string }).uuid;
    await env.store().db.updateTable('nodes').set({ power_state: power }).where('uuid', '=', uuid).execute();
    return uuid;
  }

  it('creates, shows, lists, changes and deletes a volume connector', async () => {
    const n1 = await node('power off');
    const made = await json('connector', 'create', '--node', n1, '--type', 'iqn', '--connector-id', 'iqn.2024-01.org.example:n1', '--extra', 'a=1', '--extra', 'b=x');
    expect(made).toMatchObject({ node_uuid: n1, type: 'iqn', connector_id: 'iqn.2024-01.org.example:n1', extra: { a: 1, b: 'x' } });
    const uuid = made.uuid as string;
    expect(await json('connector', 'show', uuid)).toEqual(made);
    const table = await cli('connector', 'show', uuid);
    expect(table.stdout).toMatch(/│ connector_id +│ iqn\.2024-01\.org\.example:n1 +│/);
    expect(table.stdout).not.toMatch(/bookmark/);
    expect((await cli('connector', 'list')).stdout).toMatch(new RegExp(`│ ${uuid} +│ ${n1} +│ iqn +│ iqn\\.2024`));
    expect((await json<Array<{ uuid: string }>>('connector', 'list', '--node', n1)).map((c) => c.uuid)).toEqual([uuid]);
    expect((await cli('connector', 'list', '--long')).stdout).toMatch(/Extra.*Created At.*Updated At/);
    expect(await json('connector', 'set', uuid, '--type', 'ip', '--connector-id', '10.0.0.5', '--extra', 'a=2')).toMatchObject({ type: 'ip', connector_id: '10.0.0.5', extra: { a: 2, b: 'x' } });
    expect(await json('connector', 'unset', uuid, '--extra', 'b')).toMatchObject({ extra: { a: 2 } });
    const deleted = await cli('connector', 'delete', uuid);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe(`Deleted volume connector ${uuid}\n`);
    expect(await json('connector', 'list')).toEqual([]);
  });

  it('creates, changes and deletes a volume target, and prints refusals and usage errors as one line', async () => {
    const on = await node('power on');
    const made = await json('target', 'create', '--node', on, '--type', 'iscsi', '--volume-id', 'vol-1', '--boot-index', '0', '--properties', 'target_lun=1');
    expect(made).toMatchObject({ node_uuid: on, volume_type: 'iscsi', volume_id: 'vol-1', boot_index: 0, properties: { target_lun: 1 } });
    const uuid = made.uuid as string;
    expect((await cli('target', 'list')).stdout).toMatch(new RegExp(`│ ${uuid} +│ ${on} +│ iscsi +│ 0 +│ vol-1 +│`));

    const refused = await cli('target', 'set', uuid, '--boot-index', '1');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`ironring: 400 from ${env.url()}/v1/volume/targets/${uuid}: The requested action "volume target update" can not be performed on node "${on}" while it is in state "power on".\n`);
    const missing = await cli('target', 'show', '00000000-0000-4000-8000-000000000000');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^ironring: 404 from .*: Volume target 00000000-0000-4000-8000-000000000000 could not be found\.\n$/);
    const badType = await cli('connector', 'create', '--node', on, '--type', 'scsi', '--connector-id', 'x');
    expect(badType.code).toBe(1);
    expect(badType.stderr).toMatch(/type: expected one of iqn, ip, mac, wwnn, wwpn, port, portgroup, got "scsi"/);

    expect((await cli('target', 'set', uuid)).stderr).toBe('ironring: volume target set: name at least one field to change\n');
    const noIndex = await cli('target', 'create', '--node', on, '--type', 'iscsi', '--volume-id', 'v');
    expect(noIndex.code).toBe(2);
    expect(noIndex.stderr).toBe('ironring: volume target create: --boot-index is required\n');
    expect((await cli('target', 'create', '--node', on, '--type', 'iscsi', '--volume-id', 'v', '--boot-index', 'one')).stderr).toMatch(/^ironring: --boot-index: expected an integer/);

    await env.store().db.updateTable('nodes').set({ power_state: 'power off' }).where('uuid', '=', on).execute();
    expect(await json('target', 'set', uuid, '--boot-index', '1', '--volume-id', 'vol-2')).toMatchObject({ boot_index: 1, volume_id: 'vol-2' });
    expect(await json('target', 'unset', uuid, '--properties', 'target_lun')).toMatchObject({ properties: {} });
    expect((await cli('target', 'delete', uuid)).stdout).toBe(`Deleted volume target ${uuid}\n`);
  });
});
