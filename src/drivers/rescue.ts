/** The rescue interface: boots an active node into a rescue ramdisk and back to its instance. */
import type { AgentContact, AgentProgress } from './deploy.js';
import type { DriverTask } from './task.js';

export interface RescueInterface {
  /**
   * Checks, without touching the hardware, that the node can be rescued. Throws
   * `UnsupportedDriverExtension` for `no-rescue`, `InvalidParameterValue` for a missing field.
   */
  validate(task: DriverTask): Promise<void>;
  /**
   * Boots the node into the rescue ramdisk: `done` once it is there, `wait` when the node boots an
   * agent that must call back first (`rescue wait`; its heartbeat goes to `heartbeat`, and a
   * `resume` brings the node back here to finish).
   */
  rescue(task: DriverTask): Promise<'done' | 'wait'>;
  /** Boots the node back into its instance; resolves once it is there. */
  unrescue(task: DriverTask): Promise<void>;
  /**
   * A heartbeat of the node's agent in `rescue wait` (token checked, `agent_url` written): the
   * interface gives the agent the rescue password and says what that moved. Must return soon.
   */
  heartbeat?(task: DriverTask, agent: AgentContact): Promise<AgentProgress>;
  /** Undoes an unfinished rescue (abort, failure): ramdisk files gone, the node powered off. */
  tearDownRescue?(task: DriverTask): Promise<void>;
}
