import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { markOffline, registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { createDriverRegistry } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };

describe.each(engines)('driver list from the conductors\' registered interfaces on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  beforeEach(() => {
    app = buildApi({ store: db.store, config: loadConfig({ env: {} }).config, logger: createLogger({ level: 'silent', pretty: false }) });
  });
  afterEach(async () => {
    await app.close();
  });

  const get = async (url: string) => {
    const res = await app.inject({ method: 'GET', url, headers: LATEST });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };
  const listed = async () => ((await get('/v1/drivers')).body.drivers as Array<{ name: string; hosts: string[] }>).map((d) => [d.name, d.hosts]);
  const all = createDriverRegistry().registrations();
  const only = (type: string) => all.filter((r) => r.hardwareType === type);

  it('lists nothing while no live conductor has registered a hardware type, although this API could load them', async () => {
    expect(await listed()).toEqual([]);
    expect((await get('/v1/drivers/fake-hardware')).status).toBe(404);
  });

  it('lists each hardware type with the live conductors that registered it', async () => {
    await registerConductor(db.store, { hostname: 'c2', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: all }, 60);
    const c1 = await registerConductor(db.store, { hostname: 'c1', group: 'rack', drivers: ['fake-hardware'], interfaces: only('fake-hardware') }, 60);
    expect(await listed()).toEqual([
      ['fake-hardware', ['c1', 'c2']],
      ['ipmi', ['c2']],
    ]);
    // A conductor that stops drops out of the hosts; one that registers no interfaces serves nothing.
    await markOffline(db.store, c1, 'c1');
    await registerConductor(db.store, { hostname: 'c3', group: '', drivers: ['ipmi'] }, 60);
    expect(await listed()).toEqual([
      ['fake-hardware', ['c2']],
      ['ipmi', ['c2']],
    ]);
  });

  it('shows the interfaces the conductors registered, the default first, and their union where they differ', async () => {
    const power = (name: string, isDefault: boolean) => ({ hardwareType: 'custom-hw', interfaceType: 'power', interfaceName: name, default: isDefault });
    await registerConductor(db.store, { hostname: 'b', group: '', drivers: ['custom-hw'], interfaces: [power('ipmitool', false), power('fake', true)] }, 60);
    await registerConductor(db.store, { hostname: 'a', group: '', drivers: ['custom-hw'], interfaces: [power('ipmitool', true), power('redfish', false)] }, 60);
    const { status, body } = await get('/v1/drivers/custom-hw');
    expect(status).toBe(200);
    expect(body).toMatchObject({
      name: 'custom-hw',
      hosts: ['a', 'b'],
      default_power_interface: 'ipmitool',
      enabled_power_interfaces: ['ipmitool', 'redfish', 'fake'],
      default_boot_interface: null,
      enabled_boot_interfaces: [],
    });
    const ipmiDetail = await registerConductor(db.store, { hostname: 'c', group: '', drivers: ['ipmi'], interfaces: only('ipmi') }, 60).then(() => get('/v1/drivers/ipmi'));
    expect(ipmiDetail.body).toMatchObject({ name: 'ipmi', hosts: ['c'], default_power_interface: 'ipmitool', enabled_power_interfaces: ['ipmitool'] });
    expect(typeof ipmiDetail.body.description).toBe('string');
  });

  it("answers a driver's properties: the driver_info keys its default interfaces read, Required or Optional", async () => {
    expect((await get('/v1/drivers/ipmi/properties')).status).toBe(404);
    await registerConductor(db.store, { hostname: 'c', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: all }, 60);
    const { status, body } = await get('/v1/drivers/ipmi/properties');
    expect(status).toBe(200);
    expect(body.ipmi_address).toBe('Host name or IP address of the BMC. Required (every power and boot-device action).');
    expect(body.ipmi_password).toMatch(/Optional\.$/);
    // Only driver_info: instance_info keys are the deploy's input, not the driver's.
    expect(Object.keys(body).every((k) => !['image_source', 'kernel'].includes(k))).toBe(true);
    expect((await get('/v1/drivers/nope/properties')).status).toBe(404);
  });
});
