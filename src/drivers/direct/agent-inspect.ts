/**
 * The `agent` inspect interface (Ironic's in-band inspection): the node boots the deploy ramdisk
 * with `ipa-inspection-callback-url`; its agent looks up, heartbeats once, and posts its hardware
 * inventory to `POST /v1/continue_inspection`, which the node's owner turns into properties and
 * ports (`src/conductor/inspection.ts`). Until then the node waits in `inspect wait`.
 */
import type { InspectInterface, InspectOutcome } from '../inspect.js';
import type { DriverTask } from '../task.js';
import { bootAgentRamdisk, requireAgentApiUrl } from './agent-ramdisk.js';

export interface AgentInspectOptions {
  /** The API URL agents reach (`[deploy] agent_api_url`), or null: inspection is refused. */
  apiUrl: () => string | null;
  /** `[deploy] fast_track`: the agent stays up after a good inventory, for the next verb. */
  fastTrack?: boolean;
  /** `[inspector] power_off`: power the node off after the inventory (default true). */
  powerOff?: boolean;
  /** `[inspector] extra_kernel_params`, e.g. `ipa-collect-lldp=1`. */
  kernelParams?: Readonly<Record<string, string>>;
}

export class AgentInspect implements InspectInterface {
  constructor(private readonly options: AgentInspectOptions) {}

  async validate(task: DriverTask): Promise<void> {
    await task.driver.boot.validate(task);
    requireAgentApiUrl(this.options.apiUrl());
  }

  async inspectHardware(task: DriverTask): Promise<InspectOutcome> {
    await bootAgentRamdisk(task, requireAgentApiUrl(this.options.apiUrl()), this.options.kernelParams);
    return 'wait';
  }

  /**
   * The ramdisk's boot files go; the node powers off (`[inspector] power_off`), but with fast track
   * after a good inventory from an agent that heartbeated, it stays up with its agent.
   */
  async tearDownInspection(task: DriverTask, failed: boolean): Promise<{ keepAgent: boolean }> {
    await task.driver.boot.cleanUpRamdisk(task);
    if (!failed && this.options.fastTrack === true && typeof task.node.driver_internal_info?.agent_url === 'string' && task.agentToken) return { keepAgent: true };
    if (failed || this.options.powerOff !== false) await task.driver.power.setPowerState(task, 'power off');
    return { keepAgent: false };
  }
}
