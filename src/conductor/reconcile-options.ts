/**
 * What a reconciler is built from: its conductor's identity, the live rings, the drivers and boot
 * environment (built once, before the reconciler), and its timings.
 */
import type { Logger } from '../common/logger.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import type { TaskTracker } from '../cluster/task.js';
import type { Store } from '../db/connect.js';
import type { BootEnvironment } from '../boot/index.js';
import type { DriverRegistry } from '../drivers/index.js';
import type { ConductorMetrics } from './metrics.js';

export interface ReconcilerOptions {
  store: Store;
  hostname: string;
  group: string;
  /** The conductor's row id (set once registered). */
  conductorId: () => number;
  view: ConductorRings;
  drivers: DriverRegistry;
  /** This conductor's boot environment; without one, only affinity and in-flight work are handled. */
  boot: BootEnvironment | undefined;
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
