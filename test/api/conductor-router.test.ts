import { describe, expect, it } from 'vitest';
import { ConductorRouter } from '../../src/api/conductor-router.js';
import type { LocalConductor } from '../../src/api/conductor-router.js';
import { NodeLocked } from '../../src/cluster/errors.js';
import { conductorRings } from '../../src/cluster/conductor-rings.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { createLogger } from '../../src/common/logger.js';
import { NoLiveConductor } from '../../src/common/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const NODE = { uuid: '00000000-0000-4000-8000-00000000c0de', conductor_group: '' };

describe.each(engines)('calls to the conductor of this process on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;

  /** The API's view of the conductors: read afresh on every call, as the router asks. */
  const rings = () => conductorRings(db.store, config.conductor, { logger: createLogger({ level: 'silent' }), pollIntervalMs: 0, maxAgeMs: 0 });

  /** The only live conductor, publishing an RPC address where nothing listens. */
  const onlyConductor = () => registerConductor(db.store, { hostname: 'here', group: '', drivers: ['fake-hardware'], rpcUrl: 'http://127.0.0.1:9' }, 60);

  function local(hostname: string, answer: (method: string, action: string, uuid: string, body: unknown) => Promise<unknown>) {
    const calls: Array<[string, string, string, unknown]> = [];
    const conductor: LocalConductor = {
      hostname,
      call: (method, action, uuid, body) => {
        calls.push([method, action, uuid, body]);
        return answer(method, action, uuid, body);
      },
    };
    return { calls, conductor };
  }

  it('calls the owner directly when it is this process\'s conductor, with a copy of the body and a plain answer', async () => {
    await onlyConductor();
    const { calls, conductor } = local('here', () => Promise.resolve({ boot_device: 'pxe', persistent: false, at: new Date(0) }));
    const router = new ConductorRouter(config, rings(), () => conductor);
    const body = { boot_device: 'pxe' };
    // Over HTTP this would fail: nothing listens at the published address.
    expect(await router.call(NODE, 'POST', 'boot_device', body)).toEqual({ boot_device: 'pxe', persistent: false, at: '1970-01-01T00:00:00.000Z' });
    expect(calls).toEqual([['POST', 'boot_device', NODE.uuid, { boot_device: 'pxe' }]]);
    expect(calls[0]![3]).not.toBe(body);
  });

  it('passes the conductor\'s own error on, with its status', async () => {
    await onlyConductor();
    const { conductor } = local('here', () => Promise.reject(new NodeLocked(NODE.uuid, 'here')));
    const router = new ConductorRouter(config, rings(), () => conductor);
    const err = await router.call(NODE, 'POST', 'power', { target: 'power on' }).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(NodeLocked);
    expect((err as NodeLocked).httpStatus).toBe(409);
  });

  it('goes over RPC when the owner is another conductor, or before this process\'s conductor has started', async () => {
    await onlyConductor();
    const other = local('elsewhere', () => Promise.resolve({}));
    for (const router of [new ConductorRouter(config, rings(), () => other.conductor), new ConductorRouter(config, rings(), () => null)]) {
      await expect(router.call(NODE, 'GET', 'boot_device')).rejects.toThrow(NoLiveConductor);
      await expect(router.call(NODE, 'GET', 'boot_device')).rejects.toThrow(/did not answer/);
    }
    expect(other.calls).toEqual([]);
  });
});
