/**
 * The `agent` rescue interface (Ironic's `AgentRescue`): the node boots the deploy ramdisk, its
 * agent looks up and heartbeats (`rescue wait`), and the owner sends it `rescue.finalize_rescue`
 * with the rescue password's crypt hash (the API hashed it; `instance_info.hashed_rescue_password`
 * until then). The agent makes a `rescue` user with it and the ramdisk offers a login on the
 * console; the node is `rescue`, the hash dropped. `unrescue` powers off and boots the instance
 * again, as its deploy interface left it (from its disk for `direct`).
 *
 * ironring's deploy ramdisk is the rescue ramdisk too: `driver_info.rescue_kernel` and
 * `rescue_ramdisk` are not read.
 */
import { AgentClient } from '../../agent/agent-client.js';
import type { AgentContact, AgentProgress } from '../deploy.js';
import { InvalidParameterValue } from '../errors.js';
import type { RescueInterface } from '../rescue.js';
import type { DriverTask } from '../task.js';
import { bootAgentRamdisk, requireAgentApiUrl } from './agent-ramdisk.js';

/** Where the rescue password's hash waits for the agent (Ironic's key). */
export const RESCUE_PASSWORD_KEY = 'hashed_rescue_password';
/** `driver_internal_info` flag: the agent set the rescue user; `rescuing` only has to finish. */
export const RESCUE_FINALIZED_KEY = 'rescue_finalized';

export interface AgentRescueOptions {
  apiUrl: () => string | null;
  client?: AgentClient;
}

export class AgentRescue implements RescueInterface {
  private readonly client: AgentClient;

  constructor(private readonly options: AgentRescueOptions) {
    this.client = options.client ?? new AgentClient();
  }

  async validate(task: DriverTask): Promise<void> {
    await task.driver.boot.validate(task);
    requireAgentApiUrl(this.options.apiUrl());
  }

  async rescue(task: DriverTask): Promise<'done' | 'wait'> {
    if (task.node.driver_internal_info?.[RESCUE_FINALIZED_KEY] === true) return 'done';
    if (typeof task.node.instance_info[RESCUE_PASSWORD_KEY] !== 'string') {
      throw new InvalidParameterValue(`instance_info.${RESCUE_PASSWORD_KEY}`, 'is missing: ask for rescue with a rescue_password');
    }
    const { boot, power } = task.driver;
    await power.setPowerState(task, 'power off');
    await boot.cleanUpInstance(task);
    await bootAgentRamdisk(task, requireAgentApiUrl(this.options.apiUrl()));
    return 'wait';
  }

  async heartbeat(task: DriverTask, agent: AgentContact): Promise<AgentProgress> {
    const hash = task.node.instance_info[RESCUE_PASSWORD_KEY];
    if (typeof hash !== 'string') return { kind: 'fail', error: `rescue: instance_info.${RESCUE_PASSWORD_KEY} is gone; ask for rescue again with a rescue_password` };
    if (!task.agentToken) return { kind: 'fail', error: 'rescue: the node has no agent session' };
    let answer;
    try {
      answer = await this.client.run({ url: agent.url, token: task.agentToken }, 'rescue.finalize_rescue', { rescue_password: hash, hashed: true }, { wait: true, ...(task.signal ? { signal: task.signal } : {}) });
    } catch (err) {
      return { kind: 'fail', error: `rescue: the agent did not take rescue.finalize_rescue: ${(err as Error).message}` };
    }
    if (answer.command_status !== 'SUCCEEDED') {
      const e = answer.command_error;
      return { kind: 'fail', error: `rescue.finalize_rescue failed on the node: ${e === null ? 'the agent gave no reason' : `${e.type}: ${e.message}`}` };
    }
    return { kind: 'resume', internal: { [RESCUE_FINALIZED_KEY]: true } };
  }

  async unrescue(task: DriverTask): Promise<void> {
    const { boot, deploy, management, power } = task.driver;
    await power.setPowerState(task, 'power off');
    await boot.cleanUpRamdisk(task);
    // The instance's boot files, as its deploy interface keeps them for an active node.
    await deploy.takeOver(task);
    await management.setBootDevice(task, task.driver.names.deploy === 'direct' ? 'disk' : 'pxe', true);
    await power.setPowerState(task, 'power on');
  }

  async tearDownRescue(task: DriverTask): Promise<void> {
    await task.driver.boot.cleanUpRamdisk(task);
    await task.driver.power.setPowerState(task, 'power off');
  }
}
