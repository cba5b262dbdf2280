/**
 * A node's RAID, console and protection through the API and its in-process conductor: the states
 * view's keys per microversion, `PUT …/states/raid` (1.12) checked against Ironic's RAID rules and
 * refused for `no-raid`, the console started and stopped through the fake interface and refused by
 * `no-console`, `protected` only on active or rescued nodes and refusing undeploy, rebuild and
 * delete, and the drivers' logical disk properties.
 */
import { describe, expect, it } from 'vitest';
import { registerConductor } from '../../src/cluster/membership.js';
import { createDriverRegistry, LOGICAL_DISK_PROPERTIES } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { at, fault, useInProcessApi } from '../helpers/api-test.js';

const engines = await testEngines();
const RAID = { logical_disks: [{ size_gb: 100, raid_level: '1' }] };

describe.each(engines)('node RAID, console and protection on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db);

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown, version = 'latest') =>
    api.send(method, url, payload, at(version));
  async function node(name: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await call('POST', '/v1/nodes', { name, driver: 'fake-hardware', ...extra });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ uuid: string }>().uuid;
  }
  const show = async (uuid: string) => (await call('GET', `/v1/nodes/${uuid}`)).json<Record<string, unknown>>();
  const settle = () => Promise.allSettled([...api.ops().running]);

  it('shows the RAID keys of the states from 1.12 on, as the node view does', async () => {
    const uuid = await node('s1');
    const old = (await call('GET', `/v1/nodes/${uuid}/states`, undefined, '1.11')).json<Record<string, unknown>>();
    expect(Object.keys(old).sort()).toEqual(['console_enabled', 'last_error', 'power_state', 'provision_state', 'provision_updated_at', 'target_power_state', 'target_provision_state']);
    const now = (await call('GET', `/v1/nodes/${uuid}/states`, undefined, '1.12')).json<Record<string, unknown>>();
    expect(now).toMatchObject({ raid_config: {}, target_raid_config: {}, console_enabled: false });
  });

  it('stores a target RAID configuration the fake RAID interface accepts, and clears it with {}', async () => {
    const uuid = await node('r1');
    expect(await show(uuid)).toMatchObject({ raid_interface: 'fake', target_raid_config: {} });
    const res = await call('PUT', `/v1/nodes/${uuid}/states/raid`, RAID, '1.12');
    expect(res.statusCode, res.body).toBe(204);
    expect((await show(uuid)).target_raid_config).toEqual(RAID);
    expect((await call('GET', `/v1/nodes/${uuid}/states`)).json()).toMatchObject({ target_raid_config: RAID });
    expect((await call('PUT', `/v1/nodes/${uuid}/states/raid`, {})).statusCode).toBe(204);
    expect((await show(uuid)).target_raid_config).toEqual({});
  });

  it('refuses a RAID configuration against Ironic\'s rules with a 400 naming the key, and below 1.12 with 406', async () => {
    const uuid = await node('r2');
    const bad: Array<[unknown, RegExp]> = [
      [{ logical_disks: [{ size_gb: 100, raid_level: '7' }] }, /^target_raid_config\.logical_disks\[0\]\.raid_level expected one of JBOD/],
      [{ logical_disks: [{ raid_level: '1' }] }, /^target_raid_config\.logical_disks\[0\]\.size_gb is required$/],
      [{ logical_disks: [{ size_gb: -1, raid_level: '1' }] }, /size_gb expected a whole number/],
      [{ logical_disks: [{ size_gb: 'MAX', raid_level: '1', colour: 'red' }] }, /logical_disks\[0\]\.colour is not a logical disk property/],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', physical_disks: ['a'] }] }, /controller is required with physical_disks/],
      [{ logical_disks: [] }, /logical_disks expected a non-empty list/],
      [{ disks: [] }, /^target_raid_config\.disks is not a RAID configuration key/],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', is_root_volume: true }, { size_gb: 2, raid_level: '0', is_root_volume: true }] }, /at most one root volume, 2 were specified/],
    ];
    for (const [config, message] of bad) {
      const res = await call('PUT', `/v1/nodes/${uuid}/states/raid`, config);
      expect(res.statusCode, JSON.stringify(config)).toBe(400);
      expect(fault(res.body)).toMatch(message);
    }
    expect((await call('PUT', `/v1/nodes/${uuid}/states/raid`, [1])).statusCode).toBe(400);
    expect((await call('PUT', `/v1/nodes/${uuid}/states/raid`, RAID, '1.11')).statusCode).toBe(406);
    expect((await show(uuid)).target_raid_config).toEqual({});
  });

  it('refuses a RAID configuration for a no-raid node with 404, as Ironic, but lets it clear one', async () => {
    const uuid = await node('r3', { raid_interface: 'no-raid' });
    const res = await call('PUT', `/v1/nodes/${uuid}/states/raid`, RAID);
    expect(res.statusCode, res.body).toBe(404);
    expect(fault(res.body)).toMatch(/does not support raid/);
    expect((await call('PUT', `/v1/nodes/${uuid}/states/raid`, {})).statusCode).toBe(204);
  });

  it('starts and stops the console through the fake interface, at both of Ironic\'s paths', async () => {
    const uuid = await node('c1');
    expect((await call('GET', `/v1/nodes/${uuid}/states/console`)).json()).toEqual({ console_enabled: false, console_info: null });
    const on = await call('PUT', `/v1/nodes/${uuid}/states/console`, { enabled: true });
    expect(on.statusCode, on.body).toBe(202);
    expect(on.headers.location).toMatch(new RegExp(`/v1/nodes/${uuid}/states/console$`));
    await settle();
    expect((await call('GET', `/v1/nodes/states/console/${uuid}`)).json()).toEqual({ console_enabled: true, console_info: {} });
    expect((await show(uuid)).console_enabled).toBe(true);
    expect((await call('PUT', `/v1/nodes/states/console/${uuid}`, { enabled: 'false' })).statusCode).toBe(202);
    await settle();
    expect((await show(uuid)).console_enabled).toBe(false);
  });

  it('refuses the console of a no-console node (400) and a body without enabled (400 naming it)', async () => {
    const uuid = await node('c2', { console_interface: 'no-console' });
    const res = await call('PUT', `/v1/nodes/${uuid}/states/console`, { enabled: true });
    expect(res.statusCode).toBe(400);
    expect(fault(res.body)).toMatch(/does not support console/);
    expect((await call('GET', `/v1/nodes/${uuid}/states/console`)).json()).toEqual({ console_enabled: false, console_info: null });
    const bad = await call('PUT', `/v1/nodes/${uuid}/states/console`, { enabled: 'perhaps' });
    expect(bad.statusCode).toBe(400);
    expect(fault(bad.body)).toMatch(/^enabled: expected true or false/);
  });

  it('protects only an active or rescued node, and then refuses undeploy, rebuild and delete with 403', async () => {
    const uuid = await node('p1');
    const early = await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/protected', value: true }]);
    expect(early.statusCode).toBe(409);
    expect(fault(early.body)).toMatch(/can only be made protected in provision states 'active' or 'rescue', the current state is 'enroll'/);
    await db.store.db.updateTable('nodes').set({ provision_state: 'active' }).where('uuid', '=', uuid).execute();

    const noReason = await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/protected_reason', value: 'reason!' }]);
    expect(noReason.statusCode).toBe(400);
    expect(fault(noReason.body)).toMatch(/protected_reason: can only be set when protected is True/);
    expect((await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/protected', value: true }], '1.47')).statusCode).toBe(406);

    const set = await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/protected', value: true }, { op: 'replace', path: '/protected_reason', value: 'reason!' }]);
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ protected: true, protected_reason: 'reason!' });

    for (const target of ['deleted', 'rebuild']) {
      const res = await call('PUT', `/v1/nodes/${uuid}/states/provision`, { target });
      expect(res.statusCode, target).toBe(403);
      expect(fault(res.body)).toBe(`Node ${uuid} is protected and cannot be undeployed, rebuilt or deleted`);
    }
    expect((await call('DELETE', `/v1/nodes/${uuid}`)).statusCode).toBe(403);
    expect((await show(uuid)).provision_state).toBe('active');

    const unset = await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/protected', value: false }]);
    expect(unset.json()).toMatchObject({ protected: false, protected_reason: null });
  });

  it('sets maintenance by PATCH and clears its reason when it ends', async () => {
    const uuid = await node('m1');
    const on = await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/maintenance', value: true }, { op: 'add', path: '/maintenance_reason', value: 'BMC down' }]);
    expect(on.json()).toMatchObject({ maintenance: true, maintenance_reason: 'BMC down' });
    const off = await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/maintenance', value: false }]);
    expect(off.json()).toMatchObject({ maintenance: false, maintenance_reason: null });
    const bad = await call('PATCH', `/v1/nodes/${uuid}`, [{ op: 'replace', path: '/maintenance', value: 'sometimes' }]);
    expect(bad.statusCode).toBe(400);
    expect(fault(bad.body)).toMatch(/^\/maintenance: expected true or false$/);
  });

  it('describes the logical disk properties of a driver from 1.12, 404 for an unknown driver', async () => {
    await registerConductor(db.store, { hostname: 'c9', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: createDriverRegistry().registrations() }, 60);
    for (const driver of ['fake-hardware', 'ipmi']) {
      const res = await call('GET', `/v1/drivers/${driver}/raid/logical_disk_properties`, undefined, '1.12');
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual(LOGICAL_DISK_PROPERTIES);
    }
    expect((await call('GET', '/v1/drivers/fake-hardware/raid/logical_disk_properties', undefined, '1.11')).statusCode).toBe(406);
    expect((await call('GET', '/v1/drivers/nope/raid/logical_disk_properties')).statusCode).toBe(404);
    const detail = (await call('GET', '/v1/drivers/fake-hardware')).json<Record<string, unknown>>();
    expect(detail).toMatchObject({ default_raid_interface: 'fake', enabled_raid_interfaces: ['fake', 'no-raid'] });
  });
});
