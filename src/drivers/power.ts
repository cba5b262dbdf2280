/** The power interface: reads and changes a node's power through its BMC (or a simulation). */
import type { CleanStepSource } from './clean-steps.js';
import type { DriverTask } from './task.js';

/** Power states a node can be put in and reported in, with Ironic's spelling. */
export const POWER_STATES = ['power on', 'power off'] as const;
export type PowerState = (typeof POWER_STATES)[number];

/** Default bound (seconds) on waiting for the BMC to report a requested power state. */
export const DEFAULT_POWER_TIMEOUT_S = 60;

export interface PowerInterface extends CleanStepSource {
  /**
   * Asks the BMC for the node's current power state. Throws `PowerActionFailed` when the BMC cannot
   * be reached or answers something unrecognisable.
   */
  getPowerState(task: DriverTask): Promise<PowerState>;
  /**
   * Turns the node on or off (hard) and resolves only once the BMC reports `state`. Throws
   * `PowerActionFailed` if the BMC refuses, or has not reported `state` within `timeout` seconds
   * (default `DEFAULT_POWER_TIMEOUT_S`).
   */
  setPowerState(task: DriverTask, state: PowerState, timeout?: number): Promise<void>;
  /**
   * Restarts the node: off, then on, each confirmed by the BMC (a plain `power cycle` fails on a node
   * that is off). Resolves with the node on. Throws `PowerActionFailed`.
   */
  reboot(task: DriverTask, timeout?: number): Promise<void>;
  /**
   * Checks, without touching the hardware, that the node has what this interface needs (BMC
   * address, port…). Throws `InvalidParameterValue` naming the field.
   */
  validate(task: DriverTask): Promise<void>;
}
