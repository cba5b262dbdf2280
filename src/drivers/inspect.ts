/** The inspect interface: discovers a node's hardware properties (CPUs, memory, disks, NICs). */
import type { DriverTask } from './task.js';

/**
 * How `inspectHardware` ended: `done` — the properties are known (the fake interface); `wait` — the
 * node boots an agent that will post its inventory (`POST /v1/continue_inspection`), and the node
 * waits in `inspect wait` until it does.
 */
export type InspectOutcome = 'done' | 'wait';

export interface InspectInterface {
  /**
   * Checks, without touching the hardware, that the node can be inspected. Throws
   * `UnsupportedDriverExtension` for `no-inspect`, `InvalidParameterValue` for a missing field.
   */
  validate(task: DriverTask): Promise<void>;
  /** Inspects the node, or starts to (`wait`). Throws when inspection failed. */
  inspectHardware(task: DriverTask): Promise<InspectOutcome>;
  /**
   * After the inventory came in (or the inspection failed or was aborted: `failed`): undoes what
   * `inspectHardware` set up — the ramdisk's boot files, the node powered off — but with fast track,
   * after a good inventory, the node stays up running its agent for the next verb (`keepAgent`).
   * Interfaces that set nothing up have none.
   */
  tearDownInspection?(task: DriverTask, failed: boolean): Promise<{ keepAgent: boolean }>;
}
