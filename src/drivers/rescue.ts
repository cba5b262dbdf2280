/** The rescue interface: boots an active node into a rescue ramdisk and back to its instance. */
import type { DriverTask } from './task.js';

export interface RescueInterface {
  /**
   * Checks, without touching the hardware, that the node can be rescued. Throws
   * `UnsupportedDriverExtension` for `no-rescue`, `InvalidParameterValue` for a missing field.
   */
  validate(task: DriverTask): Promise<void>;
  /** Boots the node into the rescue ramdisk; resolves once it is there. */
  rescue(task: DriverTask): Promise<void>;
  /** Boots the node back into its instance; resolves once it is there. */
  unrescue(task: DriverTask): Promise<void>;
}
