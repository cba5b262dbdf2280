/**
 * The stock OpenStack `baremetal` client (Debian `python3-ironicclient` 5.0, which speaks up to API
 * 1.78) against a real `ironring up`, for the node fields and sub-resources of API 1.61–1.78:
 * `node set/unset --retired --retired-reason`, `--lessee`, `--network-data`, `node list --retired
 * --lessee`, a refused `node provide` of a retired node, `node boot mode set`, `node secure boot
 * on`, `node history list [--long]` and `node history get`. Shards (1.82) are past the client's
 * version: `GET /v1/shards` and `?shard=` are asked of the API directly.
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

type Row = Record<string, unknown>;

describe.skipIf(!stockClientAvailable)('the stock baremetal client with node fields of API 1.61–1.82 against ironring up', () => {
  const { baremetal, ok, json, endpoint } = useStockClient('baremetal-node-fields');
  let uuid = '';

  it('retires a node, refuses to provide it, and lists by retired and lessee', async () => {
    const created = await json('node', 'create', '--driver', 'fake-hardware', '--name', 'old-1');
    uuid = created.uuid as string;
    expect(created).toMatchObject({ lessee: null, retired: false, retired_reason: null, network_data: {}, boot_mode: null, secure_boot: null });
    await ok('node', 'set', 'old-1', '--lessee', 'team-b');
    await json('node', 'create', '--driver', 'fake-hardware', '--name', 'new-1');
    expect(await ok('node', 'manage', 'old-1', '--wait', '30')).toContain('Waiting for provision state manageable');

    await ok('node', 'set', 'old-1', '--retired', '--retired-reason', 'end of life');
    expect(await json('node', 'show', 'old-1', '-c', 'retired', '-c', 'retired_reason', '-c', 'lessee')).toEqual({ retired: true, retired_reason: 'end of life', lessee: 'team-b' });
    const [retired, notRetired, leased] = await Promise.all([
      json<Row[]>('node', 'list', '--retired'),
      json<Row[]>('node', 'list', '--no-retired'),
      json<Row[]>('node', 'list', '--lessee', 'team-b'),
    ]);
    expect(retired.map((n) => n.Name)).toEqual(['old-1']);
    expect(notRetired.map((n) => n.Name)).toEqual(['new-1']);
    expect(leased.map((n) => n.Name)).toEqual(['old-1']);

    const provide = await baremetal('node', 'provide', 'old-1');
    expect(provide.code).toBe(1);
    expect(provide.stderr).toMatch(/The providing operation can't be performed on node .* because it is retired/);

    await ok('node', 'unset', 'old-1', '--retired', '--lessee');
    expect(await json('node', 'show', 'old-1', '-c', 'retired', '-c', 'retired_reason', '-c', 'lessee')).toEqual({ retired: false, retired_reason: null, lessee: null });
  });

  it('sets network data, changes the boot mode and secure boot, and shows the history', async () => {
    const networkData = { links: [{ id: 'p1', type: 'phy', ethernet_mac_address: '52:54:00:aa:bb:cc' }], networks: [], services: [] };
    await ok('node', 'set', 'old-1', '--network-data', JSON.stringify(networkData));
    expect(await json('node', 'show', 'old-1', '-c', 'network_data')).toEqual({ network_data: networkData });
    const bad = await baremetal('node', 'set', 'old-1', '--network-data', JSON.stringify({ links: [{ id: 'p1', type: 'phy', ethernet_mac_address: 'nope' }], networks: [], services: [] }));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/network_data.*links\[0\]\.ethernet_mac_address: expected a MAC address/);

    await ok('node', 'boot', 'mode', 'set', 'old-1', 'uefi');
    await ok('node', 'secure', 'boot', 'on', 'old-1');
    let shown: Row = {};
    for (let i = 0; i < 50; i++) {
      shown = await json('node', 'show', 'old-1', '-c', 'boot_mode', '-c', 'secure_boot');
      if (shown.boot_mode === 'uefi' && shown.secure_boot === true) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(shown).toEqual({ boot_mode: 'uefi', secure_boot: true });

    const events = await json<Row[]>('node', 'history', 'list', 'old-1');
    expect(Object.keys(events[0]!).sort()).toEqual(['Created At', 'Description of the event', 'Severity', 'UUID']);
    expect(events.map((e) => e['Description of the event'])).toEqual(expect.arrayContaining(['boot mode is uefi', 'secure boot state is true']));
    const long = await json<Row[]>('node', 'history', 'list', 'old-1', '--long');
    expect(long.find((e) => e['Description of the event'] === 'boot mode is uefi')).toMatchObject({ 'Event Origin Type': 'management', Conductor: 'aio', Severity: 'INFO' });
    const one = await json('node', 'history', 'get', 'old-1', events[0]!.UUID as string);
    expect(one).toMatchObject({ uuid: events[0]!.UUID, severity: events[0]!.Severity, conductor: 'aio' });
  });

  it('serves shards at 1.82, past the client: GET /v1/shards and ?shard=', async () => {
    const headers = { 'X-OpenStack-Ironic-API-Version': '1.82', 'Content-Type': 'application/json' };
    const patched = await fetch(`${endpoint()}/v1/nodes/${uuid}`, { method: 'PATCH', headers, body: JSON.stringify([{ op: 'add', path: '/shard', value: 'rack-7' }]) });
    expect(patched.status).toBe(200);
    const shards = (await (await fetch(`${endpoint()}/v1/shards`, { headers })).json()) as { shards: Row[] };
    expect(shards.shards).toEqual([{ name: 'None', count: 1 }, { name: 'rack-7', count: 1 }].sort((a, b) => b.count - a.count || a.name.localeCompare(b.name)));
    const listed = (await (await fetch(`${endpoint()}/v1/nodes?shard=rack-7`, { headers })).json()) as { nodes: Row[] };
    expect(listed.nodes.map((n) => n.name)).toEqual(['old-1']);
    // The client's own version (1.78) shows no shard.
    expect(await json('node', 'show', 'old-1')).not.toHaveProperty('shard');
  });
});
