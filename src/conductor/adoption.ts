/**
 * The provision steps that take a node's word from its BMC, nothing written to the machine:
 * `verifying` (enroll → manageable, Ironic's `do_node_verify`) and `adopting` (manageable →
 * active, Ironic's `do_node_adopt`). Run by the provision loop (`provision-steps.ts`).
 */
import type { NodeTask } from '../cluster/task.js';
import { PowerActionFailed } from '../drivers/index.js';
import type { DriverTask, PowerState } from '../drivers/index.js';
import type { StepResult } from './provision-steps.js';
import { reportedBootSettings } from './boot-mode.js';

/**
 * `adopting` (Ironic's `do_node_adopt`): the boot and deploy interfaces validate, the node is
 * taken over as a new owner would (the instance's boot files), and the BMC is asked what the
 * machine is doing — its power state, which must answer (a node adopted blind would be
 * recorded `active` with nothing known of it: `adopt failed` instead), and its boot device,
 * recorded in the history beside it. Nothing is written to the machine's disks.
 */
export async function adopt(task: NodeTask, driverTask: DriverTask): Promise<StepResult> {
  const { boot, deploy, management, power } = driverTask.driver;
  await boot.validate(driverTask);
  await deploy.prepare(driverTask);
  await deploy.takeOver(driverTask);
  let state: PowerState;
  try {
    state = await power.getPowerState(driverTask);
  } catch (err) {
    throw new Error(`the BMC did not say whether the machine runs: ${(err as Error).message}`, { cause: err });
  }
  let device = 'unknown';
  try {
    const read = await management.getBootDevice(driverTask);
    device = `${read.boot_device ?? 'unknown'}${read.persistent === true ? ' (persistent)' : read.persistent === false ? ' (once)' : ''}`;
  } catch (err) {
    device = `unknown (${(err as Error).message})`;
  }
  await task.recordHistory({ eventType: 'provisioning', severity: 'INFO', event: `adopted: the BMC says ${state}, boot device ${device}` });
  return { event: 'done', changes: { power_state: state } };
}

/**
 * `verifying` (Ironic's `do_node_verify`): the power interface's fields must validate and the BMC
 * must answer a power-state read with these credentials; the node goes back to `enroll` with
 * `last_error` saying which of the two failed, or on to `manageable` with its power state recorded.
 */
export async function verify(task: NodeTask, driverTask: DriverTask): Promise<StepResult> {
  const { power, management } = driverTask.driver;
  const uuid = task.node.uuid;
  try {
    await power.validate(driverTask);
    await management.validate(driverTask);
  } catch (err) {
    throw new Error(`Failed to validate power driver interface for node ${uuid}. Error: ${(err as Error).message}`, { cause: err });
  }
  let state: PowerState;
  try {
    state = await power.getPowerState(driverTask);
  } catch (err) {
    // The BMC's own answer (ipmitool's, naming the BMC and the attempts) says more than our wrapper.
    const cause = err instanceof PowerActionFailed && err.cause instanceof Error ? err.cause : (err as Error);
    throw new Error(`Failed to get power state for node ${uuid}. Error: ${cause.message}`, { cause: err });
  }
  // As Ironic's verify: the boot mode and secure boot state the management interface reports.
  return { event: 'done', changes: { power_state: state, ...(await reportedBootSettings(driverTask)) } };
}
