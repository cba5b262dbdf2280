/**
 * The boot interface: what the node finds when it network-boots — the deploy ramdisk (for cleaning,
 * inspection, image deploys) or the instance's own kernel and ramdisk.
 */
import type { DriverTask } from './task.js';

export interface BootInterface {
  /**
   * Makes the node boot the deploy ramdisk next time it network-boots. `params` become extra kernel
   * parameters (`key=value`), e.g. the callback URL of an agent. Idempotent.
   */
  prepareRamdisk(task: DriverTask, params?: Readonly<Record<string, string>>): Promise<void>;
  /** Removes what `prepareRamdisk` set up. Idempotent: nothing to remove is not an error. */
  cleanUpRamdisk(task: DriverTask): Promise<void>;
  /**
   * Makes the node boot its instance: for network-booted instances, the instance kernel and ramdisk
   * from `instance_info`. Idempotent; this is also what a conductor taking a node over runs.
   */
  prepareInstance(task: DriverTask): Promise<void>;
  /** Removes what `prepareInstance` (or `prepareLocalBoot`) set up. Idempotent. */
  cleanUpInstance(task: DriverTask): Promise<void>;
  /**
   * Makes the node's network boot hand over to its local disk, where an instance was written
   * (`direct` deploy): for firmware that tries the network first whatever the BMC was told. Needs
   * no image. Idempotent; this is what a conductor taking such a node over runs.
   */
  prepareLocalBoot(task: DriverTask): Promise<void>;
  /**
   * Checks, without side effects, that the node has what this interface needs (deploy images,
   * pxe-enabled ports…). Throws `InvalidParameterValue` naming the field.
   */
  validate(task: DriverTask): Promise<void>;
}
