/**
 * What one reconcile pass does, decided as a pure function of what the pass read (the group's
 * nodes, their ports, the node directories on disk, the ring) and of what this conductor remembers
 * per node (`reconcile-memory.ts`). The executor (`reconcile-executor.ts`) carries the plan out.
 *
 * Per node, by where the ring puts it:
 *
 * - **owner**, node in a working state (`deploying`, `cleaning`…): found unlocked, its work is
 *   resumed (or failed where resuming is not safe); locked by another conductor, it is pending.
 * - **owner**, node that does not boot from the network: whatever it left on disk is removed, unless
 *   a task holds the node (a crash between two steps leaves files behind; a task may be writing
 *   them).
 * - **owner**, node that boots from the network: taken over unless it is locked (pending, except
 *   when this conductor's own operation holds a node it already serves), already current here
 *   (same fingerprint, affinity here, not a verify pass), or backing off after failed take-overs
 *   with unchanged inputs.
 * - **replica**: its kernels and ramdisks are pre-cached when its stamp changed (or on a verify
 *   pass).
 * - **anyone but the owner** with files for the node keeps them while a network-booted node has
 *   not been taken over by its new owner (affinity still here or nobody's), and removes them once
 *   it has.
 * - A directory with no node in the group's list (deleted, or moved to another group) is removed
 *   after `orphanGraceMs`.
 */
import { CONDUCTOR_BOOT_STATES } from '../nodes/state-machine.js';
import { WORKING_STATES } from '../nodes/states.js';
import type { NodeBrief, Port } from './reconcile-inputs.js';
import { fingerprint } from './reconcile-inputs.js';
import type { MemoryUpdates, NodeMemoryView } from './reconcile-memory.js';

/** States whose work runs in the memory of the conductor holding the node's lock. */
export const WORKING: ReadonlySet<string> = new Set(WORKING_STATES);

/** Everything a pass decides with. */
export interface PassInputs {
  /** This conductor's host name, as on the ring and in `reservation`. */
  hostname: string;
  /** This conductor's row id, as in `conductor_affinity`. */
  conductorId: number;
  /** A node's hosts on the group's ring: owner first, then its replicas; empty when the group has no ring. */
  hostsOf: (uuid: string) => readonly string[];
  nodes: readonly NodeBrief[];
  /** Ports by node id. */
  ports: ReadonlyMap<number, readonly Port[]>;
  /** Node directories on this conductor's disk. */
  onDisk: Iterable<string>;
  /** A verify pass trusts no memory: every owned node's files and every replica's cache are re-checked. */
  verify: boolean;
  /** Whether this conductor has a boot environment: without one, nothing is pre-cached. */
  hasBoot: boolean;
  memory: NodeMemoryView;
  /** Now (ms since the epoch): back-offs and the orphan grace are measured against it. */
  now: number;
  /** How long a directory with no node in the database is kept (ms). */
  orphanGraceMs: number;
}

/** What a pass does, and the counts its report starts from. */
export interface PassPlan {
  counts: {
    owned: number;
    replicated: number;
    /** Owned nodes left as they are for now (locked elsewhere): retried shortly. */
    pending: number;
    /** Owned nodes not tried in this pass: their take-over failed and their back-off runs. */
    backingOff: number;
    /** Nodes whose files here are kept until their new owner has taken them over. */
    awaitingNewOwner: number;
  };
  /** Owned nodes whose boot state to rebuild here, with the fingerprint it is rebuilt for. */
  takeOver: Array<{ node: NodeBrief; fp: string }>;
  /** Owned nodes in a working state nobody holds: resume (or fail) their work. */
  resume: NodeBrief[];
  /** Replica nodes whose kernels and ramdisks to fetch. */
  precache: NodeBrief[];
  /** Node directories to remove (by uuid). */
  cleanUp: string[];
  /** Memory changes, applied before the actions. */
  memory: MemoryUpdates;
}

/** The plan of one pass; see the module comment for the rules. */
export function planPass(input: PassInputs): PassPlan {
  const { hostname, conductorId: me, memory, verify } = input;
  const plan: PassPlan = {
    counts: { owned: 0, replicated: 0, pending: 0, backingOff: 0, awaitingNewOwner: 0 },
    takeOver: [],
    resume: [],
    precache: [],
    cleanUp: [],
    memory: { forgetCurrent: [], forgetFailures: [], forgetCached: [], orphansSeen: [], forgetOrphans: [] },
  };
  const { counts } = plan;
  const disk = new Set(input.onDisk);
  const known = new Set<string>();

  for (const node of input.nodes) {
    known.add(node.uuid);
    const [owner, ...replicas] = input.hostsOf(node.uuid);
    const needs = CONDUCTOR_BOOT_STATES.has(node.provision_state);
    if (owner === hostname) {
      counts.owned += 1;
      if (WORKING.has(node.provision_state)) {
        // Work of a working state runs in the memory of the conductor holding the lock: found
        // unlocked, nobody is doing it (its conductor died or stopped, or this one restarted). It
        // is resumed or failed here whatever the state's boot needs — `deleting` or `verifying`
        // need no boot files, yet must not be left to sit forever. Maintenance or not: `resume`
        // fails instead of resuming where that is not safe.
        if (node.reservation === null) plan.resume.push(node);
        else if (node.reservation !== hostname) counts.pending += 1;
        continue;
      }
      if (!needs) {
        if (memory.current(node.uuid) !== undefined) plan.memory.forgetCurrent.push(node.uuid);
        // Left-overs of a node that no longer boots from the network (a crash between steps).
        if (disk.has(node.uuid) && node.reservation === null) plan.cleanUp.push(node.uuid);
        continue;
      }
      if (node.reservation !== null) {
        // Our own operation on it keeps its files current itself; anyone else's: try again soon.
        if (node.reservation !== hostname || node.conductor_affinity !== me) counts.pending += 1;
        continue;
      }
      const fp = fingerprint(node.stamp, input.ports.get(node.id) ?? []);
      if (!verify && node.conductor_affinity === me && memory.current(node.uuid) === fp) continue;
      const failure = memory.failure(node.uuid);
      if (failure && failure.fp === fp && input.now < failure.until) {
        counts.backingOff += 1;
        continue;
      }
      plan.takeOver.push({ node, fp });
      continue;
    }
    // Not (or no longer) the owner: nothing here is current, and failed take-overs are not ours to retry.
    if (memory.current(node.uuid) !== undefined) plan.memory.forgetCurrent.push(node.uuid);
    if (memory.failure(node.uuid) !== undefined) plan.memory.forgetFailures.push(node.uuid);
    const replica = replicas.includes(hostname);
    if (replica) counts.replicated += 1;
    if (replica && needs && input.hasBoot) {
      if (verify || memory.cachedStamp(node.uuid) !== node.stamp) plan.precache.push(node);
    } else if (memory.cachedStamp(node.uuid) !== undefined) {
      plan.memory.forgetCached.push(node.uuid);
    }
    if (disk.has(node.uuid)) {
      // Keep serving until the new owner has taken over; then the files here are stale.
      if (needs && (node.conductor_affinity === me || node.conductor_affinity === null)) counts.awaitingNewOwner += 1;
      else plan.cleanUp.push(node.uuid);
    }
  }

  // Directories of nodes not in this group's list: deleted nodes, or nodes moved to another group.
  for (const uuid of disk) {
    if (known.has(uuid)) {
      if (memory.orphanSince(uuid) !== undefined) plan.memory.forgetOrphans.push(uuid);
      continue;
    }
    let since = memory.orphanSince(uuid);
    if (since === undefined) plan.memory.orphansSeen.push({ uuid, since: (since = input.now) });
    if (input.now - since >= input.orphanGraceMs) plan.cleanUp.push(uuid);
  }
  for (const uuid of memory.orphans()) if (!disk.has(uuid)) plan.memory.forgetOrphans.push(uuid);
  return plan;
}
