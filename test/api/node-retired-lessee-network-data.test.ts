/**
 * A node's `retired`/`retired_reason` (1.61), `lessee` (1.65), `network_data` (1.66) and `shard`
 * (1.82) through the API and its in-process conductor, as Ironic's: shown, created and patched from
 * their versions (406 before), bad values refused with a 400 naming the field, list filters
 * (`?retired=`, `?lessee=`, `?project=`, `?shard=`, `?sharded=`); a retired node is not provided and
 * its cleaning after an undeploy ends in `manageable`; the reason only goes with retirement.
 */
import { describe, expect, it } from 'vitest';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { at, fault, useInProcessApi } from '../helpers/api-test.js';

const engines = await testEngines();

/** A network_data value in Nova's format: one NIC, one static IPv4 network, one DNS server. */
const NETWORK_DATA = {
  links: [{ id: 'port-1', type: 'phy', ethernet_mac_address: '52:54:00:12:34:56', mtu: 1500 }],
  networks: [{ id: 'net-1', type: 'ipv4', link: 'port-1', network_id: 'n1', ip_address: '192.0.2.10', netmask: '255.255.255.0', routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '192.0.2.1' }] }],
  services: [{ type: 'dns', address: '192.0.2.53' }],
};

describe.each(engines)('node retired, lessee, network_data and shard on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db);

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'PUT', url: string, payload?: unknown, version = 'latest') =>
    api.send(method, url, payload, at(version));
  const node = (body: Record<string, unknown>, version = 'latest') => api.made('/v1/nodes', body, at(version));
  const show = async (ident: string, version = 'latest') => (await call('GET', `/v1/nodes/${ident}`, undefined, version)).json<Record<string, unknown>>();
  const patch = (ident: string, ops: unknown[], version = 'latest') => call('PATCH', `/v1/nodes/${ident}`, ops, version);
  const names = async (query: string, version = 'latest') => {
    const res = await call('GET', `/v1/nodes?${query}`, undefined, version);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { nodes: Array<{ name: string }> }).nodes.map((n) => n.name).sort();
  };
  /** Lets the conductor's background work end (each step may start the next). */
  async function settle(): Promise<void> {
    for (let i = 0; i < 50 && api.ops().running.size > 0; i++) await Promise.allSettled([...api.ops().running]);
  }
  const setState = (name: string, provision_state: string) => db.store.db.updateTable('nodes').set({ provision_state }).where('name', '=', name).execute();

  it('shows and takes each field from its version only: 406 before, as Ironic', async () => {
    await node({ name: 'v1', driver: 'fake-hardware' });
    const cases: Array<[string, unknown, string, string, unknown]> = [
      ['retired', true, '1.60', '1.61', false],
      ['retired_reason', 'old', '1.60', '1.61', null],
      ['lessee', 'project-b', '1.64', '1.65', null],
      ['network_data', NETWORK_DATA, '1.65', '1.66', {}],
      ['shard', 'rack-1', '1.81', '1.82', null],
    ];
    await setState('v1', 'manageable');
    for (const [field, value, before, since, initial] of cases) {
      expect(await show('v1', before), `${field} at ${before}`).not.toHaveProperty(field);
      expect(await show('v1', since), `${field} at ${since}`).toHaveProperty(field, initial);
      expect((await call('GET', `/v1/nodes/v1?fields=${field}`, undefined, before)).statusCode, field).toBe(406);
      const created = await call('POST', '/v1/nodes', { driver: 'fake-hardware', [field]: value }, before);
      expect(created.statusCode, `create ${field} at ${before}`).toBe(406);
      expect(fault(created.body)).toBe(`${field}: needs API version ${since} or later`);
      expect((await patch('v1', [{ op: 'add', path: `/${field}`, value }], before)).statusCode, `patch ${field} at ${before}`).toBe(406);
      // The reason needs retirement (set by the case before it).
      const now = await patch('v1', [{ op: 'add', path: `/${field}`, value }], since);
      expect(now.statusCode, now.body).toBe(200);
      expect(now.json()).toHaveProperty(field, value);
    }
    // boot_mode and secure_boot: read-only, shown from 1.75, null until a management interface says.
    expect(await show('v1', '1.74')).not.toHaveProperty('boot_mode');
    expect(await show('v1', '1.75')).toMatchObject({ boot_mode: null, secure_boot: null });
    expect((await call('GET', '/v1/nodes/v1?fields=secure_boot', undefined, '1.74')).statusCode).toBe(406);
    expect(fault((await patch('v1', [{ op: 'add', path: '/boot_mode', value: 'uefi' }])).body)).toBe('/boot_mode: cannot be changed (read-only)');
    expect(fault((await call('POST', '/v1/nodes', { driver: 'fake-hardware', secure_boot: true })).body)).toMatch(/^secure_boot: unknown or read-only field/);
  });

  it('refuses bad values with a 400 naming the field', async () => {
    await node({ name: 'b1', driver: 'fake-hardware' });
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ retired: 'maybe' }, /^retired: expected true or false$/],
      [{ retired_reason: 'x'.repeat(4097) }, /^retired_reason: expected a string of at most 4096/],
      [{ lessee: 'x'.repeat(256) }, /^lessee: expected a string of at most 255/],
      [{ shard: 7 }, /^shard: expected a string of at most 255/],
      [{ network_data: [] }, /^network_data: expected a JSON object$/],
      [{ network_data: { links: [] } }, /^network_data: networks: required/],
      [{ network_data: { ...NETWORK_DATA, links: [{ id: 'p', type: 'phy', ethernet_mac_address: 'zz' }] } }, /^network_data: links\[0\]\.ethernet_mac_address: expected a MAC address/],
      [{ network_data: { ...NETWORK_DATA, links: [{ id: 'p', type: 'token-ring', ethernet_mac_address: '52:54:00:12:34:56' }] } }, /^network_data: links\[0\]\.type: expected one of bridge/],
      [{ network_data: { ...NETWORK_DATA, links: [{ id: 'b', type: 'bond', ethernet_mac_address: '52:54:00:12:34:56', bond_links: ['p'] }] } }, /^network_data: links\[0\]\.bond_mode: required/],
      [{ network_data: { ...NETWORK_DATA, networks: [{ ...NETWORK_DATA.networks[0], ip_address: '192.0.2.300' }] } }, /^network_data: networks\[0\]\.ip_address: expected an IPv4 address/],
      [{ network_data: { ...NETWORK_DATA, networks: [{ ...NETWORK_DATA.networks[0], netmask: '255.0.255.0' }] } }, /^network_data: networks\[0\]\.netmask: expected an IPv4 netmask/],
      [{ network_data: { ...NETWORK_DATA, services: [{ type: 'ntp', address: '192.0.2.53' }] } }, /^network_data: services\[0\]\.type: expected one of dns/],
    ];
    for (const [body, message] of bad) {
      const res = await call('POST', '/v1/nodes', { driver: 'fake-hardware', ...body });
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(fault(res.body)).toMatch(message);
    }
    // IPv6 networks, bonds and VLANs in the format are taken.
    const v6 = {
      links: [
        { id: 'p1', type: 'phy', ethernet_mac_address: '52:54:00:12:34:56' },
        { id: 'b0', type: 'bond', ethernet_mac_address: '52:54:00:12:34:57', bond_mode: '802.1ad', bond_links: ['p1'] },
        { id: 'v10', type: 'vlan', vlan_mac_address: '52:54:00:12:34:57', vlan_link: 'b0', vlan_id: 10 },
      ],
      networks: [{ id: 'n6', type: 'ipv6', link: 'v10', network_id: 'x', ip_address: '2001:db8::10/64', netmask: 'ffff:ffff:ffff:ffff::', routes: [{ network: '::', netmask: '::', gateway: '2001:db8::1' }] }],
      services: [{ type: 'dns', address: '2001:db8::53' }],
    };
    expect((await node({ driver: 'fake-hardware', network_data: v6 })).network_data).toEqual(v6);
    expect((await node({ driver: 'fake-hardware', network_data: null })).network_data).toEqual({});
    // A patch inside it is checked as a whole: a lone `links` misses networks and services.
    const inside = await patch('b1', [{ op: 'add', path: '/network_data/links', value: [] }]);
    expect(inside.statusCode).toBe(400);
    expect(fault(inside.body)).toMatch(/^network_data\.networks: required/);
    expect((await patch('b1', [{ op: 'add', path: '/network_data', value: NETWORK_DATA }])).statusCode).toBe(200);
    const dns = await patch('b1', [{ op: 'replace', path: '/network_data/services', value: [{ type: 'dns', address: '192.0.2.54' }] }]);
    expect(dns.statusCode, dns.body).toBe(200);
    expect((dns.json() as { network_data: typeof NETWORK_DATA }).network_data.services).toEqual([{ type: 'dns', address: '192.0.2.54' }]);
    expect((await patch('b1', [{ op: 'remove', path: '/network_data' }])).json()).toMatchObject({ network_data: {} });
    // A key naming a prototype never reaches Object.prototype.
    const proto = await patch('b1', [{ op: 'add', path: '/network_data/__proto__', value: { polluted: true } }]);
    expect(proto.statusCode).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('filters lists by retired, lessee, project (owner or lessee), shard and sharded; sorts by them', async () => {
    await node({ name: 'a', driver: 'fake-hardware', owner: 'p1', lessee: 'p2', shard: 'Rack-1' });
    await node({ name: 'b', driver: 'fake-hardware', owner: 'p2', shard: 'rack-2' });
    await node({ name: 'c', driver: 'fake-hardware', retired: true, retired_reason: 'disk died' });
    expect(await names('retired=true')).toEqual(['c']);
    expect(await names('retired=false')).toEqual(['a', 'b']);
    expect(await names('lessee=p2')).toEqual(['a']);
    expect(await names('project=p2')).toEqual(['a', 'b']);
    expect(await names('project=p1')).toEqual(['a']);
    // As Ironic's string list: trimmed, lower case, compared without case.
    expect(await names('shard=rack-1')).toEqual(['a']);
    expect(await names('shard=RACK-1,%20rack-2')).toEqual(['a', 'b']);
    expect(await names('shard=none')).toEqual([]);
    expect(await names('sharded=true')).toEqual(['a', 'b']);
    expect(await names('sharded=false')).toEqual(['c']);
    expect(await names('sharded=false&retired=true')).toEqual(['c']);
    const sorted = (await call('GET', '/v1/nodes?sort_key=shard&sort_dir=desc&fields=name,shard')).json() as { nodes: Array<{ name: string }> };
    expect(sorted.nodes.map((n) => n.name)).toEqual(['b', 'a', 'c']);
    // Flags (retired, secure_boot) and text columns sort on both engines, and page by marker.
    for (const key of ['retired', 'retired_reason', 'lessee', 'boot_mode', 'secure_boot', 'shard']) {
      const first = await call('GET', `/v1/nodes?sort_key=${key}&sort_dir=desc&limit=2&fields=uuid,name`);
      if (key === 'retired_reason') {
        expect(first.statusCode, key).toBe(400);
        continue;
      }
      expect(first.statusCode, `${key}: ${first.body}`).toBe(200);
      const page = first.json() as { nodes: Array<{ uuid: string; name: string }> };
      const rest = (await call('GET', `/v1/nodes?sort_key=${key}&sort_dir=desc&limit=2&fields=name&marker=${page.nodes[1]!.uuid}`)).json() as { nodes: Array<{ name: string }> };
      expect([...page.nodes, ...rest.nodes].map((n) => n.name).sort(), key).toEqual(['a', 'b', 'c']);
    }
    const byRetired = (await call('GET', '/v1/nodes?sort_key=retired&sort_dir=desc&fields=name')).json() as { nodes: Array<{ name: string }> };
    expect(byRetired.nodes[0]!.name).toBe('c');
    expect((await call('GET', '/v1/nodes?sort_key=network_data')).statusCode).toBe(400);
    expect((await call('GET', '/v1/nodes?sort_key=shard', undefined, '1.81')).statusCode).toBe(406);
    // Filters of later versions: 406 before them (retired and project need none in Ironic).
    expect((await call('GET', '/v1/nodes?lessee=p2', undefined, '1.64')).statusCode).toBe(406);
    expect((await call('GET', '/v1/nodes?shard=rack-1', undefined, '1.81')).statusCode).toBe(406);
    expect((await call('GET', '/v1/nodes?sharded=true', undefined, '1.81')).statusCode).toBe(406);
    expect(await names('retired=true', '1.1')).toEqual(['c']);
    expect(fault((await call('GET', '/v1/nodes?sharded=perhaps')).body)).toMatch(/sharded/);
    const many = Array.from({ length: 101 }, (_, i) => `s${i}`).join(',');
    expect(fault((await call('GET', `/v1/nodes?shard=${many}`)).body)).toMatch(/^shard: at most 100 shards/);
  });

  it('retires as Ironic: not in available, the reason only with it, cleared when it ends', async () => {
    await node({ name: 'r1', driver: 'fake-hardware' });
    await setState('r1', 'available');
    const available = await patch('r1', [{ op: 'add', path: '/retired', value: true }]);
    expect(available.statusCode).toBe(409);
    expect(fault(available.body)).toMatch(/can not have 'retired' set in provision state 'available'/);
    await setState('r1', 'manageable');
    const reasonAlone = await patch('r1', [{ op: 'add', path: '/retired_reason', value: 'why' }]);
    expect(reasonAlone.statusCode).toBe(400);
    expect(fault(reasonAlone.body)).toBe('retired_reason: can only be set when retired is True');
    const retired = await patch('r1', [{ op: 'add', path: '/retired', value: 'true' }, { op: 'add', path: '/retired_reason', value: 'EOL' }]);
    expect(retired.json()).toMatchObject({ retired: true, retired_reason: 'EOL' });
    const unretired = await patch('r1', [{ op: 'replace', path: '/retired', value: false }]);
    expect(unretired.json()).toMatchObject({ retired: false, retired_reason: null });
    await patch('r1', [{ op: 'add', path: '/retired', value: true }, { op: 'add', path: '/retired_reason', value: 'EOL' }]);
    expect((await patch('r1', [{ op: 'remove', path: '/retired' }])).json()).toMatchObject({ retired: false, retired_reason: null });
  });

  it('refuses to provide a retired node (400) and ends its cleaning in manageable', async () => {
    await node({ name: 'p1', driver: 'fake-hardware' });
    await setState('p1', 'manageable');
    await patch('p1', [{ op: 'add', path: '/retired', value: true }]);
    const provide = await call('PUT', '/v1/nodes/p1/states/provision', { target: 'provide' });
    expect(provide.statusCode).toBe(400);
    expect(fault(provide.body)).toMatch(/The providing operation can't be performed on node .* because it is retired/);
    expect(await show('p1')).toMatchObject({ provision_state: 'manageable' });
    // Unretired, the same node is provided.
    await patch('p1', [{ op: 'replace', path: '/retired', value: false }]);
    expect((await call('PUT', '/v1/nodes/p1/states/provision', { target: 'provide' })).statusCode).toBe(202);
    await settle();
    expect(await show('p1')).toMatchObject({ provision_state: 'available' });

    // An active node retired, then undeployed: cleaned, and back to manageable rather than available.
    await node({ name: 'p2', driver: 'fake-hardware' });
    await setState('p2', 'active');
    await patch('p2', [{ op: 'add', path: '/retired', value: true }, { op: 'add', path: '/retired_reason', value: 'EOL' }]);
    const undeploy = await call('PUT', '/v1/nodes/p2/states/provision', { target: 'deleted' });
    expect(undeploy.statusCode, undeploy.body).toBe(202);
    await settle();
    expect(await show('p2')).toMatchObject({ provision_state: 'manageable', target_provision_state: null, retired: true, retired_reason: 'EOL', last_error: null });
  });
});
