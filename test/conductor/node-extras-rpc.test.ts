/**
 * The RPC actions of VIFs, NMI, indicators and vendor passthru over the conductor's HTTP endpoint
 * (a conductor in another process than the API): the same answers as in-process, and input checked
 * again before anything runs, since the endpoint is reachable by anything holding the RPC credentials.
 */
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installErrorHandling } from '../../src/common/http-errors.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { rpcRoutes } from '../../src/conductor/rpc.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();

describe.each(engines.slice(0, 1))('node extra RPC actions over HTTP on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let api: FastifyInstance;
  let rpc: FastifyInstance;
  let ops: NodeOperations;
  let close: () => Promise<void>;
  let node: string;

  beforeEach(async () => {
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    ({ app: api, ops, close } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false })));
    // As the conductor builds its endpoint: Ironic's error bodies with each error's status.
    rpc = Fastify();
    installErrorHandling(rpc);
    rpcRoutes(rpc, ops);
    const res = await api.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { driver: 'fake-hardware' } });
    node = res.json<{ uuid: string }>().uuid;
    await api.inject({ method: 'POST', url: '/v1/ports', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { node_uuid: node, address: '52:54:00:10:00:01' } });
  });
  afterEach(async () => {
    await rpc.close();
    await close();
  });

  const post = (action: string, payload: unknown) => rpc.inject({ method: 'POST', url: `/v1/rpc/nodes/${node}/${action}`, payload: payload as object });

  it('attaches, lists and detaches a VIF, runs vendor methods, and reads indicators', async () => {
    expect((await post('vif_attach', { vif_info: { id: 'vif-9' } })).json()).toEqual({ ok: true });
    expect((await rpc.inject({ method: 'GET', url: `/v1/rpc/nodes/${node}/vifs` })).json()).toEqual({ vifs: [{ id: 'vif-9' }] });
    expect((await post('vif_detach', { vif_id: 'vif-9' })).json()).toEqual({ ok: true });
    expect((await post('vendor_passthru', { method: 'third_method_sync', http_method: 'POST', data: { bar: 'meow' } })).json()).toEqual({ async: false, return: true });
    expect((await post('indicator_state', { component: 'system', name: 'led' })).json()).toEqual({ state: 'ON' });
    expect((await post('inject_nmi', {})).json()).toEqual({ ok: true });
  });

  it('refuses malformed input with 400 before anything runs', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['vif_attach', { vif_info: {} }, /^id: expected a non-empty string/],
      ['vif_attach', { vif_info: { id: 'v', port_uuid: 5 } }, /^port_uuid: expected a non-empty string/],
      ['vif_detach', {}, /^vif_id: expected/],
      ['set_indicator_state', { component: 'system', name: 'led', state: 'PURPLE' }, /^state: expected one of/],
      ['vendor_passthru', { method: 'third_method_sync', http_method: 'POST', data: [1] }, /^data: expected a JSON object/],
      ['vendor_passthru', { method: 'third_method_sync', http_method: 'X'.repeat(17), data: {} }, /^http_method: expected/],
    ];
    for (const [action, body, message] of cases) {
      const res = await post(action, body);
      expect(res.statusCode, action).toBe(400);
      expect(res.body, action).toMatch(message.source.replace('^', ''));
    }
    expect((await rpc.inject({ method: 'GET', url: `/v1/rpc/nodes/${node}/vifs` })).json()).toEqual({ vifs: [] });
  });
});
