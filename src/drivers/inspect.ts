/** The inspect interface: discovers a node's hardware properties (CPUs, memory, disks, NICs). */
import type { DriverTask } from './task.js';

export interface InspectInterface {
  /**
   * Checks, without touching the hardware, that the node can be inspected. Throws
   * `UnsupportedDriverExtension` for `no-inspect`, `InvalidParameterValue` for a missing field.
   */
  validate(task: DriverTask): Promise<void>;
  /** Inspects the node; resolves once its properties are known. Throws when inspection failed. */
  inspectHardware(task: DriverTask): Promise<void>;
}
