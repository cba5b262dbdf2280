/**
 * What each provision state needs from the boot environment: one decision per state, in the state
 * table, and every list elsewhere derived from it. Every state is spelled out below, so a state
 * added to the machine without a boot decision fails here.
 */
import { describe, expect, it } from 'vitest';
import { bootNeed, CONDUCTOR_BOOT_STATES, STATE_INFO, stateKind } from '../../src/nodes/state-machine.js';
import { BOOT_NEEDS, PROVISION_STATES } from '../../src/nodes/states.js';
import type { BootNeed, ProvisionState } from '../../src/nodes/states.js';

const EXPECTED: Readonly<Record<ProvisionState, BootNeed>> = {
  enroll: 'none',
  verifying: 'none',
  manageable: 'none',
  inspecting: 'deploy',
  'inspect wait': 'deploy',
  'inspect failed': 'none',
  cleaning: 'deploy',
  'clean wait': 'deploy',
  'clean failed': 'none',
  available: 'none',
  deploying: 'deploy',
  // The deploy ramdisk calls back: booting the instance here would strand the deploy.
  'wait call-back': 'deploy',
  'deploy failed': 'none',
  active: 'instance',
  deleting: 'none',
  error: 'none',
  rescuing: 'rescue',
  'rescue wait': 'rescue',
  rescue: 'rescue',
  'rescue failed': 'none',
  unrescuing: 'instance',
  'unrescue failed': 'none',
  adopting: 'instance',
  'adopt failed': 'none',
};

describe('boot need per provision state', () => {
  it('has a decision for every provision state, and for no other name', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual([...PROVISION_STATES].sort());
    expect(Object.keys(STATE_INFO).sort()).toEqual([...PROVISION_STATES].sort());
  });

  it.each(PROVISION_STATES.map((state) => [state, EXPECTED[state]] as const))('%s boots %s', (state, need) => {
    expect(bootNeed(state)).toBe(need);
    expect(BOOT_NEEDS).toContain(need);
  });

  it('gives nothing to a state name the table does not know', () => {
    expect(bootNeed('deploy hold')).toBe('none');
    expect(bootNeed('constructor')).toBe('none');
  });

  it('derives the states that boot from their conductor from the column', () => {
    expect([...CONDUCTOR_BOOT_STATES].sort()).toEqual(PROVISION_STATES.filter((s) => EXPECTED[s] !== 'none').sort());
  });

  it('never asks a failed state for boot files: the failure leaves the node as it found it', () => {
    for (const state of PROVISION_STATES) if (stateKind(state) === 'failed') expect(bootNeed(state)).toBe('none');
  });

  it('keeps every waiting state on its conductor: the ramdisk that calls back boots from there', () => {
    for (const state of PROVISION_STATES) if (stateKind(state) === 'waiting') expect(bootNeed(state)).not.toBe('none');
  });
});
