/** The management interface: a node's boot device, as its BMC sets and reports it. */
import type { CleanStepSource } from './clean-steps.js';
import type { DriverTask } from './task.js';

/** Boot devices with Ironic's names (`boot_device` of `PUT /v1/nodes/{id}/management/boot_device`). */
export const BOOT_DEVICES = ['pxe', 'disk', 'cdrom', 'bios', 'safe'] as const;
export type BootDevice = (typeof BOOT_DEVICES)[number];

/** The boot device as read back; `boot_device` is null when the BMC has no override set. */
export interface BootDeviceState {
  boot_device: BootDevice | null;
  /** True when the setting applies to all future boots, false for the next boot only; null if unknown. */
  persistent: boolean | null;
}

export interface ManagementInterface extends CleanStepSource {
  /** The boot devices this interface can set for the node. */
  getSupportedBootDevices(task: DriverTask): Promise<readonly BootDevice[]>;
  /**
   * Sets the device the node boots from next (or always, when `persistent`). Throws
   * `InvalidParameterValue` for a device not in `getSupportedBootDevices`, `BootDeviceActionFailed`
   * when the BMC refuses.
   */
  setBootDevice(task: DriverTask, device: BootDevice, persistent: boolean): Promise<void>;
  /** Reads the boot device back from the BMC. Throws `BootDeviceActionFailed`. */
  getBootDevice(task: DriverTask): Promise<BootDeviceState>;
  /** Checks, without touching the hardware, that the node has what this interface needs. */
  validate(task: DriverTask): Promise<void>;
}
