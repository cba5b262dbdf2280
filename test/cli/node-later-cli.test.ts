/**
 * `ironring node set/unset/list` with the fields of API 1.61–1.82 (`--retired`, `--retired-reason`,
 * `--lessee`, `--network-data`, `--shard`), `ironring node history list|show`, `node boot-mode set`,
 * `node secure-boot on|off` and `ironring shard list`, against a listening API with its conductor in
 * this process: JSON and table output, the API's refusals as one line with exit code 1.
 */
import { describe, expect, it } from 'vitest';
import { useCliApi } from '../helpers/cli-in-process.js';

describe('ironring node commands of API 1.61–1.82', () => {
  const env = useCliApi();
  const cli = (...args: string[]) => env.run('node', ...args);
  const json = <T = Record<string, unknown>>(...args: string[]) => env.json<T>('node', ...args);
  const settle = () => Promise.allSettled([...env.api().ops.running]);
  const names = async (...args: string[]) => (await json<Array<{ name: string }>>('list', ...args)).map((n) => n.name).sort();

  it('sets, filters on and unsets retired, lessee, network data and shard', async () => {
    await json('create', '--driver', 'fake-hardware', '--name', 'c1');
    await json('create', '--driver', 'fake-hardware', '--name', 'c2');
    await env.store().db.updateTable('nodes').set({ provision_state: 'manageable' }).execute();
    const networkData = JSON.stringify({ links: [], networks: [], services: [{ type: 'dns', address: '192.0.2.53' }] });
    const set = await json('set', 'c1', '--retired', '--retired-reason', 'EOL', '--lessee', 'team-b', '--shard', 'r1', '--network-data', networkData);
    expect(set).toMatchObject({ retired: true, retired_reason: 'EOL', lessee: 'team-b', shard: 'r1', network_data: JSON.parse(networkData) });
    expect(await names('--retired')).toEqual(['c1']);
    expect(await names('--no-retired')).toEqual(['c2']);
    expect(await names('--lessee', 'team-b')).toEqual(['c1']);
    expect(await names('--project', 'team-b')).toEqual(['c1']);
    expect(await names('--shard', 'R1,r2')).toEqual(['c1']);
    expect(await names('--sharded')).toEqual(['c1']);
    expect(await names('--unsharded')).toEqual(['c2']);

    const bad = await cli('set', 'c2', '--retired-reason', 'no');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/retired_reason: can only be set when retired is True/);
    const notJson = await cli('set', 'c2', '--network-data', '{links');
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/--network-data: not JSON/);

    const unset = await json('unset', 'c1', '--retired', '--lessee', '--shard', '--network-data');
    expect(unset).toMatchObject({ retired: false, retired_reason: null, lessee: null, shard: null, network_data: {} });
  });

  it('lists and shows history, changes the boot mode, lists shards', async () => {
    await json('create', '--driver', 'fake-hardware', '--name', 'h1');
    await json('set', 'h1', '--shard', 'rack-9');
    expect((await cli('boot-mode', 'set', 'h1', 'uefi')).stdout).toBe('Requested boot mode uefi for node h1\n');
    await settle();
    expect((await cli('secure-boot', 'on', 'h1')).code).toBe(0);
    await settle();
    expect(await json('show', 'h1')).toMatchObject({ boot_mode: 'uefi', secure_boot: true });
    expect((await cli('boot-mode', 'set', 'h1', 'legacy')).code).toBe(2);

    const events = await json<Array<{ uuid: string; event: string }>>('history', 'list', 'h1');
    expect(events.map((e) => e.event)).toEqual(['boot mode is uefi', 'secure boot state is true']);
    expect((await cli('history', 'list', 'h1', '--long')).stdout).toMatch(/Event Type.*Conductor.*User/);
    expect(await json('history', 'show', 'h1', events[0]!.uuid)).toMatchObject({ event_type: 'management', conductor: 'aio', event: 'boot mode is uefi' });

    const shards = await env.json<Array<{ name: string; count: number }>>('shard', 'list');
    expect(shards).toContainEqual({ name: 'rack-9', count: 1 });
    expect((await env.run('shard', 'list')).stdout).toMatch(/│ rack-9 +│ 1 +│/);
  });
});
