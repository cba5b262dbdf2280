import { describe, expect, it } from 'vitest';
import { nodeFailure, nodeRests } from '../../src/cli/wait.js';

const node = (provision_state: string, target_provision_state: string | null, last_error: string | null = null) => ({ uuid: 'n1', provision_state, target_provision_state, last_error });

describe('--wait on a node', () => {
  it('stops at every failed state whatever its target, and at a stable state without one', () => {
    for (const state of ['deploy failed', 'clean failed', 'inspect failed', 'rescue failed', 'unrescue failed', 'adopt failed', 'error']) {
      expect(nodeRests(node(state, 'active')), state).toBe(true);
    }
    expect(nodeRests(node('active', null))).toBe(true);
    expect(nodeRests(node('enroll', null))).toBe(true);
    for (const state of ['deploying', 'wait call-back', 'cleaning', 'clean wait', 'verifying', 'deleting']) expect(nodeRests(node(state, 'active')), state).toBe(false);
  });

  it('calls a rest other than the one asked for a failure, with last_error on one line', () => {
    expect(nodeFailure(node('active', null), 'active')).toBeNull();
    expect(nodeFailure(node('deploy failed', 'active', 'image\nfetch failed: 404'), 'active')).toBe('deploy failed (expected active): image fetch failed: 404');
    // A manage whose BMC check failed leaves the node in enroll with last_error.
    expect(nodeFailure(node('enroll', null, 'BMC 10.0.0.5 did not answer'), 'manageable')).toBe('enroll (expected manageable): BMC 10.0.0.5 did not answer');
    expect(nodeFailure(node('clean failed', 'available'), 'available')).toBe('clean failed (expected available): no last_error given');
    // abort ends wherever the aborted operation fails to: any rest is its outcome.
    expect(nodeFailure(node('clean failed', 'manageable'), '')).toBeNull();
  });
});
