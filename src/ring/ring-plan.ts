/**
 * What-if planning for a ring change: given the conductors now (name and weight), the ones to add and
 * remove, and the node keys, each conductor's share and node count before and after, how many nodes
 * change owner (and replica set), the least any ring must move, and the flows from old owner to new.
 * Pure: `ironring ring plan` and the dashboard's what-if panel both call it, so they agree.
 */
import { HashRing } from './hash-ring.js';
import type { RingHost, RingMode } from './hash-ring.js';

export interface RingPlanInput {
  /** Conductors now. */
  before: readonly RingHost[];
  added: readonly RingHost[];
  /** Names of conductors to remove (each in `before`). */
  removed: readonly string[];
  keys: readonly string[];
  mode: RingMode;
  /** Points per unit of weight; the mode's default when absent. */
  partitions?: number;
  /** Conductors per node: owner plus replicas. */
  replicas: number;
}

/** One conductor's line of the plan. */
export interface HostPlan {
  name: string;
  weight: number | null;
  weightAfter: number | null;
  share: number | null;
  shareAfter: number | null;
  nodes: number;
  nodesAfter: number;
}

export interface RingChangePlan {
  added: string[];
  removed: string[];
  /** Nodes whose owner changes. */
  moved: number;
  movedFraction: number;
  /** The least any ring must move (fraction of the key space). */
  idealFraction: number;
  /** Nodes whose set of `replicas` conductors changes. */
  replicaSetsChanged: number;
  /** Old owner → new owner, biggest first. */
  flows: { from: string; to: string; nodes: number }[];
  /** Keys whose owner changes, in the order given, with old and new owner. */
  movedKeys: { key: string; from: string; to: string }[];
}

export interface RingPlan {
  mode: RingMode;
  partitions: number;
  replicas: number;
  hosts: HostPlan[];
  /** Null when nothing is added or removed. */
  change: RingChangePlan | null;
}

/**
 * The plan. The ring's own errors (no hosts, a bad weight or name) are thrown as they are; a removed
 * name not in `before` is simply not there to remove (callers validate their input first).
 */
export function planRing(input: RingPlanInput): RingPlan {
  const { before, added, replicas, keys } = input;
  const removed = new Set(input.removed);
  const after = [...before.filter((h) => !removed.has(h.name)), ...added];
  const changed = added.length > 0 || removed.size > 0;
  const options = input.partitions === undefined ? { mode: input.mode } : { mode: input.mode, partitions: input.partitions };
  const ringBefore = new HashRing(before, options);
  const ringAfter = changed ? new HashRing(after, options) : ringBefore;
  const sharesBefore = ringBefore.shares();
  const sharesAfter = ringAfter.shares();
  const countsBefore = new Map<string, number>();
  const countsAfter = new Map<string, number>();
  const flows = new Map<string, number>();
  const movedKeys: RingChangePlan['movedKeys'] = [];
  let replicaSetsChanged = 0;
  for (const key of keys) {
    const was = ringBefore.lookup(key, { replicas });
    const is = changed ? ringAfter.lookup(key, { replicas }) : was;
    for (const h of was) countsBefore.set(h, (countsBefore.get(h) ?? 0) + 1);
    for (const h of is) countsAfter.set(h, (countsAfter.get(h) ?? 0) + 1);
    if (was[0] !== is[0]) {
      movedKeys.push({ key, from: was[0]!, to: is[0]! });
      const flow = `${was[0]}\u0000${is[0]}`;
      flows.set(flow, (flows.get(flow) ?? 0) + 1);
    }
    if (was.length !== is.length || was.some((h) => !is.includes(h))) replicaSetsChanged++;
  }
  const weightOf = (list: readonly RingHost[], name: string) => list.find((h) => h.name === name)?.weight ?? null;
  return {
    mode: ringBefore.mode,
    partitions: ringBefore.partitions,
    replicas,
    hosts: [...before, ...added].map((h) => ({
      name: h.name,
      weight: weightOf(before, h.name),
      weightAfter: weightOf(after, h.name),
      share: sharesBefore.get(h.name) ?? null,
      shareAfter: sharesAfter.get(h.name) ?? null,
      nodes: countsBefore.get(h.name) ?? 0,
      nodesAfter: countsAfter.get(h.name) ?? 0,
    })),
    change: changed
      ? {
          added: added.map((h) => h.name),
          removed: [...removed],
          moved: movedKeys.length,
          movedFraction: keys.length === 0 ? 0 : movedKeys.length / keys.length,
          idealFraction: idealMove(before, after),
          replicaSetsChanged,
          flows: [...flows]
            .map(([flow, nodes]) => {
              const [from, to] = flow.split('\u0000') as [string, string];
              return { from, to, nodes };
            })
            .sort((a, b) => b.nodes - a.nodes || a.from.localeCompare(b.from) || a.to.localeCompare(b.to)),
          movedKeys,
        }
      : null,
  };
}

/**
 * The least any ring must move: shares are proportional to weight, so the total-variation distance
 * between the weight distributions before and after.
 */
export function idealMove(before: readonly RingHost[], after: readonly RingHost[]): number {
  const totalBefore = before.reduce((s, h) => s + h.weight, 0);
  const totalAfter = after.reduce((s, h) => s + h.weight, 0);
  let kept = 0;
  for (const h of before) {
    const now = after.find((a) => a.name === h.name);
    if (now) kept += Math.min(h.weight / totalBefore, now.weight / totalAfter);
  }
  return 1 - kept;
}
