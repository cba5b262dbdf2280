/**
 * Power through `ipmitool chassis power`. A BMC acknowledges `power on` before the machine is on, so
 * every change is followed by polling `power status` with back-off until the target state shows or
 * the timeout passes; a failed poll in between is not fatal (BMCs are busy right after a change).
 */
import { IpmiFailure, PowerActionFailed } from '../errors.js';
import type { PowerInterface, PowerState } from '../power.js';
import { DEFAULT_POWER_TIMEOUT_S } from '../power.js';
import type { DriverTask } from '../task.js';
import { parseIpmiDriverInfo } from './ipmi-driver-info.js';
import type { Ipmitool } from './ipmitool.js';
import { parsePowerStatus } from './ipmitool-output.js';

/** Polling of the power state after a change. */
export interface PowerPollOptions {
  /** First wait before re-reading the state (ms). Default 500. */
  initialIntervalMs?: number;
  /** Longest wait between reads (ms). Default 4000. */
  maxIntervalMs?: number;
}

export class IpmitoolPower implements PowerInterface {
  constructor(
    private readonly ipmitool: Ipmitool,
    private readonly poll: PowerPollOptions = {},
  ) {}

  async validate(task: DriverTask): Promise<void> {
    parseIpmiDriverInfo(task.node.driver_info);
  }

  async getPowerState(task: DriverTask): Promise<PowerState> {
    return this.read(task, 'get power state');
  }

  async setPowerState(task: DriverTask, state: PowerState, timeout = DEFAULT_POWER_TIMEOUT_S): Promise<void> {
    const info = parseIpmiDriverInfo(task.node.driver_info);
    const verb = state === 'power on' ? 'on' : 'off';
    try {
      await this.ipmitool.run(info, ['chassis', 'power', verb], task.signal);
    } catch (err) {
      throw this.failure(task, state, err);
    }
    await this.waitFor(task, state, timeout);
    task.logger.info({ node: task.node.uuid, state }, 'power state changed');
  }

  async reboot(task: DriverTask, timeout = DEFAULT_POWER_TIMEOUT_S): Promise<void> {
    // Off then on rather than `power cycle`, which BMCs refuse for a machine that is already off.
    await this.setPowerState(task, 'power off', timeout);
    await this.setPowerState(task, 'power on', timeout);
  }

  private async read(task: DriverTask, action: string): Promise<PowerState> {
    const info = parseIpmiDriverInfo(task.node.driver_info);
    let stdout: string;
    try {
      stdout = await this.ipmitool.run(info, ['chassis', 'power', 'status'], task.signal);
    } catch (err) {
      throw this.failure(task, action, err);
    }
    const state = parsePowerStatus(stdout);
    if (state === null) throw new PowerActionFailed(task.node.uuid, action, `unrecognised answer from the BMC: ${JSON.stringify(stdout.trim())}`);
    return state;
  }

  private async waitFor(task: DriverTask, target: PowerState, timeoutS: number): Promise<void> {
    const { now, sleep } = this.ipmitool;
    const deadline = now() + timeoutS * 1000;
    let interval = this.poll.initialIntervalMs ?? 500;
    let last = 'no answer yet';
    for (;;) {
      try {
        const state = await this.read(task, target);
        if (state === target) return;
        last = `the BMC still reports ${state}`;
      } catch (err) {
        if (!(err instanceof PowerActionFailed)) throw err;
        last = err.bmcMessage;
      }
      const left = deadline - now();
      if (left <= 0) throw new PowerActionFailed(task.node.uuid, target, `not reached within ${timeoutS} s: ${last}`);
      await sleep(Math.min(interval, left), task.signal);
      interval = Math.min(interval * 2, this.poll.maxIntervalMs ?? 4000);
    }
  }

  private failure(task: DriverTask, action: string, err: unknown): unknown {
    if (err instanceof IpmiFailure) return new PowerActionFailed(task.node.uuid, action, err.bmcMessage, { cause: err });
    return err;
  }
}
