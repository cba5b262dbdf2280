/** Ironic's rules for protected nodes (`_check_update_protected`) and the refusal of the verbs. */
import { describe, expect, it } from 'vitest';
import { Conflict, InvalidParameter } from '../../src/common/errors.js';
import { NodeProtected, protectionChanges, refuseIfProtected } from '../../src/nodes/protection.js';

const node = (over: Partial<{ provision_state: string; protected: boolean; protected_reason: string | null; maintenance: boolean }> = {}) => ({
  uuid: 'n1', provision_state: 'active', protected: false, protected_reason: null, maintenance: false, ...over,
});

describe('protected nodes', () => {
  it('may be protected in active or rescue only (409 otherwise)', () => {
    expect(protectionChanges(node(), { protected: true })).toEqual({});
    expect(protectionChanges(node({ provision_state: 'rescue' }), { protected: true, protected_reason: 'r' })).toEqual({});
    expect(() => protectionChanges(node({ provision_state: 'available' }), { protected: true })).toThrow(Conflict);
    // Removing protection is allowed in any state.
    expect(protectionChanges(node({ provision_state: 'available', protected: true }), { protected: false })).toEqual({ protected_reason: null });
  });

  it('takes a reason only with protection (400), and clears it when protection ends', () => {
    expect(() => protectionChanges(node(), { protected_reason: 'r' })).toThrow(InvalidParameter);
    expect(protectionChanges(node(), { protected_reason: null })).toEqual({});
    expect(protectionChanges(node({ protected: true }), { protected_reason: 'r' })).toEqual({});
    expect(protectionChanges(node({ protected: true, protected_reason: 'r' }), { protected: false, protected_reason: 'x' })).toEqual({ protected_reason: null });
  });

  it('clears the maintenance reason when maintenance ends', () => {
    expect(protectionChanges(node({ maintenance: true }), { maintenance: false })).toEqual({ maintenance_reason: null });
    expect(protectionChanges(node(), { maintenance: true })).toEqual({});
  });

  it('refuses undeploy, rebuild and delete of a protected node with 403 and Ironic\'s message', () => {
    expect(() => refuseIfProtected(node())).not.toThrow();
    const err = (() => {
      try {
        refuseIfProtected(node({ protected: true }));
      } catch (e) {
        return e as NodeProtected;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(NodeProtected);
    expect(err?.httpStatus).toBe(403);
    expect(err?.message).toBe('Node n1 is protected and cannot be undeployed, rebuilt or deleted');
  });
});
