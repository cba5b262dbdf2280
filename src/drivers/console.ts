/** The console interface: a node's serial console, started and stopped on request (Ironic's `ConsoleInterface`). */
import type { DriverTask } from './task.js';

/** Where a client reaches a started console (Ironic's `console_info`): its type and URL. */
export interface ConsoleInfo {
  type: string;
  url: string;
}

export interface ConsoleInterface {
  /**
   * Checks, without touching the hardware, that the node's console can be used. Throws
   * `UnsupportedDriverExtension` for `no-console`, `InvalidParameterValue` for a missing field.
   */
  validate(task: DriverTask): Promise<void>;
  /** Starts the node's console; resolves once it is reachable. */
  start(task: DriverTask): Promise<void>;
  /** Stops the node's console. */
  stop(task: DriverTask): Promise<void>;
  /** Where to reach the started console; `{}` for an implementation with nothing to reach (`fake`). */
  info(task: DriverTask): Promise<ConsoleInfo | Record<string, never>>;
}
