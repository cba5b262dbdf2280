/**
 * Vendor passthru through the API and its in-process conductor: the fake vendor interface's
 * methods (Ironic's FakeVendorB) listed with their metadata, a background one answered 202 and run,
 * a synchronous one answered 200 with its value, arguments checked (400 naming `bar`), HTTP methods
 * checked, `no-vendor` refused naming the interface; driver-level passthru and the driver
 * properties the fake vendor declares (B1, B2).
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { replaceInterfaces } from '../../src/cluster/hardware-interfaces.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const V = (v: string) => ({ 'x-openstack-ironic-api-version': v });
const fault = (body: string) => (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;

describe.each(engines)('vendor passthru on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let close: () => Promise<void>;
  let fake: FakeHardwareState;

  beforeEach(async () => {
    fake = new FakeHardwareState();
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    const drivers = createDriverRegistry({ fakeState: fake });
    ({ app, ops, close } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false }), drivers));
    // The drivers routes list what live conductors registered: register the interfaces too.
    const { id } = await db.store.db.selectFrom('conductors').select('id').where('hostname', '=', 'aio').executeTakeFirstOrThrow();
    await replaceInterfaces(db.store, id, drivers.registrations());
  });
  afterEach(async () => close());

  const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, version = 'latest') =>
    app.inject({ method, url, headers: V(version), ...(payload !== undefined ? { payload: payload as object } : {}) });
  async function node(name: string, body: Record<string, unknown> = { driver: 'fake-hardware' }): Promise<string> {
    const res = await call('POST', '/v1/nodes', { name, ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ uuid: string }>().uuid;
  }

  it('lists the fake vendor methods with Ironic\'s metadata', async () => {
    const n = await node('p1');
    const res = await call('GET', `/v1/nodes/${n}/vendor_passthru/methods`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      second_method: { http_methods: ['POST'], async: true, description: 'Test if the value of bar is kazoo', attach: false, require_exclusive_lock: true },
      third_method_sync: { http_methods: ['POST'], async: false, description: 'Test if the value of bar is meow', attach: false, require_exclusive_lock: true },
      fourth_method_shared_lock: { http_methods: ['POST'], async: true, description: 'Test if the value of bar is woof', attach: false, require_exclusive_lock: false },
    });
  });

  it('runs an asynchronous method in the background (202) and a synchronous one at once (200 with its value)', async () => {
    const n = await node('p2');
    const async = await call('POST', `/v1/nodes/${n}/vendor_passthru/second_method`, { bar: 'kazoo' });
    expect(async.statusCode, async.body).toBe(202);
    expect(async.body).toBe('');
    const shared = await call('POST', `/v1/nodes/${n}/vendor_passthru?method=fourth_method_shared_lock`, { bar: 'cat' });
    expect(shared.statusCode, shared.body).toBe(202);
    await Promise.allSettled([...ops.running]);
    expect(fake.peek(n)?.vendorCalls).toEqual([
      { method: 'second_method', httpMethod: 'POST', result: true },
      { method: 'fourth_method_shared_lock', httpMethod: 'POST', result: false },
    ]);
    const sync = await call('POST', `/v1/nodes/p2/vendor_passthru?method=third_method_sync`, { bar: 'meow' });
    expect(sync.statusCode, sync.body).toBe(200);
    expect(sync.json()).toBe(true);
    expect((await call('POST', `/v1/nodes/${n}/vendor_passthru/third_method_sync`, { bar: 'woof' })).json()).toBe(false);
    // The exclusive lock is released after a synchronous call.
    expect((await call('GET', `/v1/nodes/${n}`)).json<{ reservation: unknown }>().reservation).toBeNull();
  });

  it('refuses a missing argument, an unknown method, a wrong HTTP method and no method, each with 400', async () => {
    const n = await node('p3');
    const cases: Array<['GET' | 'POST' | 'PUT', string, unknown, RegExp]> = [
      ['POST', 'second_method', {}, /^bar is required by vendor method second_method/],
      ['POST', 'fifth_method', { bar: 'x' }, /no handler for method "fifth_method"/],
      ['PUT', 'third_method_sync', { bar: 'meow' }, /does not support HTTP PUT/],
      ['POST', '', { bar: 'x' }, /^method: not specified/],
      ['POST', 'third_method_sync', [1, 2], /^request body: expected a JSON object/],
    ];
    for (const [method, name, body, message] of cases) {
      const res = await call(method, `/v1/nodes/${n}/vendor_passthru${name ? `/${name}` : ''}`, body);
      expect(res.statusCode, name).toBe(400);
      expect(fault(res.body), name).toMatch(message);
    }
    const deep = await call('POST', `/v1/nodes/${n}/vendor_passthru/third_method_sync`, { bar: 'meow', x: JSON.parse('['.repeat(40) + ']'.repeat(40)) as unknown });
    expect(deep.statusCode).toBe(400);
    const big = await call('POST', `/v1/nodes/${n}/vendor_passthru/third_method_sync`, { bar: 'meow', x: 'y'.repeat(70_000) });
    expect(big.statusCode).toBe(400);
    expect(fault(big.body)).toMatch(/limited to 65536 bytes/);
    expect(fake.peek(n)?.vendorCalls).toBeUndefined();
  });

  it('refuses every call to a no-vendor node naming the interface, and lists no methods for it', async () => {
    const n = await node('p4', { driver: 'fake-hardware', vendor_interface: 'no-vendor' });
    expect((await call('GET', `/v1/nodes/${n}/vendor_passthru/methods`)).json()).toEqual({});
    const res = await call('POST', `/v1/nodes/${n}/vendor_passthru/third_method_sync`, { bar: 'meow' });
    expect(res.statusCode).toBe(400);
    expect(fault(res.body)).toMatch(/does not support vendor .*vendor_interface is "no-vendor"/);
    const ipmi = await node('p5', { driver: 'ipmi' });
    expect(fault((await call('POST', `/v1/nodes/${ipmi}/vendor_passthru/x`, {})).body)).toMatch(/Driver ipmi does not support vendor/);
  });

  it('lists no driver-level methods for fake-hardware, refuses calls, and 404s an unserved driver', async () => {
    const list = await call('GET', '/v1/drivers/fake-hardware/vendor_passthru/methods');
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json()).toEqual({});
    const res = await call('POST', '/v1/drivers/fake-hardware/vendor_passthru?method=lookup', {});
    expect(res.statusCode).toBe(400);
    expect(fault(res.body)).toMatch(/no handler for method "lookup"/);
    const ipmi = await call('POST', '/v1/drivers/ipmi/vendor_passthru/lookup', {});
    expect(ipmi.statusCode).toBe(400);
    expect(fault(ipmi.body)).toMatch(/Driver ipmi does not support vendor/);
    expect((await call('GET', '/v1/drivers/redfish/vendor_passthru/methods')).statusCode).toBe(404);
  });

  it('includes the fake vendor properties B1 and B2 in fake-hardware\'s driver properties, and none in ipmi\'s', async () => {
    const fakeProps = (await call('GET', '/v1/drivers/fake-hardware/properties')).json<Record<string, string>>();
    expect(fakeProps).toMatchObject({ B1: 'B1 description. Required.', B2: 'B2 description. Required.' });
    const ipmiProps = (await call('GET', '/v1/drivers/ipmi/properties')).json<Record<string, string>>();
    expect(ipmiProps).not.toHaveProperty('B1');
    expect(ipmiProps).toHaveProperty('ipmi_address');
  });
});
