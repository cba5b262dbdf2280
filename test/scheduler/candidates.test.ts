import { describe, expect, it } from 'vitest';
import { DISCOVERY_TOPIC, electLeader } from '../../src/scheduler/leader.js';
import { NoValidHost, usableCandidates } from '../../src/scheduler/candidates.js';
import type { Candidate } from '../../src/scheduler/candidates.js';

const candidate = (node: string, over: Partial<Candidate> = {}): Candidate => ({
  node,
  host: 'c1',
  cellUuid: 'u1',
  cellName: 'cell1',
  mapped: true,
  live: true,
  disabled: false,
  claimed: false,
  ...over,
});

describe('choosing a node', () => {
  it('uses only free nodes on live, enabled, mapped hosts, rotating the start between requests', () => {
    const list = [candidate('n1'), candidate('n2', { mapped: false, host: 'c2' }), candidate('n3', { claimed: true }), candidate('n4', { live: false }), candidate('n5'), candidate('n6', { disabled: true })];
    expect(usableCandidates('baremetal', list, 0).map((c) => c.node)).toEqual(['n1', 'n5']);
    expect(usableCandidates('baremetal', list, 1).map((c) => c.node)).toEqual(['n5', 'n1']);
  });

  it('never selects a node on an unmapped host, and says which host and how to fix it', () => {
    const list = [candidate('n2', { mapped: false, host: 'compute-2' })];
    expect(() => usableCandidates('baremetal', list)).toThrow(NoValidHost);
    expect(() => usableCandidates('baremetal', list)).toThrow(/host compute-2 is not mapped to any cell .*ironring manage cell discover-hosts --by-service/);
  });

  it('names the reason when nothing is free, a service is down, or no compute service exposes the node', () => {
    expect(() => usableCandidates('gpu', [])).toThrow('no valid host: no available node of resource class "gpu" (provision state available, not in maintenance, no instance)');
    expect(() => usableCandidates('gpu', [candidate('n1', { claimed: true })])).toThrow(/1 such node\(s\) are held by servers being built/);
    expect(() => usableCandidates('gpu', [candidate('n1', { live: false, host: 'c9' })])).toThrow(/compute service c9 holding n1 is down/);
    expect(() => usableCandidates('gpu', [candidate('n1', { host: null, mapped: false, live: false })])).toThrow(/node n1 not yet exposed by any compute service/);
    expect(() => usableCandidates('gpu', [candidate('n1', { disabled: true })])).toThrow(/compute service c1 is disabled/);
  });
});

describe('electing the discovery leader', () => {
  const s = (id: number, live: boolean, topic: string | null = DISCOVERY_TOPIC) => ({ id, live, topic });

  it('is the live scheduler with discovery on and the lowest id', () => {
    expect(electLeader([s(3, true), s(1, false), s(2, true)])).toBe(2);
    expect(electLeader([s(1, true, null), s(4, true)])).toBe(4);
    expect(electLeader([s(1, false), s(2, false)])).toBeNull();
  });

  it('counts a scheduler as live to itself even when its own heartbeat is late', () => {
    expect(electLeader([s(1, false), s(2, true)], 1)).toBe(1);
    expect(electLeader([s(1, false, null)], 1)).toBeNull();
  });

  it('moves to the next scheduler when the leader stops', () => {
    const services = [s(1, true), s(2, true), s(3, true)];
    expect(electLeader(services)).toBe(1);
    services[0]!.live = false;
    expect(electLeader(services)).toBe(2);
  });
});
