/**
 * Deploy templates and `deploy_steps` applied by the node's owner (`conductor/deploy-steps.ts`,
 * Ironic's `conductor/steps.py`): the steps of templates matching the instance's traits, and those
 * of the request (API 1.69), run with the core step in priority order on the fake interfaces (which
 * record them); a step the node's interfaces do not offer refuses the deploy (400, naming the step
 * and the interface, nothing changed), never skipped; a step that fails fails the deploy.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { loadConfig } from '../../src/config/load.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };
const RAID_CONFIG = { logical_disks: [{ size_gb: 100, raid_level: '1', is_root_volume: true }] };
const RAID = { interface: 'raid', step: 'apply_configuration', args: { raid_config: RAID_CONFIG }, priority: 150 };
const RESET = { interface: 'bios', step: 'factory_reset', args: {}, priority: 50 };

type Json = Record<string, unknown>;

function fault(body: string): string {
  return (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
}

describe.each(engines)('deploy steps of templates and requests on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let fake: FakeHardwareState;

  beforeEach(async () => {
    fake = new FakeHardwareState();
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth' } }).config;
    ({ app, ops } = await startInProcessApi(db.store, config, createLogger({ level: 'silent', pretty: false }), createDriverRegistry({ fakeState: fake })));
  });
  afterEach(async () => {
    await Promise.allSettled([...ops.running]);
    await app.close();
  });

  const send = (method: 'GET' | 'POST' | 'PATCH' | 'PUT', url: string, payload?: unknown, headers: Record<string, string> = LATEST) =>
    app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  async function ok(method: 'POST' | 'PATCH' | 'PUT', url: string, payload: unknown): Promise<void> {
    const res = await send(method, url, payload);
    expect(res.statusCode, res.body).toBeLessThan(300);
  }
  /** An available fake node with these traits, whose instance asks for `asked`. */
  async function node(name: string, traits: string[], asked: string[] | undefined, body: Json = {}): Promise<string> {
    const res = await send('POST', '/v1/nodes', { driver: 'fake-hardware', name, ...body });
    expect(res.statusCode, res.body).toBe(201);
    if (traits.length > 0) await ok('PUT', `/v1/nodes/${name}/traits`, { traits });
    if (asked !== undefined) await ok('PATCH', `/v1/nodes/${name}`, [{ op: 'add', path: '/instance_info/traits', value: asked }]);
    await db.store.db.updateTable('nodes').set({ provision_state: 'available' }).where('name', '=', name).execute();
    return (res.json() as { uuid: string }).uuid;
  }
  const deploy = (name: string, extra: Json = {}, headers: Record<string, string> = LATEST) => send('PUT', `/v1/nodes/${name}/states/provision`, { target: 'active', ...extra }, headers);
  async function settled(name: string): Promise<Json> {
    await Promise.allSettled([...ops.running]);
    return (await send('GET', `/v1/nodes/${name}`)).json() as Json;
  }
  const history = async (uuid: string) =>
    (await db.store.db.selectFrom('node_history').innerJoin('nodes', 'nodes.id', 'node_history.node_id').select('node_history.event').where('nodes.uuid', '=', uuid).orderBy('node_history.id').execute()).map((h) => h.event);

  it('runs the steps of the templates the instance asks for, with the core step, highest priority first', async () => {
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_RAID1', steps: [RAID, RESET] });
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_UNASKED', steps: [{ interface: 'bios', step: 'apply_configuration', args: { settings: [] }, priority: 10 }] });
    const uuid = await node('n1', ['CUSTOM_RAID1', 'CUSTOM_UNASKED'], ['CUSTOM_RAID1']);
    const res = await deploy('n1');
    expect(res.statusCode, res.body).toBe(202);
    const after = await settled('n1');
    expect(after, String(after.last_error)).toMatchObject({ provision_state: 'active', last_error: null, deploy_step: {} });
    // Only the matching template's steps ran (the other template names a trait the instance did not ask for).
    expect(fake.peek(uuid)?.deploySteps).toEqual(['raid.apply_configuration', 'bios.factory_reset']);
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', prepared: 'instance' });
    expect(after.driver_internal_info).toEqual({
      deploy_steps: [RAID, { interface: 'deploy', step: 'deploy', args: {}, priority: 100 }, RESET],
    });
    const events = await history(uuid);
    const ran = events.filter((e) => e.startsWith('deploy step '));
    expect(ran).toEqual(['deploy step raid.apply_configuration done', 'deploy step deploy.deploy done', 'deploy step bios.factory_reset done']);
    expect(events).toContain('deploy steps: raid.apply_configuration (150), deploy.deploy (100), bios.factory_reset (50)');
  });

  it('deploys with the core step alone when no template matches, as before templates', async () => {
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_RAID1', steps: [RAID] });
    const uuid = await node('plain', ['CUSTOM_RAID1'], undefined);
    expect((await deploy('plain')).statusCode).toBe(202);
    expect(await settled('plain')).toMatchObject({ provision_state: 'active', driver_internal_info: { deploy_steps: [{ interface: 'deploy', step: 'deploy', args: {}, priority: 100 }] } });
    expect(fake.peek(uuid)?.deploySteps).toEqual([]);
    // Undeploying forgets what the deploy ran.
    expect((await send('PUT', '/v1/nodes/plain/states/provision', { target: 'deleted' })).statusCode).toBe(202);
    const after = await settled('plain');
    expect(after.provision_state).toBe('available');
    expect(after.driver_internal_info).not.toHaveProperty('deploy_steps');
  });

  it('refuses (400, nothing changed) a deploy whose template names a step the node\'s interface does not offer', async () => {
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_RAID1', steps: [RAID] });
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_VENDOR', steps: [{ interface: 'management', step: 'frobnicate', args: {}, priority: 10 }] });
    const uuid = await node('noraid', ['CUSTOM_RAID1'], ['CUSTOM_RAID1'], { raid_interface: 'no-raid' });
    const res = await deploy('noraid');
    expect(res.statusCode, res.body).toBe(400);
    expect(fault(res.body)).toMatch(/^deploy templates: .*Matching deploy templates: CUSTOM_RAID1\. Errors: node does not support this deploy step: \{"interface":"raid","step":"apply_configuration"\} \(raid_interface "no-raid" offers no deploy steps\)$/);
    expect(await settled('noraid')).toMatchObject({ provision_state: 'available', driver_internal_info: {} });
    expect(fake.peek(uuid)?.powerOns ?? 0).toBe(0);

    await node('mgmt', ['CUSTOM_VENDOR'], ['CUSTOM_VENDOR']);
    const mgmt = await deploy('mgmt');
    expect(mgmt.statusCode).toBe(400);
    expect(fault(mgmt.body)).toMatch(/node does not support this deploy step: \{"interface":"management","step":"frobnicate"\} \(management_interface "fake" offers no deploy steps\)/);
  });

  it('refuses instance traits the node lacks, and steps missing required or given unknown arguments', async () => {
    await node('lacks', ['CUSTOM_A'], ['CUSTOM_A', 'CUSTOM_B']);
    const lacks = await deploy('lacks');
    expect(lacks.statusCode).toBe(400);
    expect(fault(lacks.body)).toMatch(/^instance_info\.traits: cannot specify instance traits that are not also set on the node; node .+ is missing traits CUSTOM_B$/);

    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_BIOS', steps: [{ interface: 'bios', step: 'apply_configuration', args: { colour: 'red' }, priority: 10 }] });
    await node('args', ['CUSTOM_BIOS'], ['CUSTOM_BIOS']);
    const args = await deploy('args');
    expect(args.statusCode).toBe(400);
    expect(fault(args.body)).toMatch(/deploy step bios\.apply_configuration has these unexpected arguments: colour; deploy step bios\.apply_configuration is missing these required arguments: settings/);
    expect((await settled('args')).provision_state).toBe('available');
  });

  it('fails the deploy (deploy failed, naming the step) when a step fails as it runs', async () => {
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_BAD', steps: [{ ...RAID, args: { raid_config: { logical_disks: 'x' } } }] });
    const uuid = await node('bad', ['CUSTOM_BAD'], ['CUSTOM_BAD']);
    expect((await deploy('bad')).statusCode).toBe(202);
    const after = await settled('bad');
    expect(after.provision_state).toBe('deploy failed');
    expect(after.last_error).toMatch(/^deploy step raid\.apply_configuration failed: /);
    // The core step (priority 100) never ran: the failed step came first.
    expect(fake.peek(uuid)?.prepared ?? null).toBeNull();
  });

  it('checks the templates again when the deploy starts, and a conductor taking a deploy over goes on from its step', async () => {
    // A template changed between the request and the start (here: the deploy is resumed by this
    // conductor with no plan yet): the deploy fails, naming the step, instead of skipping it.
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_RAID1', steps: [RAID] });
    const late = await node('late', ['CUSTOM_RAID1'], ['CUSTOM_RAID1'], { raid_interface: 'no-raid' });
    await db.store.db.updateTable('nodes').set({ provision_state: 'deploying', target_provision_state: 'active' }).where('uuid', '=', late).execute();
    expect(await ops.resume(late)).toBe('resumed');
    const failed = await settled('late');
    expect(failed.provision_state).toBe('deploy failed');
    expect(failed.last_error).toMatch(/node does not support this deploy step: \{"interface":"raid","step":"apply_configuration"\} \(raid_interface "no-raid" offers no deploy steps\)/);
    expect(fake.peek(late)?.prepared ?? null).toBeNull();

    // Taken over at its second step: the first is not run again, the others are.
    const core = { interface: 'deploy', step: 'deploy', args: {}, priority: 100 };
    const mid = await node('mid', [], undefined);
    await db.store.db.updateTable('nodes')
      .set({ provision_state: 'deploying', target_provision_state: 'active', driver_internal_info: JSON.stringify({ deploy_steps: [RAID, core, RESET], deploy_step_index: 1 }) })
      .where('uuid', '=', mid).execute();
    expect(await ops.resume(mid)).toBe('resumed');
    const done = await settled('mid');
    expect(done, String(done.last_error)).toMatchObject({ provision_state: 'active', driver_internal_info: { deploy_steps: [RAID, core, RESET] } });
    expect(fake.peek(mid)?.deploySteps).toEqual(['bios.factory_reset']);
    expect(fake.peek(mid)).toMatchObject({ power: 'power on', prepared: 'instance' });
  });

  it('takes deploy_steps from 1.69 with active and rebuild, which override a template\'s step of the same name', async () => {
    await ok('POST', '/v1/deploy_templates', { name: 'CUSTOM_RAID1', steps: [RAID, RESET] });
    const uuid = await node('user', ['CUSTOM_RAID1'], ['CUSTOM_RAID1']);
    const old = await deploy('user', { deploy_steps: [RESET] }, { 'x-openstack-ironic-api-version': '1.68' });
    expect(old.statusCode).toBe(406);
    expect(fault(old.body)).toMatch(/^deploy_steps: needs API version 1\.69 or later/);
    for (const [steps, message] of [
      [[{ interface: 'bios', step: 'factory_reset', priority: 1 }], /^deploy_steps\[0\]\.args: required$/],
      [[{ ...RESET, interface: 'vendor' }], /^deploy_steps\[0\]\.interface: expected one of/],
      [{ interface: 'bios' }, /^deploy_steps: expected a non-empty list/],
      [[RESET, RESET], /^deploy_steps: duplicate deploy steps/],
      [[{ interface: 'deploy', step: 'erase_devices', args: {}, priority: 10 }], /^deploy_steps: .*node does not support this deploy step: \{"interface":"deploy","step":"erase_devices"\} \(deploy_interface "fake" offers deploy\)/],
      [[{ interface: 'deploy', step: 'deploy', args: {}, priority: 90 }], /core step and cannot be overridden/],
    ] as const) {
      const res = await deploy('user', { deploy_steps: steps });
      expect(res.statusCode, JSON.stringify(steps)).toBe(400);
      expect(fault(res.body), JSON.stringify(steps)).toMatch(message);
    }
    const notDeploy = await send('PUT', '/v1/nodes/user/states/provision', { target: 'manage', deploy_steps: [RESET] });
    expect(notDeploy.statusCode).toBe(400);
    expect(fault(notDeploy.body)).toMatch(/^deploy_steps: only valid when setting target provision state to active or rebuild, not "manage"$/);

    // The request disables the template's RAID step and runs the reset before the core step.
    const res = await deploy('user', { deploy_steps: [{ ...RAID, priority: 0 }, { ...RESET, priority: 110 }] });
    expect(res.statusCode, res.body).toBe(202);
    const after = await settled('user');
    expect(after, String(after.last_error)).toMatchObject({ provision_state: 'active' });
    expect(fake.peek(uuid)?.deploySteps).toEqual(['bios.factory_reset']);
    expect((after.driver_internal_info as Json).deploy_steps).toEqual([{ ...RESET, priority: 110 }, { interface: 'deploy', step: 'deploy', args: {}, priority: 100 }]);

    // A rebuild takes them too; the earlier request's override is gone, so the template's RAID step runs.
    const rebuild = await send('PUT', '/v1/nodes/user/states/provision', { target: 'rebuild', deploy_steps: [{ interface: 'bios', step: 'apply_configuration', args: { settings: [{ name: 'x', value: 'y' }] }, priority: 120 }] });
    expect(rebuild.statusCode, rebuild.body).toBe(202);
    expect(await settled('user')).toMatchObject({ provision_state: 'active' });
    expect(fake.peek(uuid)?.deploySteps).toEqual(['bios.factory_reset', 'raid.apply_configuration', 'bios.apply_configuration', 'bios.factory_reset']);
  });
});
