/**
 * The smaller behaviours of microversions 1.45–1.81, through the API and its in-process conductor
 * on both engines: each at and above its version, Ironic's answer below it (406 for a parameter or
 * verb, 400 for a query Ironic refuses that way, 404 for a resource), and the refusals naming the
 * field. `reset_interfaces` (1.45), `vendor_data` in a JSON config drive (1.59), the agent token
 * never shown by the node API (1.62), `disable_ramdisk` (1.70), `deploy`/`undeploy` (1.73), the BIOS
 * registry fields (1.74), `fields` on drivers (1.77) and the node inventory (1.81).
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import type { CleanStep } from '../../src/drivers/index.js';
import { saveInventory } from '../../src/nodes/inventory-store.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const V = (v: string) => ({ 'x-openstack-ironic-api-version': v });
const fault = (body: string) => (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
const INTERFACES = ['bios', 'boot', 'console', 'deploy', 'inspect', 'management', 'network', 'power', 'raid', 'rescue', 'storage', 'vendor'].map((t) => `${t}_interface`);

describe.each(engines)('node microversions 1.45 to 1.81 on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let close: () => Promise<void>;

  beforeEach(async () => {
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    ({ app, close } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false })));
  });
  afterEach(async () => close());

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'PUT', url: string, payload?: unknown, version = 'latest') =>
    app.inject({ method, url, headers: V(version), ...(payload !== undefined ? { payload: payload as object } : {}) });
  async function node(body: Record<string, unknown>): Promise<{ uuid: string } & Record<string, unknown>> {
    const res = await call('POST', '/v1/nodes', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }
  const show = async (ident: string) => (await call('GET', `/v1/nodes/${ident}`)).json<Record<string, unknown>>();
  const setState = (uuid: string, state: string) => db.store.db.updateTable('nodes').set({ provision_state: state }).where('uuid', '=', uuid).execute();
  const nodeId = async (uuid: string) => (await db.store.db.selectFrom('nodes').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow()).id;

  describe('reset_interfaces (1.45)', () => {
    const toIpmi = (extra: Record<string, string> = {}) => [
      { op: 'replace', path: '/driver', value: 'ipmi' },
      ...Object.entries(extra).map(([k, value]) => ({ op: 'replace', path: `/${k}`, value })),
    ];
    // Every interface ipmi does not share with fake-hardware's defaults, set explicitly.
    const IPMI_ONLY = { bios_interface: 'no-bios', console_interface: 'no-console', inspect_interface: 'no-inspect', management_interface: 'ipmitool', power_interface: 'ipmitool', raid_interface: 'no-raid', rescue_interface: 'no-rescue', vendor_interface: 'no-vendor' };
    const ipmiDefaults = createDriverRegistry().validateInterfaces('ipmi', {});

    it('keeps the interfaces by default when the driver changes: one the new driver does not enable is a 400 naming it, nothing stored', async () => {
      await node({ name: 'ri-1', driver: 'fake-hardware' });
      const res = await call('PATCH', '/v1/nodes/ri-1', toIpmi({ power_interface: 'ipmitool' }), '1.45');
      expect(res.statusCode).toBe(400);
      expect(fault(res.body)).toMatch(/^[a-z]+_interface "fake" is not enabled for driver ipmi; .*reset_interfaces=true/);
      expect(await show('ri-1')).toMatchObject({ driver: 'fake-hardware', power_interface: 'fake' });
      // false is the same as absent.
      expect((await call('PATCH', '/v1/nodes/ri-1?reset_interfaces=false', toIpmi(), '1.45')).statusCode).toBe(400);

      // Those the new driver enables stay as they were: pxe and direct, not ipmi's defaults.
      await node({ name: 'ri-2', driver: 'fake-hardware', boot_interface: 'pxe', deploy_interface: 'direct' });
      expect([ipmiDefaults.boot_interface, ipmiDefaults.deploy_interface]).not.toEqual(['pxe', 'direct']);
      const kept = await call('PATCH', '/v1/nodes/ri-2', toIpmi(IPMI_ONLY), '1.44');
      expect(kept.statusCode, kept.body).toBe(200);
      expect(kept.json()).toMatchObject({ driver: 'ipmi', boot_interface: 'pxe', deploy_interface: 'direct', ...IPMI_ONLY });
    });

    it('resets the interfaces the patch does not set to the new driver\'s defaults with reset_interfaces=true', async () => {
      await node({ name: 'ri-3', driver: 'fake-hardware', boot_interface: 'pxe', deploy_interface: 'direct' });
      const res = await call('PATCH', '/v1/nodes/ri-3?reset_interfaces=True', toIpmi({ deploy_interface: 'direct' }), '1.45');
      expect(res.statusCode, res.body).toBe(200);
      const after = res.json<Record<string, string>>();
      for (const field of INTERFACES) {
        expect(after[field], field).toBe(field === 'deploy_interface' ? 'direct' : ipmiDefaults[field as keyof typeof ipmiDefaults]);
      }
      expect(after.boot_interface).not.toBe('pxe');
    });

    it('answers 406 below 1.45, and 400 without a new driver or for a value that is no boolean', async () => {
      await node({ name: 'ri-4', driver: 'fake-hardware' });
      const old = await call('PATCH', '/v1/nodes/ri-4?reset_interfaces=true', toIpmi(), '1.44');
      expect(old.statusCode).toBe(406);
      expect(fault(old.body)).toMatch(/^reset_interfaces: needs API version 1\.45/);
      for (const ops of [[{ op: 'replace', path: '/name', value: 'ri-4b' }], [{ op: 'remove', path: '/driver' }]]) {
        const res = await call('PATCH', '/v1/nodes/ri-4?reset_interfaces=true', ops);
        expect(res.statusCode).toBe(400);
        expect(fault(res.body)).toBe("reset_interfaces: can only be used when changing the node's driver");
      }
      const bad = await call('PATCH', '/v1/nodes/ri-4?reset_interfaces=maybe', toIpmi());
      expect(bad.statusCode).toBe(400);
      expect(fault(bad.body)).toMatch(/^reset_interfaces: expected a boolean/);
      expect(await show('ri-4')).toMatchObject({ name: 'ri-4', driver: 'fake-hardware' });
    });
  });

  it('takes vendor_data in a JSON config drive from 1.59 only (400 naming it before, as Ironic)', async () => {
    const { uuid } = await node({ name: 'cd-1', driver: 'fake-hardware' });
    await setState(uuid, 'available');
    const put = (configdrive: unknown, version: string) => call('PUT', '/v1/nodes/cd-1/states/provision', { target: 'active', configdrive }, version);
    for (const configdrive of [{ vendor_data: { a: 1 } }, { meta_data: {}, vendor_data: null }]) {
      const res = await put(configdrive, '1.58');
      expect(res.statusCode).toBe(400);
      expect(fault(res.body)).toMatch(/^configdrive\.vendor_data: vendor_data in a config drive needs API version 1\.59/);
    }
    // From 1.59 it reaches the config drive's own checks (no deploy is started by a bad one).
    const checked = await put({ vendor_data: 'text' }, '1.59');
    expect(checked.statusCode).toBe(400);
    expect(fault(checked.body)).toBe('configdrive.vendor_data: must be an object');
    expect((await show('cd-1')).provision_state).toBe('available');
  });

  it('never shows the agent token in the node API (1.62): only its digest is kept, outside driver_internal_info', async () => {
    const { uuid } = await node({ name: 'tok-1', driver: 'fake-hardware' });
    const digest = 'cd'.repeat(32);
    await db.store.db.updateTable('nodes').set({ provision_state: 'clean wait', agent_token_hash: digest, driver_internal_info: JSON.stringify({ agent_url: 'http://10.0.0.9:9999' }) }).where('uuid', '=', uuid).execute();
    for (const url of ['/v1/nodes/tok-1', '/v1/nodes/detail', '/v1/nodes/tok-1?fields=driver_internal_info']) {
      const res = await call('GET', url);
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).not.toContain(digest);
      expect(res.body, url).not.toMatch(/agent_secret_token"\s*:\s*"(?!\*{6})/);
    }
    expect((await show('tok-1')).driver_internal_info).toEqual({ agent_url: 'http://10.0.0.9:9999' });
    expect((await call('GET', '/v1/nodes/tok-1?fields=agent_token_hash')).statusCode).toBe(400);
  });

  describe('disable_ramdisk (1.70)', () => {
    const STEPS = [{ interface: 'deploy', step: 'erase_devices_metadata' }];
    const put = (body: Record<string, unknown>, version = 'latest') => call('PUT', '/v1/nodes/dr-1/states/provision', body, version);

    it('answers 406 below 1.70 and 400 with any target but clean or a value that is no boolean, whatever its value', async () => {
      const { uuid } = await node({ name: 'dr-1', driver: 'fake-hardware' });
      await setState(uuid, 'manageable');
      const old = await put({ target: 'clean', clean_steps: STEPS, disable_ramdisk: true }, '1.69');
      expect(old.statusCode).toBe(406);
      expect(fault(old.body)).toMatch(/^disable_ramdisk: needs API version 1\.70/);
      for (const value of [true, false]) {
        const res = await put({ target: 'provide', disable_ramdisk: value });
        expect(res.statusCode).toBe(400);
        expect(fault(res.body)).toBe('disable_ramdisk: only valid with manual cleaning (target "clean"), not "provide"');
      }
      const bad = await put({ target: 'clean', clean_steps: STEPS, disable_ramdisk: 'please' });
      expect(bad.statusCode).toBe(400);
      expect(fault(bad.body)).toMatch(/^disable_ramdisk: expected a boolean/);
      expect((await show('dr-1')).provision_state).toBe('manageable');
    });

    it('refuses the steps that need the ramdisk instead of skipping them, and cleans as before with false', async () => {
      const { uuid } = await node({ name: 'dr-1', driver: 'fake-hardware' });
      await setState(uuid, 'manageable');
      const refused = await put({ target: 'clean', clean_steps: [...STEPS, { interface: 'deploy', step: 'erase_devices' }], disable_ramdisk: true });
      expect(refused.statusCode).toBe(400);
      expect(fault(refused.body)).toBe('clean_steps: with disable_ramdisk, clean step deploy.erase_devices_metadata, clean step deploy.erase_devices require booting a ramdisk; only out-of-band steps can run without one');
      expect(await show('dr-1')).toMatchObject({ provision_state: 'manageable', driver_internal_info: {} });

      const accepted = await put({ target: 'clean', clean_steps: STEPS, disable_ramdisk: 'false' });
      expect(accepted.statusCode, accepted.body).toBe(202);
      for (let i = 0; i < 100 && (await show('dr-1')).provision_state !== 'manageable'; i++) await new Promise((r) => setTimeout(r, 20));
      const after = await show('dr-1');
      expect(after).toMatchObject({ provision_state: 'manageable', last_error: null });
      expect(after.driver_internal_info).not.toHaveProperty('cleaning_disable_ramdisk');
    });

    it('runs an out-of-band step without booting the ramdisk, where the same clean without it waits for the agent', async () => {
      // No built-in interface offers an out-of-band step: the fake deploy of this registry is given
      // one, and a ramdisk to boot before in-band cleaning (it then waits for its agent).
      const fake = new FakeHardwareState();
      const drivers = createDriverRegistry({ fakeState: fake });
      const deploy = drivers.interfacesFor({ driver: 'fake-hardware', deploy_interface: 'fake' }).deploy;
      const oob: CleanStep = { interface: 'deploy', step: 'reset_bmc', priority: 0, description: 'through the BMC', requiresRamdisk: false };
      const offered = deploy.getCleanSteps!.bind(deploy);
      Object.assign(deploy, { getCleanSteps: () => [...offered({} as never), oob], prepareCleaning: async () => 'wait' });
      await close();
      await db.store.db.deleteFrom('conductors').where('hostname', '=', 'aio').execute();
      const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
      ({ app, close } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false }), drivers));

      const { uuid } = await node({ name: 'dr-1', driver: 'fake-hardware' });
      await setState(uuid, 'manageable');
      const steps = [{ interface: 'deploy', step: 'reset_bmc' }];
      expect((await put({ target: 'clean', clean_steps: steps, disable_ramdisk: true })).statusCode).toBe(202);
      for (let i = 0; i < 100 && (await show('dr-1')).provision_state !== 'manageable'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await show('dr-1')).toMatchObject({ provision_state: 'manageable', last_error: null, driver_internal_info: { clean_steps: steps } });
      expect(fake.machine({ uuid } as never).cleanSteps).toEqual(['deploy.reset_bmc']);

      // Without disable_ramdisk the same step waits for the ramdisk's agent first.
      expect((await put({ target: 'clean', clean_steps: steps })).statusCode).toBe(202);
      for (let i = 0; i < 100 && (await show('dr-1')).provision_state !== 'clean wait'; i++) await new Promise((r) => setTimeout(r, 20));
      expect((await show('dr-1')).provision_state).toBe('clean wait');
    });
  });

  it('takes deploy and undeploy from 1.73 only (406 before), as active and deleted', async () => {
    const { uuid } = await node({ name: 'verb-1', driver: 'fake-hardware' });
    await setState(uuid, 'available');
    const put = (target: string, version: string) => call('PUT', '/v1/nodes/verb-1/states/provision', { target }, version);
    const old = await put('deploy', '1.72');
    expect(old.statusCode).toBe(406);
    expect(fault(old.body)).toMatch(/"deploy" needs API version 1\.73/);
    expect((await put('deploy', '1.73')).statusCode).toBe(202);
    for (let i = 0; i < 100 && (await show('verb-1')).provision_state !== 'active'; i++) await new Promise((r) => setTimeout(r, 20));
    expect((await show('verb-1')).provision_state).toBe('active');
    expect((await put('undeploy', '1.72')).statusCode).toBe(406);
    // The refusal speaks the version's spelling.
    const wrong = await put('provide', '1.73');
    expect(fault(wrong.body)).toMatch(/allowed actions: .*undeploy/);
    expect(fault((await put('provide', '1.72')).body)).toMatch(/allowed actions: (?!.*undeploy).*deleted/);
    expect((await put('undeploy', '1.73')).statusCode).toBe(202);
  });

  it('shows the BIOS registry fields from 1.74: always for one setting, with detail in a list; fields selects', async () => {
    const { uuid } = await node({ name: 'bios-r', driver: 'fake-hardware' });
    await db.store.db.insertInto('bios_settings').values({ node_id: await nodeId(uuid), name: 'ProcVirtualization', value: 'Enabled', created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' }).execute();
    const list = async (query: string, version = '1.74') => {
      const res = await call('GET', `/v1/nodes/bios-r/bios${query}`, undefined, version);
      expect(res.statusCode, `${query} ${res.body}`).toBe(200);
      return Object.keys(res.json<{ bios: Array<Record<string, unknown>> }>().bios[0]!);
    };
    const registry = ['attribute_type', 'allowable_values', 'lower_bound', 'max_length', 'min_length', 'read_only', 'reset_required', 'unique', 'upper_bound'];
    expect(await list('')).toEqual(['created_at', 'updated_at', 'name', 'value', 'links']);
    expect(await list('?detail=True')).toEqual(['created_at', 'updated_at', 'name', 'value', ...registry, 'links']);
    expect(await list('?fields=name,read_only')).toEqual(['created_at', 'updated_at', 'name', 'read_only', 'links']);
    const detail = (await call('GET', '/v1/nodes/bios-r/bios?detail=true', undefined, '1.74')).json<{ bios: Array<Record<string, unknown>> }>().bios[0]!;
    // ironring keeps no registry: unknown, as Ironic shows a setting without one.
    expect(detail).toMatchObject({ attribute_type: null, allowable_values: [], lower_bound: null, read_only: null, unique: null, upper_bound: null });

    const one = async (version: string) => Object.keys((await call('GET', '/v1/nodes/bios-r/bios/ProcVirtualization', undefined, version)).json<Record<string, Record<string, unknown>>>().ProcVirtualization!);
    expect(await one('1.73')).toEqual(['created_at', 'updated_at', 'name', 'value', 'links']);
    expect(await one('1.74')).toEqual(['created_at', 'updated_at', 'name', 'value', ...registry, 'links']);

    for (const [query, message] of [
      ['?fields=name&detail=true', /^fields and detail cannot be used together/],
      ['?fields=colour', /^fields: unknown BIOS setting field "colour"/],
      ['?detail=maybe', /^detail: expected a boolean/],
    ] as const) {
      const res = await call('GET', `/v1/nodes/bios-r/bios${query}`, undefined, '1.74');
      expect(res.statusCode, query).toBe(400);
      expect(fault(res.body)).toMatch(message);
    }
  });

  it('selects driver fields from 1.77 (406 before); links stay, a field the view lacks is 400 naming it', async () => {
    await registerConductor(db.store, { hostname: 'c-drv', group: '', drivers: ['fake-hardware', 'ipmi'], interfaces: createDriverRegistry().registrations() }, 60);
    for (const url of ['/v1/drivers?fields=name', '/v1/drivers/ipmi?fields=name']) {
      const res = await call('GET', url, undefined, '1.76');
      expect(res.statusCode, url).toBe(406);
      expect(fault(res.body)).toMatch(/^fields: selecting driver fields needs API version 1\.77/);
    }
    const listed = (await call('GET', '/v1/drivers?fields=name,hosts', undefined, '1.77')).json<{ drivers: Array<Record<string, unknown>> }>().drivers;
    expect(listed.map((d) => Object.keys(d))).toEqual([['name', 'hosts', 'links'], ['name', 'hosts', 'links']]);
    expect(listed.map((d) => d.name)).toEqual(['fake-hardware', 'ipmi']);
    const props = (await call('GET', '/v1/drivers?fields=properties', undefined, '1.77')).json<{ drivers: Array<Record<string, unknown>> }>().drivers;
    expect(Object.keys(props[0]!)).toEqual(['links', 'properties']);

    const one = await call('GET', '/v1/drivers/ipmi?fields=default_power_interface,name', undefined, '1.77');
    expect(one.json()).toEqual({ name: 'ipmi', links: expect.any(Array), default_power_interface: 'ipmitool' });
    expect(Object.keys((await call('GET', '/v1/drivers/ipmi', undefined, '1.77')).json())).toContain('enabled_power_interfaces');

    for (const [url, message] of [
      ['/v1/drivers?fields=default_power_interface', /^fields: "default_power_interface" is not a field of this driver view/],
      ['/v1/drivers/ipmi?fields=colour', /^fields: "colour" is not a field/],
      ['/v1/drivers?fields=name&detail=true', /^fields and detail cannot be used together/],
    ] as const) {
      const res = await call('GET', url, undefined, '1.77');
      expect(res.statusCode, url).toBe(400);
      expect(fault(res.body)).toMatch(message);
    }
  });

  it('serves the node inventory from 1.81 only (404 before, as Ironic), and 404 for a node never inspected', async () => {
    const { uuid } = await node({ name: 'inv-1', driver: 'fake-hardware' });
    const get = (version: string) => call('GET', '/v1/nodes/inv-1/inventory', undefined, version);
    expect(fault((await get('1.81')).body)).toBe(`Inventory not found for node ${uuid}.`);
    const found = { inventory: { cpu: { count: 4 } }, plugin_data: { macs: ['52:54:00:00:00:01'] } };
    await saveInventory(db.store, await nodeId(uuid), found);
    const res = await get('1.81');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(found);
    for (const version of ['1.80', '1.1']) {
      const old = await get(version);
      expect(old.statusCode, version).toBe(404);
      expect(fault(old.body)).toMatch(/needs API version 1\.81 or later/);
    }
  });
});
