/**
 * `ironring chassis list|show|create|set|unset|delete` against a listening API with its conductor
 * in this process, through the same main() that bin/ironring runs: table and JSON output, the
 * API's refusals as one line and exit code 1, a usage error as exit code 2.
 */
import { describe, expect, it } from 'vitest';
import { useCliApi } from '../helpers/cli-in-process.js';

describe('ironring chassis commands', () => {
  const env = useCliApi();
  const cli = (...args: string[]) => env.run('chassis', ...args);
  const json = <T = Record<string, unknown>>(...args: string[]) => env.json<T>('chassis', ...args);

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
    const res = await env.api().app.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { driver: 'fake-hardware', chassis_uuid: full } });
    expect(res.statusCode, res.body).toBe(201);

    const refused = await cli('delete', full);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`ironring: 400 from ${env.url()}/v1/chassis/${full}: cannot complete the requested action because chassis ${full} contains nodes\n`);
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
