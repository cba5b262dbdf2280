/** The end of an agent session with the agent states, and the RPC checks of its two actions. */
import { describe, expect, it } from 'vitest';
import { withAgentSession } from '../../src/conductor/agent-session.js';
import { callRpc } from '../../src/conductor/rpc.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { AGENT_STATES } from '../../src/nodes/state-machine.js';

describe('agent states', () => {
  it("are Ironic's lookup-allowed states, derived from the state table", () => {
    expect([...AGENT_STATES].sort()).toEqual(['clean wait', 'cleaning', 'deploying', 'inspect wait', 'inspecting', 'rescue wait', 'rescuing', 'wait call-back']);
  });
});

describe('withAgentSession', () => {
  const node = { agent_token_hash: 'ab'.repeat(32), driver_internal_info: { agent_url: 'http://h:1', agent_verify_ca: '/x', agent_version: '9', agent_last_heartbeat: 't', clean_steps: [] } };

  it('keeps the session while the node moves between agent states', () => {
    const patch = { provision_state: 'wait call-back', target_provision_state: 'active' };
    expect(withAgentSession(node, patch)).toBe(patch);
  });

  it('clears the token and the agent URL when the node leaves them, keeping version and last heartbeat', () => {
    expect(withAgentSession(node, { provision_state: 'deploy failed', last_error: 'x' })).toEqual({
      provision_state: 'deploy failed',
      last_error: 'x',
      agent_token_hash: null,
      driver_internal_info: { agent_version: '9', agent_last_heartbeat: 't', clean_steps: [] },
    });
  });

  it("works on the patch's own driver_internal_info when it carries one, and writes nothing more when there is nothing to end", () => {
    expect(withAgentSession(node, { provision_state: 'active', driver_internal_info: { agent_url: 'u', kept: 1 } })).toEqual({ provision_state: 'active', agent_token_hash: null, driver_internal_info: { kept: 1 } });
    const quiet = { agent_token_hash: null, driver_internal_info: { kept: 1 } };
    expect(withAgentSession(quiet, { provision_state: 'available' })).toEqual({ provision_state: 'available' });
  });
});

describe('agent RPC actions', () => {
  // The checks run before the operations are touched: an empty object stands in for them.
  const ops = {} as NodeOperations;
  const uuid = '00000000-0000-4000-8000-000000000001';

  it('refuse anything but a SHA-256 digest as the token, and a bad callback URL', async () => {
    await expect(callRpc(ops, 'POST', 'agent_token', uuid, { token_hash: 'plain-token' })).rejects.toThrow(/^token_hash: expected a SHA-256 digest/);
    await expect(callRpc(ops, 'POST', 'heartbeat', uuid, { token_hash: 'AB'.repeat(32), callback_url: 'http://h:1', agent_version: '9' })).rejects.toThrow(/^token_hash/);
    await expect(callRpc(ops, 'POST', 'heartbeat', uuid, { token_hash: 'ab'.repeat(32), callback_url: 'gopher://h', agent_version: '9' })).rejects.toThrow(/^callback_url/);
    await expect(callRpc(ops, 'POST', 'heartbeat', uuid, { token_hash: 'ab'.repeat(32), callback_url: 'http://h:1' })).rejects.toThrow(/^agent_version/);
  });
});
