/**
 * The reconcile planner's rules, one test each: a pure function of what a pass read and what this
 * conductor remembers, so every rule is checked without a database, a ring or a boot environment.
 */
import { describe, expect, it } from 'vitest';
import type { NodeBrief, Port } from '../../src/conductor/reconcile-inputs.js';
import { fingerprint } from '../../src/conductor/reconcile-inputs.js';
import { NodeMemory } from '../../src/conductor/reconcile-memory.js';
import { WORKING, planPass } from '../../src/conductor/reconcile-plan.js';
import { CONDUCTOR_BOOT_STATES } from '../../src/nodes/state-machine.js';
import type { PassInputs, PassPlan } from '../../src/conductor/reconcile-plan.js';

const ME = 'c1';
const ME_ID = 1;
const OTHER_ID = 2;
const NOW = 1_000_000;
const STAMP = '2026-01-01 00:00:00.000001';

let nextId = 1;
/** A node of the group; owner and replica come from `hosts` (owner first). */
function node(values: Partial<NodeBrief> = {}): NodeBrief {
  const id = nextId++;
  return {
    id,
    uuid: `node-${id}`,
    provision_state: 'active',
    reservation: null,
    conductor_affinity: null,
    maintenance: false,
    stamp: STAMP,
    ...values,
  };
}

interface Case {
  nodes: NodeBrief[];
  /** Hosts per node uuid (owner first); nodes not listed are owned by this conductor. */
  hosts?: Record<string, string[]>;
  ports?: Map<number, Port[]>;
  onDisk?: string[];
  verify?: boolean;
  hasBoot?: boolean;
  memory?: NodeMemory;
  now?: number;
  orphanGraceMs?: number;
  noRing?: boolean;
}

function plan(c: Case): PassPlan {
  const input: PassInputs = {
    hostname: ME,
    conductorId: ME_ID,
    hostsOf: (uuid) => (c.noRing ? [] : (c.hosts?.[uuid] ?? [ME, 'c2'])),
    nodes: c.nodes,
    ports: c.ports ?? new Map(),
    onDisk: c.onDisk ?? [],
    verify: c.verify ?? false,
    hasBoot: c.hasBoot ?? true,
    memory: c.memory ?? new NodeMemory(),
    now: c.now ?? NOW,
    orphanGraceMs: c.orphanGraceMs ?? 60_000,
  };
  return planPass(input);
}

const uuids = (nodes: ReadonlyArray<{ uuid: string }>) => nodes.map((n) => n.uuid);
const takenOver = (p: PassPlan) => p.takeOver.map((t) => t.node.uuid);
/** A plan that does nothing at all to the node. */
const untouched = (p: PassPlan, uuid: string) =>
  !takenOver(p).includes(uuid) && !uuids(p.resume).includes(uuid) && !uuids(p.precache).includes(uuid) && !p.cleanUp.includes(uuid);

describe('reconcile plan: owned nodes in a working state', () => {
  it('resumes the work of an unlocked working node, whatever its boot needs and maintenance', () => {
    const deploying = node({ provision_state: 'deploying' });
    const deleting = node({ provision_state: 'deleting', maintenance: true });
    const p = plan({ nodes: [deploying, deleting] });
    expect(uuids(p.resume)).toEqual([deploying.uuid, deleting.uuid]);
    expect(p.takeOver).toEqual([]);
    expect(p.counts).toMatchObject({ owned: 2, pending: 0 });
  });

  it('leaves work another conductor holds alone and counts it pending', () => {
    const held = node({ provision_state: 'cleaning', reservation: 'c2' });
    const p = plan({ nodes: [held] });
    expect(p.resume).toEqual([]);
    expect(p.counts.pending).toBe(1);
  });

  it('neither resumes nor counts pending the work this conductor holds itself', () => {
    const mine = node({ provision_state: 'deploying', reservation: ME });
    const p = plan({ nodes: [mine] });
    expect(untouched(p, mine.uuid)).toBe(true);
    expect(p.counts.pending).toBe(0);
  });

  it('never takes over a working node, even one that boots from the network', () => {
    const working = [...WORKING].filter((s) => CONDUCTOR_BOOT_STATES.has(s));
    expect(working.length).toBeGreaterThan(0);
    const nodes = working.map((s) => node({ provision_state: s }));
    const p = plan({ nodes });
    expect(p.takeOver).toEqual([]);
    expect(uuids(p.resume)).toEqual(uuids(nodes));
  });
});

describe('reconcile plan: owned nodes that do not boot from the network', () => {
  it('removes the left-over files of an unlocked node and forgets it was current', () => {
    const memory = new NodeMemory();
    const idle = node({ provision_state: 'available' });
    memory.markCurrent(idle.uuid, 'old');
    const p = plan({ nodes: [idle], onDisk: [idle.uuid], memory });
    expect(p.cleanUp).toEqual([idle.uuid]);
    expect(p.memory.forgetCurrent).toEqual([idle.uuid]);
    expect(p.takeOver).toEqual([]);
  });

  it('keeps the files of a node a task holds (it may be writing them)', () => {
    const locked = node({ provision_state: 'manageable', reservation: ME });
    const p = plan({ nodes: [locked], onDisk: [locked.uuid] });
    expect(p.cleanUp).toEqual([]);
  });

  it('does nothing for a node without files', () => {
    const idle = node({ provision_state: 'available' });
    const p = plan({ nodes: [idle] });
    expect(untouched(p, idle.uuid)).toBe(true);
  });
});

describe('reconcile plan: owned nodes that boot from the network', () => {
  it('takes over every state that boots from the network and no working state, rescue wait included', () => {
    const states = ['active', 'wait call-back', 'clean wait', 'inspect wait', 'rescue wait', 'rescue'];
    const nodes = states.map((s) => node({ provision_state: s }));
    const p = plan({ nodes });
    expect(takenOver(p)).toEqual(uuids(nodes));
  });

  it('takes over a node with the fingerprint of its stamp and ports', () => {
    const n = node();
    const ports = new Map([[n.id, [{ address: '52:54:00:00:00:01', pxeEnabled: true }]]]);
    const p = plan({ nodes: [n], ports });
    expect(p.takeOver).toEqual([{ node: n, fp: fingerprint(STAMP, ports.get(n.id)!) }]);
  });

  it('skips a node this conductor made current, with affinity here and an unchanged fingerprint', () => {
    const memory = new NodeMemory();
    const n = node({ conductor_affinity: ME_ID });
    memory.markCurrent(n.uuid, fingerprint(STAMP, []));
    const p = plan({ nodes: [n], memory });
    expect(untouched(p, n.uuid)).toBe(true);
    expect(p.counts).toMatchObject({ owned: 1, pending: 0, backingOff: 0 });
  });

  it('re-checks a node believed current on a verify pass', () => {
    const memory = new NodeMemory();
    const n = node({ conductor_affinity: ME_ID });
    memory.markCurrent(n.uuid, fingerprint(STAMP, []));
    expect(takenOver(plan({ nodes: [n], memory, verify: true }))).toEqual([n.uuid]);
  });

  it('takes over again a node whose affinity points elsewhere, even with the same fingerprint', () => {
    const memory = new NodeMemory();
    const n = node({ conductor_affinity: OTHER_ID });
    memory.markCurrent(n.uuid, fingerprint(STAMP, []));
    expect(takenOver(plan({ nodes: [n], memory }))).toEqual([n.uuid]);
  });

  it('takes over again when only a port changed its pxe_enabled flag', () => {
    const memory = new NodeMemory();
    const n = node({ conductor_affinity: ME_ID });
    memory.markCurrent(n.uuid, fingerprint(STAMP, [{ address: '52:54:00:00:00:01', pxeEnabled: true }]));
    const ports = new Map([[n.id, [{ address: '52:54:00:00:00:01', pxeEnabled: false }]]]);
    expect(takenOver(plan({ nodes: [n], memory, ports }))).toEqual([n.uuid]);
  });

  it('counts a node locked by another conductor pending and leaves it alone', () => {
    const n = node({ reservation: 'c2' });
    const p = plan({ nodes: [n] });
    expect(untouched(p, n.uuid)).toBe(true);
    expect(p.counts.pending).toBe(1);
  });

  it('trusts its own operation on a node it serves, and counts pending one it does not serve yet', () => {
    const serving = node({ reservation: ME, conductor_affinity: ME_ID });
    const notYet = node({ reservation: ME, conductor_affinity: OTHER_ID });
    const p = plan({ nodes: [serving, notYet] });
    expect(p.takeOver).toEqual([]);
    expect(p.counts.pending).toBe(1);
  });

  it('backs off a failed node while its fingerprint is unchanged and its back-off runs', () => {
    const memory = new NodeMemory();
    const n = node();
    memory.recordFailure(n.uuid, fingerprint(STAMP, []), NOW);
    const during = plan({ nodes: [n], memory, now: NOW + 999 });
    expect(during.takeOver).toEqual([]);
    expect(during.counts.backingOff).toBe(1);
    expect(takenOver(plan({ nodes: [n], memory, now: NOW + 1000 }))).toEqual([n.uuid]);
  });

  it('tries a failed node at once when its inputs changed', () => {
    const memory = new NodeMemory();
    const n = node();
    memory.recordFailure(n.uuid, fingerprint('an older stamp', []), NOW);
    const p = plan({ nodes: [n], memory, now: NOW + 1 });
    expect(takenOver(p)).toEqual([n.uuid]);
    expect(p.counts.backingOff).toBe(0);
  });

  it('takes over nodes in maintenance too', () => {
    const n = node({ maintenance: true });
    expect(takenOver(plan({ nodes: [n] }))).toEqual([n.uuid]);
  });
});

describe('reconcile plan: nodes owned elsewhere', () => {
  it('forgets that a node it no longer owns was current or failing here', () => {
    const memory = new NodeMemory();
    const n = node();
    memory.markCurrent(n.uuid, 'fp');
    memory.recordFailure(n.uuid, 'fp', NOW);
    memory.markCurrent(n.uuid, 'fp');
    const p = plan({ nodes: [n], memory, hosts: { [n.uuid]: ['c2', 'c3'] } });
    expect(p.memory.forgetCurrent).toEqual([n.uuid]);
    expect(p.memory.forgetFailures).toEqual([n.uuid]);
    expect(p.takeOver).toEqual([]);
    expect(p.counts.owned).toBe(0);
  });

  it('pre-caches a network-booted replica node whose stamp changed since its last pre-cache', () => {
    const memory = new NodeMemory();
    const changed = node();
    const same = node();
    memory.markCached(changed.uuid, 'an older stamp');
    memory.markCached(same.uuid, STAMP);
    const hosts = { [changed.uuid]: ['c2', ME], [same.uuid]: ['c2', ME] };
    const p = plan({ nodes: [changed, same], memory, hosts });
    expect(uuids(p.precache)).toEqual([changed.uuid]);
    expect(p.counts.replicated).toBe(2);
  });

  it('pre-caches every replica node again on a verify pass', () => {
    const memory = new NodeMemory();
    const n = node();
    memory.markCached(n.uuid, STAMP);
    expect(uuids(plan({ nodes: [n], memory, verify: true, hosts: { [n.uuid]: ['c2', ME] } }).precache)).toEqual([n.uuid]);
  });

  it('pre-caches nothing without a boot environment, nor for a replica node that does not boot from the network, and forgets their caches', () => {
    const memory = new NodeMemory();
    const booting = node();
    const idle = node({ provision_state: 'available' });
    memory.markCached(booting.uuid, 'old');
    memory.markCached(idle.uuid, 'old');
    const hosts = { [booting.uuid]: ['c2', ME], [idle.uuid]: ['c2', ME] };
    const noBoot = plan({ nodes: [booting], memory, hosts, hasBoot: false });
    expect(noBoot.precache).toEqual([]);
    expect(noBoot.memory.forgetCached).toEqual([booting.uuid]);
    const notBooting = plan({ nodes: [idle], memory, hosts });
    expect(notBooting.precache).toEqual([]);
    expect(notBooting.memory.forgetCached).toEqual([idle.uuid]);
  });

  it('does not pre-cache, and forgets the cache of, a node it is no replica of', () => {
    const memory = new NodeMemory();
    const n = node();
    memory.markCached(n.uuid, STAMP);
    const p = plan({ nodes: [n], memory, hosts: { [n.uuid]: ['c2', 'c3'] } });
    expect(p.precache).toEqual([]);
    expect(p.memory.forgetCached).toEqual([n.uuid]);
    expect(p.counts.replicated).toBe(0);
  });

  it('keeps serving a network-booted node until its new owner has taken over, then removes its files', () => {
    const stillMine = node({ conductor_affinity: ME_ID });
    const nobodys = node({ conductor_affinity: null });
    const takenElsewhere = node({ conductor_affinity: OTHER_ID });
    const nodes = [stillMine, nobodys, takenElsewhere];
    const hosts = Object.fromEntries(nodes.map((n) => [n.uuid, ['c2', 'c3']]));
    const p = plan({ nodes, hosts, onDisk: uuids(nodes) });
    expect(p.counts.awaitingNewOwner).toBe(2);
    expect(p.cleanUp).toEqual([takenElsewhere.uuid]);
  });

  it('removes the files of a node owned elsewhere that no longer boots from the network', () => {
    const n = node({ provision_state: 'available', conductor_affinity: ME_ID });
    const p = plan({ nodes: [n], hosts: { [n.uuid]: ['c2', 'c3'] }, onDisk: [n.uuid] });
    expect(p.cleanUp).toEqual([n.uuid]);
    expect(p.counts.awaitingNewOwner).toBe(0);
  });

  it('owns nothing when the group has no ring, and keeps serving what it served', () => {
    const n = node({ conductor_affinity: ME_ID });
    const p = plan({ nodes: [n], noRing: true, onDisk: [n.uuid] });
    expect(p.counts).toMatchObject({ owned: 0, replicated: 0, awaitingNewOwner: 1 });
    expect(untouched(p, n.uuid)).toBe(true);
  });
});

describe('reconcile plan: directories of nodes not in the group', () => {
  it('marks a directory without a node when first seen and keeps it during the grace', () => {
    const p = plan({ nodes: [], onDisk: ['gone'], now: NOW });
    expect(p.memory.orphansSeen).toEqual([{ uuid: 'gone', since: NOW }]);
    expect(p.cleanUp).toEqual([]);
  });

  it('removes it once the grace is over, to the millisecond', () => {
    const memory = new NodeMemory();
    memory.apply({ forgetCurrent: [], forgetFailures: [], forgetCached: [], orphansSeen: [{ uuid: 'gone', since: NOW }], forgetOrphans: [] });
    expect(plan({ nodes: [], onDisk: ['gone'], memory, now: NOW + 59_999 }).cleanUp).toEqual([]);
    const p = plan({ nodes: [], onDisk: ['gone'], memory, now: NOW + 60_000 });
    expect(p.cleanUp).toEqual(['gone']);
    expect(p.memory.orphansSeen).toEqual([]);
  });

  it('removes it in the same pass when the grace is 0', () => {
    expect(plan({ nodes: [], onDisk: ['gone'], orphanGraceMs: 0 }).cleanUp).toEqual(['gone']);
  });

  it('drops the mark of a directory whose node is back, and of a directory that is gone', () => {
    const memory = new NodeMemory();
    const back = node({ provision_state: 'available' });
    memory.apply({
      forgetCurrent: [],
      forgetFailures: [],
      forgetCached: [],
      orphansSeen: [
        { uuid: back.uuid, since: NOW },
        { uuid: 'removed', since: NOW },
      ],
      forgetOrphans: [],
    });
    const p = plan({ nodes: [back], onDisk: [back.uuid], memory, hosts: { [back.uuid]: ['c2', 'c3'] }, now: NOW + 120_000 });
    expect([...p.memory.forgetOrphans].sort()).toEqual([back.uuid, 'removed'].sort());
    // The node's own rules decide about its files: owned elsewhere and not booting, they go.
    expect(p.cleanUp).toEqual([back.uuid]);
  });
});

describe('node memory', () => {
  it('backs off 1 s, 2 s, 4 s… up to 60 s per failure in a row with the same fingerprint, and starts again on a new one', () => {
    const memory = new NodeMemory();
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      memory.recordFailure('n', 'fp', NOW);
      waits.push(memory.failure('n')!.until - NOW);
    }
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
    expect(memory.recordFailure('n', 'new fp', NOW)).toBe(1);
    expect(memory.nextRetryAt()).toBe(NOW + 1000);
  });

  it('forgets a node was current when its take-over fails or its files are removed', () => {
    const memory = new NodeMemory();
    memory.markCurrent('a', 'fp');
    memory.markCurrent('b', 'fp');
    memory.recordFailure('a', 'fp', NOW);
    memory.cleanedUp('b');
    expect(memory.current('a')).toBeUndefined();
    expect(memory.current('b')).toBeUndefined();
  });
});
