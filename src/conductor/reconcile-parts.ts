/**
 * The pieces a reconcile pass is built from (see `reconciler.ts`): which states need boot files,
 * the options and report of a pass, node fingerprints, the images a replica keeps, and a worker
 * pool that gives the event loop back.
 */
import { sql } from 'kysely';
import type { Logger } from '../common/logger.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import type { TaskTracker } from '../cluster/task.js';
import type { Store } from '../db/connect.js';
import type { BootEnvironment } from '../boot/index.js';
import type { DriverRegistry } from '../drivers/index.js';
import type { ImageRef } from '../drivers/fields.js';
import type { NodeRow } from '../nodes/node-store.js';
import { CONDUCTOR_BOOT_STATES } from '../nodes/state-machine.js';
import { WORKING_STATES } from '../nodes/states.js';
import type { ConductorMetrics } from './metrics.js';

/**
 * Provision states in which a node boots from its conductor's files, as the state table says
 * (`CONDUCTOR_BOOT_STATES`): the instance for `active`, the deploy ramdisk while it is cleaned,
 * inspected or deployed, the rescue agent while rescued.
 */
export const BOOT_STATE_STATES: ReadonlySet<string> = CONDUCTOR_BOOT_STATES;

export const WORKING: ReadonlySet<string> = new Set(WORKING_STATES);

/** Nodes locked (and released) per UPDATE: far below both engines' bound-parameter limits. */
export const BATCH = 500;

export interface ReconcilerOptions {
  store: Store;
  hostname: string;
  group: string;
  /** The conductor's row id (set once registered). */
  conductorId: () => number;
  view: ConductorRings;
  drivers: () => DriverRegistry;
  /** This conductor's boot environment; without one, only affinity and in-flight work are handled. */
  boot: () => BootEnvironment | undefined;
  tracker: TaskTracker;
  /**
   * Takes over a working state a departed conductor left behind: resumes it, or fails it where
   * resuming is not safe (`stranded-work.ts`); null when the node could not be locked.
   */
  resume: (uuid: string) => Promise<'resumed' | 'failed' | null>;
  logger: Logger;
  metrics: ConductorMetrics;
  replicas: number;
  workers: number;
  /** Seconds between safety-net passes; 0 disables them. */
  intervalSeconds: number;
  /** How often node changes are polled for (ms). Default 1000. */
  changePollMs?: number;
  /** Delay before retrying nodes that could not be taken over (ms). Default 500. */
  retryMs?: number;
  /** How long files of a node missing from the database are kept (ms). Default 60 s. */
  orphanGraceMs?: number;
}

/** What one pass did. */
export interface PassReport {
  trigger: string;
  verify: boolean;
  ringVersion: number;
  nodes: number;
  owned: number;
  replicated: number;
  takenOver: number;
  precached: number;
  cleanedUp: number;
  resumed: number;
  /** Working states left behind that could not be resumed safely and were failed (with `last_error`). */
  strandedFailed: number;
  /** Owned nodes left not current (locked elsewhere, failed): retried shortly. */
  pending: number;
  /** Of those, nodes whose take-over failed and that wait for their next try (exponential backoff up to 60 s). */
  backingOff: number;
  /** Local state kept for now because the new owner has not taken over yet. */
  awaitingNewOwner: number;
  failed: number;
  durationMs: number;
  /** Where the pass spent its time (ms): reading nodes, ports and the disk; take-overs; pre-caching; clean-up. */
  phasesMs: { read: number; takeOver: number; precache: number; cleanUp: number };
}

export type Port = { address: string; pxeEnabled: boolean };

/** Longest stretch (ms) a pass keeps the event loop before letting timers and sockets run. */
export const SLICE_MS = 10;

/**
 * Runs `fn` over `items` with at most `workers` at a time, giving the event loop back every
 * `SLICE_MS`: boot files are written with synchronous calls, and chains of resolved promises never
 * let timers run, so without this a big pass would starve the heartbeat (and look dead to the
 * others) and the TFTP server.
 */
export async function pool<T>(items: readonly T[], workers: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let sliceStart = performance.now();
  const run = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
      if (performance.now() - sliceStart > SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(workers, items.length) }, run));
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * A node's version: its `updated_at` as the database wrote it (every write of a node row sets it, by
 * the database clock, to the microsecond on PostgreSQL) and its ports. Equal fingerprints mean the
 * boot files made for one are still right for the other.
 */
export function fingerprint(stamp: string, ports: readonly Port[]): string {
  let out = stamp;
  for (const p of ports) out += `|${p.address}${p.pxeEnabled ? '+' : '-'}`;
  return out;
}

/** The columns a pass decides with; full rows are read only for nodes that need work. */
export type NodeBrief = Pick<NodeRow, 'id' | 'uuid' | 'provision_state' | 'reservation' | 'conductor_affinity' | 'maintenance'> & { stamp: string };
export const stampColumn = sql<string>`cast(updated_at as text)`.as('stamp');

export function imageRef(bag: Readonly<Record<string, unknown>>, key: string): ImageRef | undefined {
  const url = bag[key];
  const checksum = bag[`${key}_checksum`];
  return typeof url === 'string' && typeof checksum === 'string' ? { url, checksum } : undefined;
}

/** The kernels and ramdisks a replica keeps ready: deploy pair and instance pair, never the user image. */
export function bootImages(node: Pick<NodeRow, 'driver_info' | 'instance_info'>): Record<string, ImageRef> {
  const images: Record<string, ImageRef> = {};
  const pairs: Array<[string, Readonly<Record<string, unknown>>, string]> = [
    ['deployKernel', node.driver_info, 'deploy_kernel'],
    ['deployRamdisk', node.driver_info, 'deploy_ramdisk'],
    ['kernel', node.instance_info, 'kernel'],
    ['ramdisk', node.instance_info, 'ramdisk'],
  ];
  for (const [role, bag, key] of pairs) {
    const ref = imageRef(bag, key);
    if (ref) images[role] = ref;
  }
  return images;
}
