import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ServiceRing, desiredHost, planFor } from '../../src/compute/ownership.js';
import type { ComputeNodeRow, NodeSummary, OwnershipInput, PlacedInstance } from '../../src/compute/ownership.js';

/** A plan's input that names the live hosts (the plan builds their ring). */
type HostsInput = Extract<OwnershipInput, { liveHosts: readonly string[] }>;

const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const nodes = (n: number): NodeSummary[] => Array.from({ length: n }, (_, i) => ({ uuid: uuid(i), resourceClass: 'baremetal' }));

/** Applies every live service's plan, the way the services would one after another. */
function converge(input: HostsInput): { rows: Map<string, string>; instances: Map<string, string | null> } {
  const rows = new Map(input.computeNodes.map((r) => [r.uuid, r.host]));
  const instances = new Map(input.instances.map((i) => [i.uuid, i.host]));
  for (const me of input.liveHosts) {
    const current: HostsInput = {
      ...input,
      computeNodes: [...rows].map(([u, host]) => ({ uuid: u, host, resourceClass: 'baremetal' })),
      instances: input.instances.map((i) => ({ ...i, host: instances.get(i.uuid) ?? null })),
    };
    const plan = planFor(me, current);
    for (const c of plan.claim) if (c.from === null ? !rows.has(c.uuid) : rows.get(c.uuid) === c.from) rows.set(c.uuid, me);
    for (const a of plan.adoptInstances) if (instances.get(a.uuid) === a.from) instances.set(a.uuid, me);
    for (const r of plan.remove) if (rows.get(r.uuid) === r.host) rows.delete(r.uuid);
  }
  return { rows, instances };
}

describe('the ownership plan', () => {
  it('gives every node to exactly one live service, the same one every service computes', () => {
    const input: HostsInput = { liveHosts: ['c1', 'c2', 'c3'], nodes: nodes(300), computeNodes: [], instances: [] };
    const plans = input.liveHosts.map((h) => planFor(h, input));
    const claimed = plans.flatMap((p) => p.claim.map((c) => c.uuid));
    expect(claimed).toHaveLength(300);
    expect(new Set(claimed).size).toBe(300);
    // Balanced: each of three services gets a fair share.
    for (const p of plans) expect(p.owned).toBeGreaterThan(60);
    const ring = ServiceRing.of(input.liveHosts);
    for (const [i, p] of plans.entries()) for (const c of p.claim) expect(ring.owner(c.uuid)).toBe(input.liveHosts[i]);
  });

  it('builds the ring over lower-cased host names but writes the host as registered', () => {
    const upper = planFor('Compute-A', { liveHosts: ['Compute-A'], nodes: nodes(3), computeNodes: [], instances: [] });
    expect(upper.claim).toHaveLength(3);
    const a = ServiceRing.of(['Compute-A', 'b']);
    const b = ServiceRing.of(['compute-a', 'B']);
    for (const n of nodes(50)) expect(a.owner(n.uuid)!.toLowerCase()).toBe(b.owner(n.uuid)!.toLowerCase());
  });

  it('moves a node in place when the ring changes: the new owner takes the row from the old host', () => {
    const before = converge({ liveHosts: ['c1'], nodes: nodes(30), computeNodes: [], instances: [] });
    expect([...before.rows.values()].every((h) => h === 'c1')).toBe(true);
    const rows: ComputeNodeRow[] = [...before.rows].map(([u, host]) => ({ uuid: u, host, resourceClass: 'baremetal' }));
    const plan = planFor('c2', { liveHosts: ['c1', 'c2'], nodes: nodes(30), computeNodes: rows, instances: [] });
    expect(plan.claim.length).toBeGreaterThan(5);
    expect(plan.claim.every((c) => c.from === 'c1')).toBe(true);
    // The old owner makes no write about the nodes it lost.
    const old = planFor('c1', { liveHosts: ['c1', 'c2'], nodes: nodes(30), computeNodes: rows, instances: [] });
    expect(old.claim).toEqual([]);
    expect(old.remove).toEqual([]);
  });

  it('keeps a node with an instance on the instance\'s host while that host is live, whatever the ring says', () => {
    const ring = ServiceRing.of(['c1', 'c2', 'c3']);
    const node = nodes(40).find((n) => ring.owner(n.uuid) === 'c2')!;
    const instance: PlacedInstance = { uuid: 'i-1', host: 'c1', node: node.uuid };
    expect(desiredHost(ring, node.uuid, instance)).toBe('c1');
    const input: HostsInput = { liveHosts: ['c1', 'c2', 'c3'], nodes: [node], computeNodes: [{ uuid: node.uuid, host: 'c1', resourceClass: 'baremetal' }], instances: [instance] };
    expect(planFor('c2', input).claim).toEqual([]);
    expect(planFor('c1', input)).toMatchObject({ claim: [], adoptInstances: [], owned: 1 });
  });

  it('moves the node and its instance to the ring owner when the instance\'s host dies', () => {
    const all = nodes(60);
    const computeNodes = all.map((n) => ({ uuid: n.uuid, host: 'dead', resourceClass: 'baremetal' }));
    const instances = all.slice(0, 20).map((n, i) => ({ uuid: `i-${i}`, host: 'dead', node: n.uuid }));
    const { rows, instances: hosts } = converge({ liveHosts: ['c1', 'c2'], nodes: all, computeNodes, instances });
    expect([...rows.values()].filter((h) => h === 'dead')).toEqual([]);
    for (const inst of instances) expect(hosts.get(inst.uuid)).toBe(rows.get(inst.node));
    expect(new Set(rows.values())).toEqual(new Set(['c1', 'c2']));
  });

  it('removes rows of nodes that are gone: by their host, or by the ring owner when that host is dead', () => {
    const computeNodes = [
      { uuid: uuid(100), host: 'c1', resourceClass: null },
      { uuid: uuid(101), host: 'dead', resourceClass: null },
    ];
    const input: HostsInput = { liveHosts: ['c1', 'c2'], nodes: [], computeNodes, instances: [] };
    const removed = ['c1', 'c2'].flatMap((h) => planFor(h, input).remove);
    expect(removed.map((r) => r.uuid).sort()).toEqual([uuid(100), uuid(101)]);
    expect(planFor('c2', input).remove.find((r) => r.uuid === uuid(100))).toBeUndefined();
  });

  it('refreshes a row whose resource class changed without moving it', () => {
    const plan = planFor('c1', { liveHosts: ['c1'], nodes: [{ uuid: uuid(1), resourceClass: 'gpu' }], computeNodes: [{ uuid: uuid(1), host: 'c1', resourceClass: 'baremetal' }], instances: [] });
    expect(plan.claim).toEqual([{ uuid: uuid(1), resourceClass: 'gpu', from: 'c1' }]);
  });

  it('converges from any starting assignment to one row per node on a live host, instances with their nodes', () => {
    const hostArb = fc.constantFrom('c1', 'c2', 'c3', 'dead1', 'dead2');
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.constantFrom('c1', 'c2', 'c3'), { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(fc.option(hostArb, { nil: undefined }), fc.option(hostArb, { nil: undefined })), { minLength: 1, maxLength: 30 }),
        (live, spec) => {
          const all = nodes(spec.length);
          const computeNodes = spec.flatMap(([host], i) => (host ? [{ uuid: all[i]!.uuid, host, resourceClass: 'baremetal' }] : []));
          const instances = spec.flatMap(([, host], i) => (host ? [{ uuid: `i-${i}`, host, node: all[i]!.uuid }] : []));
          const { rows, instances: hosts } = converge({ liveHosts: live, nodes: all, computeNodes, instances });
          expect(rows.size).toBe(all.length);
          for (const host of rows.values()) expect(live).toContain(host);
          for (const inst of instances) {
            if ((live as string[]).includes(inst.host)) expect(hosts.get(inst.uuid)).toBe(inst.host);
            expect(rows.get(inst.node)).toBe(hosts.get(inst.uuid));
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
