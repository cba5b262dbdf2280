import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { InvalidParameter, NotFound } from '../../src/common/errors.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { callRpc, rpcRoutes } from '../../src/conductor/rpc.js';

/** Operations that record what they were asked to do. */
function recordingOps() {
  const seen: unknown[][] = [];
  const ops = {
    power: (...args: unknown[]) => Promise.resolve(void seen.push(['power', ...args])),
    getBootDevice: (uuid: string) => Promise.resolve({ boot_device: 'pxe', persistent: false, uuid }),
    setMaintenance: (...args: unknown[]) => Promise.resolve(void seen.push(['maintenance', ...args])),
  } as unknown as NodeOperations;
  return { ops, seen };
}

describe('RPC actions, over HTTP and in-process', () => {
  it('runs the same checks and operations either way', async () => {
    const { ops, seen } = recordingOps();
    const app = Fastify();
    rpcRoutes(app, ops);
    const uuid = '00000000-0000-4000-8000-000000000001';
    const viaHttp = await app.inject({ method: 'POST', url: `/v1/rpc/nodes/${uuid}/power`, payload: { target: 'power on', timeout: 5 } });
    expect(viaHttp.json()).toEqual({ ok: true });
    expect(await callRpc(ops, 'POST', 'power', uuid, { target: 'power on', timeout: 5 })).toEqual({ ok: true });
    expect(seen).toEqual([
      ['power', uuid, 'power on', 5],
      ['power', uuid, 'power on', 5],
    ]);
    expect((await app.inject({ method: 'GET', url: `/v1/rpc/nodes/${uuid}/boot_device` })).json()).toEqual(await callRpc(ops, 'GET', 'boot_device', uuid));
    await app.close();
  });

  it('refuses bad input before any operation, and an action that does not exist', async () => {
    const { ops, seen } = recordingOps();
    await expect(callRpc(ops, 'POST', 'power', 'u', { target: 'power on', timeout: 0 })).rejects.toThrow(InvalidParameter);
    await expect(callRpc(ops, 'POST', 'maintenance', 'u')).rejects.toThrow(/maintenance: expected true or false/);
    await expect(callRpc(ops, 'POST', 'reboot-everything', 'u')).rejects.toThrow(NotFound);
    await expect(callRpc(ops, 'GET', 'power', 'u')).rejects.toThrow(NotFound);
    expect(seen).toEqual([]);
  });
});
