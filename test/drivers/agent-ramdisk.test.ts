/**
 * The deploy ramdisk's kernel parameters follow the node's state: while it is inspected, the agent
 * is told where to post its inventory — also on the boot files a new owner rebuilds after a
 * take-over, so an inspection survives its owner; otherwise only where the API is.
 */
import { describe, expect, it } from 'vitest';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import { agentRamdiskParams, requireAgentApiUrl } from '../../src/drivers/direct/agent-ramdisk.js';
import { FakeHardwareState } from '../../src/drivers/fake/fake-state.js';
import { makeNode, makeTask } from './helpers.js';

describe('the agent ramdisk parameters', () => {
  it('add the inspection callback in the inspection states only, under /v1 of the API', () => {
    expect(agentRamdiskParams('http://api:6385', 'inspect wait')).toEqual({ 'ipa-api-url': 'http://api:6385', 'ipa-inspection-callback-url': 'http://api:6385/v1/continue_inspection' });
    expect(agentRamdiskParams('http://api:6385/v1/', 'inspecting')['ipa-inspection-callback-url']).toBe('http://api:6385/v1/continue_inspection');
    for (const state of ['cleaning', 'clean wait', 'wait call-back', 'rescue wait', undefined]) expect(agentRamdiskParams('http://api:6385', state)).toEqual({ 'ipa-api-url': 'http://api:6385' });
    expect(() => requireAgentApiUrl(null)).toThrow(/agent_api_url/);
  });

  it('are rebuilt with the callback by the new owner of a node in inspect wait (take-over)', async () => {
    const state = new FakeHardwareState();
    const registry = createDriverRegistry({ fakeState: state, agentApiUrl: 'http://api:6385' });
    const task = makeTask(registry, makeNode({ provision_state: 'inspect wait', deploy_interface: 'direct', inspect_interface: 'agent' }));
    await task.driver.deploy.takeOver(task);
    expect(state.peek(task.node.uuid)).toMatchObject({ prepared: 'ramdisk', ramdiskParams: { 'ipa-inspection-callback-url': 'http://api:6385/v1/continue_inspection' } });
    const rescued = makeTask(registry, makeNode({ provision_state: 'rescue wait', deploy_interface: 'direct', rescue_interface: 'agent' }));
    await rescued.driver.deploy.takeOver(rescued);
    expect(state.peek(rescued.node.uuid)?.ramdiskParams).toEqual({ 'ipa-api-url': 'http://api:6385' });
  });
});
