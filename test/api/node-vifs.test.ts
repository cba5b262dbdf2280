/**
 * A node's VIFs through the API and its in-process conductor: attached to a free port or port
 * group and recorded in its internal_info (`tenant_vif_port_id`, as Ironic's tempest expects),
 * listed, detached; Ironic's choice of NIC (port groups first, pxe-enabled ports next), its refusals
 * (no free port 400, the same VIF twice 409, a VIF not attached 400), 1.67's port_uuid and
 * portgroup_uuid, and 404 below 1.28.
 */
import { describe, expect, it } from 'vitest';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { at, fault, useInProcessApi } from '../helpers/api-test.js';

const engines = await testEngines();
const VIF1 = '6e1c7b0a-4d1f-4f6e-9a55-1c2b3d4e5f60';
const VIF2 = '7f2d8c1b-5e2a-4a7f-8b66-2d3c4e5f6a71';

describe.each(engines)('node VIFs on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db);

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown, version = 'latest') =>
    api.send(method, url, payload, at(version));
  async function node(name: string): Promise<string> {
    const res = await call('POST', '/v1/nodes', { name, driver: 'fake-hardware' });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ uuid: string }>().uuid;
  }
  async function port(nodeUuid: string, address: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await call('POST', '/v1/ports', { node_uuid: nodeUuid, address, ...extra });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ uuid: string }>().uuid;
  }
  async function group(nodeUuid: string, name: string): Promise<string> {
    const res = await call('POST', '/v1/portgroups', { node_uuid: nodeUuid, name });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ uuid: string }>().uuid;
  }
  const internal = async (kind: 'ports' | 'portgroups', uuid: string) => (await call('GET', `/v1/${kind}/${uuid}`)).json<{ internal_info: Record<string, unknown> }>().internal_info;
  const vifs = async (n: string) => (await call('GET', `/v1/nodes/${n}/vifs`)).json<{ vifs: Array<{ id: string }> }>().vifs;

  it('attaches a VIF to a free port, lists it, shows it in the port internal_info and detaches it', async () => {
    const n = await node('v1');
    const p = await port(n, '52:54:00:00:01:01');
    expect(await vifs(n)).toEqual([]);
    const res = await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF1 });
    expect(res.statusCode, res.body).toBe(204);
    expect(await vifs(n)).toEqual([{ id: VIF1 }]);
    expect(await internal('ports', p)).toEqual({ tenant_vif_port_id: VIF1 });
    const bound = await call('DELETE', `/v1/ports/${p}`);
    expect(bound.statusCode).toBe(409);
    expect(fault(bound.body)).toMatch(new RegExp(`Cannot delete the port ${p} as it is bound to VIF ${VIF1}`));
    const del = await call('DELETE', `/v1/nodes/v1/vifs/${VIF1}`);
    expect(del.statusCode, del.body).toBe(204);
    expect(await vifs(n)).toEqual([]);
    expect(await internal('ports', p)).toEqual({});
    expect((await call('DELETE', `/v1/ports/${p}`)).statusCode).toBe(204);
  });

  it('refuses the same VIF twice (409), a VIF when no port is free (400), and detaching one not attached (400)', async () => {
    const n = await node('v2');
    await port(n, '52:54:00:00:02:01');
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF1 })).statusCode).toBe(204);
    const twice = await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF1 });
    expect(twice.statusCode).toBe(409);
    expect(fault(twice.body)).toMatch(new RegExp(`VIF ${VIF1} is already attached to Ironic Port`));
    const full = await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF2 });
    expect(full.statusCode).toBe(400);
    expect(fault(full.body)).toBe(`Unable to attach VIF ${VIF2}, not enough free physical ports.`);
    const notThere = await call('DELETE', `/v1/nodes/${n}/vifs/${VIF2}`);
    expect(notThere.statusCode).toBe(400);
    expect(fault(notThere.body)).toMatch(/because it is not attached to it/);
    expect(await vifs(n)).toEqual([{ id: VIF1 }]);
    // In maintenance a bound port may go, as Ironic's, and its VIF with it.
    const bound = (await call('GET', `/v1/nodes/${n}/ports`)).json<{ ports: Array<{ uuid: string }> }>().ports[0]!.uuid;
    expect((await call('PATCH', `/v1/nodes/${n}`, [{ op: 'replace', path: '/maintenance', value: true }])).statusCode).toBe(200);
    expect((await call('DELETE', `/v1/ports/${bound}`)).statusCode).toBe(204);
    expect(await vifs(n)).toEqual([]);
  });

  it('prefers a port group with ports, then pxe-enabled ports', async () => {
    const n = await node('v3');
    const plain = await port(n, '52:54:00:00:03:01', { pxe_enabled: false });
    const pxe = await port(n, '52:54:00:00:03:02');
    const g = await group(n, 'bond0');
    const member = await port(n, '52:54:00:00:03:03', { portgroup_uuid: g, pxe_enabled: false });
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: 'vif-a' })).statusCode).toBe(204);
    expect(await internal('portgroups', g)).toEqual({ tenant_vif_port_id: 'vif-a' });
    expect(await internal('ports', member)).toEqual({});
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: 'vif-b' })).statusCode).toBe(204);
    expect(await internal('ports', pxe)).toEqual({ tenant_vif_port_id: 'vif-b' });
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: 'vif-c' })).statusCode).toBe(204);
    expect(await internal('ports', plain)).toEqual({ tenant_vif_port_id: 'vif-c' });
    expect((await vifs(n)).map((v) => v.id).sort()).toEqual(['vif-a', 'vif-b', 'vif-c']);
    expect((await call('DELETE', `/v1/nodes/${n}/vifs/vif-a`)).statusCode).toBe(204);
    expect(await internal('portgroups', g)).toEqual({});
  });

  it('passes over a port group one of whose ports holds a VIF, for its free ports', async () => {
    const n = await node('v7');
    const g = await group(n, 'bond7');
    const first = await port(n, '52:54:00:00:07:01', { pxe_enabled: false });
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: 'vif-1' })).statusCode).toBe(204);
    expect((await call('PATCH', `/v1/ports/${first}`, [{ op: 'add', path: '/portgroup_uuid', value: g }])).statusCode).toBe(200);
    const second = await port(n, '52:54:00:00:07:02', { portgroup_uuid: g, pxe_enabled: false });
    // As Ironic's: port_uuid names a standalone port only; a group member is never chosen by it.
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: 'vif-2', port_uuid: second }, '1.67')).statusCode).toBe(400);
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: 'vif-2' })).statusCode).toBe(204);
    expect(await internal('ports', second)).toEqual({ tenant_vif_port_id: 'vif-2' });
    expect(await internal('portgroups', g)).toEqual({});
    const byGroup = await call('POST', `/v1/nodes/${n}/vifs`, { id: 'vif-3', portgroup_uuid: g }, '1.67');
    expect(byGroup.statusCode).toBe(400);
    expect(fault(byGroup.body)).toMatch(/not enough free physical ports/);
  });

  it('attaches to the port or port group named from 1.67 on, and refuses both at once', async () => {
    const n = await node('v4');
    await port(n, '52:54:00:00:04:01');
    const second = await port(n, '52:54:00:00:04:02', { pxe_enabled: false });
    const res = await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF1, port_uuid: second }, '1.67');
    expect(res.statusCode, res.body).toBe(204);
    expect(await internal('ports', second)).toEqual({ tenant_vif_port_id: VIF1 });
    const both = await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF2, port_uuid: second, portgroup_uuid: second }, '1.67');
    expect(both.statusCode).toBe(400);
    expect(fault(both.body)).toMatch(/port_uuid and portgroup_uuid: cannot specify both/);
    const taken = await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF2, port_uuid: second }, '1.67');
    expect(taken.statusCode).toBe(400);
    const bad = await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF2, port_uuid: 'eth0' }, '1.67');
    expect(bad.statusCode).toBe(400);
    expect(fault(bad.body)).toMatch(/^port_uuid: expected a UUID/);
  });

  it('uses a Smart NIC port only with its Smart NIC link, and skips a port whose link says Smart NIC but which is not one', async () => {
    const n = await node('v6');
    const odd = await port(n, '52:54:00:00:06:01', { local_link_connection: { port_id: 'p0', hostname: 'dpu-0' } });
    const smart = await port(n, '52:54:00:00:06:02', { is_smartnic: true, local_link_connection: { port_id: 'rep0', hostname: 'dpu-1' }, pxe_enabled: false });
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF1 })).statusCode).toBe(204);
    expect(await internal('ports', smart)).toEqual({ tenant_vif_port_id: VIF1 });
    expect(await internal('ports', odd)).toEqual({});
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF2 })).statusCode).toBe(400);
  });

  it('checks the VIF id and answers 404 below 1.28', async () => {
    const n = await node('v5');
    await port(n, '52:54:00:00:05:01');
    for (const body of [{}, { id: 5 }, { id: 'a b' }, { id: 'x'.repeat(256) }, []]) {
      const res = await call('POST', `/v1/nodes/${n}/vifs`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(fault(res.body)).toMatch(/^(id|request body)/);
    }
    expect((await call('GET', `/v1/nodes/${n}/vifs`, undefined, '1.27')).statusCode).toBe(404);
    expect((await call('POST', `/v1/nodes/${n}/vifs`, { id: VIF1 }, '1.27')).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/nodes/${n}/vifs/${VIF1}`, undefined, '1.27')).statusCode).toBe(404);
    expect((await call('GET', `/v1/nodes/${n}/vifs`, undefined, '1.28')).statusCode).toBe(200);
    expect((await call('GET', '/v1/nodes/nope/vifs')).statusCode).toBe(404);
  });
});
