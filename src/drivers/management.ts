/** The management interface: a node's boot device, as its BMC sets and reports it. */
import type { CleanStepSource } from './clean-steps.js';
import type { NodeBootMode } from './capabilities.js';
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
  /**
   * The node's firmware boot mode as the hardware reports it, null when it cannot tell (Ironic's
   * `get_boot_mode`). Absent on an interface that cannot read it: the node's `boot_mode` stays null.
   */
  getBootMode?(task: DriverTask): Promise<NodeBootMode | null>;
  /**
   * Sets the boot mode for the node's next boots (Ironic's `set_boot_mode`). Absent on an interface
   * that cannot: the conductor refuses the change with 400 before anything happens.
   */
  setBootMode?(task: DriverTask, mode: NodeBootMode): Promise<void>;
  /** Whether UEFI secure boot is on, null when unknown (Ironic's `get_secure_boot_state`); absent: cannot read it. */
  getSecureBootState?(task: DriverTask): Promise<boolean | null>;
  /** Turns UEFI secure boot on or off (Ironic's `set_secure_boot_state`); absent: refused like `setBootMode`. */
  setSecureBootState?(task: DriverTask, on: boolean): Promise<void>;
  /**
   * Injects a non-maskable interrupt (Ironic's `inject_nmi`). Absent on an interface that cannot:
   * the conductor then refuses with `UnsupportedDriverExtension` (400), as Ironic's base class does.
   */
  injectNmi?(task: DriverTask): Promise<void>;
  /**
   * The node's indicators (LEDs) by component, then name (Ironic's `get_supported_indicators`).
   * Absent on an interface without indicators: refused like `injectNmi`.
   */
  supportedIndicators?(task: DriverTask): Promise<IndicatorMap>;
  /** One indicator's state. Throws `InvalidParameterValue` for an unknown component or name. */
  getIndicatorState?(task: DriverTask, component: string, name: string): Promise<IndicatorState>;
  /** Sets one indicator. Throws `InvalidParameterValue` for an unknown or read-only one, or a bad state. */
  setIndicatorState?(task: DriverTask, component: string, name: string, state: IndicatorState): Promise<void>;
}

/** Indicator components, as Ironic's `ironic.common.components`. */
export const INDICATOR_COMPONENTS = ['system', 'chassis', 'drive', 'nic', 'enclosure'] as const;
/** Indicator states, as Ironic's `ironic.common.indicator_states`. */
export const INDICATOR_STATES = ['OFF', 'ON', 'BLINKING', 'UNKNOWN'] as const;
export type IndicatorState = (typeof INDICATOR_STATES)[number];

/** True for one of Ironic's indicator states. */
export function isIndicatorState(value: unknown): value is IndicatorState {
  return typeof value === 'string' && (INDICATOR_STATES as readonly string[]).includes(value);
}

/** One indicator as `get_supported_indicators` describes it. */
export interface IndicatorInfo {
  readonly: boolean;
  states: IndicatorState[];
}

/** Indicators by component, then by name. */
export type IndicatorMap = Record<string, Record<string, IndicatorInfo>>;
