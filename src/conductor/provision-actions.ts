/**
 * The provision verbs (`manage`, `provide`, `inspect`, `clean`, `deploy`, `rescue`, `abort`…) as
 * a node's owner accepts them: checked against the node's interfaces before anything is written,
 * the node moved to its first intermediate state under its lock, then the work run in the
 * background (`provision-steps.ts`), or, for an abort of a wait, the wait's tear-down
 * (`cleaning.ts`, `waiting-work.ts`).
 */
import type { NodeTask } from '../cluster/task.js';
import { InvalidParameter } from '../common/errors.js';
import { RESCUE_PASSWORD_KEY, validateCleanSteps } from '../drivers/index.js';
import type { CleanStepRequest } from '../drivers/index.js';
import { applyAction } from '../nodes/state-machine.js';
import { refuseIfProtected } from '../nodes/protection.js';
import { refuseIfRetired } from '../nodes/retirement.js';
import type { ProvisionStatus } from '../nodes/state-machine.js';
import type { ProvisionAction, ProvisionState, StableState } from '../nodes/states.js';
import { withAgentSession } from './agent-session.js';
import { abortCleaning, DISABLE_RAMDISK_KEY, refuseRamdiskSteps, withoutCleanBookkeeping } from './cleaning.js';
import type { NodeWork, ProvisionOptions } from './node-operations.js';
import { startDeployInfo } from './deploy-steps.js';
import { drive } from './provision-steps.js';
import { abortWaiting } from './waiting-work.js';

/**
 * Starts a provision action; resolves once the node is in its first intermediate state. Refuses
 * (400, nothing written) an action the node's interfaces cannot perform: `no-inspect`,
 * `no-rescue`, clean steps no interface offers (see `checkSupported`).
 */
export async function provision(work: NodeWork, uuid: string, action: ProvisionAction, options: ProvisionOptions): Promise<void> {
  const task = await work.lock(uuid, `provision ${action}`);
  let abortsCleaning = false;
  let abortsInspection = false;
  let abortsRescue = false;
  try {
    const status: ProvisionStatus = { state: task.node.provision_state as ProvisionState, target: task.node.target_provision_state as StableState | null };
    const next = applyAction(status, action);
    // Ironic refuses these for a protected node (403) after the state check.
    if (action === 'deleted' || action === 'undeploy' || action === 'rebuild') refuseIfProtected(task.node);
    // Nor is a retired node made available again (400, as Ironic's NodeIsRetired).
    if (next.event === 'provide') refuseIfRetired(task.node, 'providing');
    // A clean starts afresh: what an earlier one left (a failed one's step index) must not be
    // taken for a clean coming back from `clean wait`.
    const internal = (await checkSupported(work, task, next.event, options.cleanSteps, options.disableRamdisk === true)) ?? (next.state === 'cleaning' ? withoutCleanBookkeeping(task.node.driver_internal_info) : undefined);
    // A deploy starts afresh too: its templates' steps and its deploy_steps (API 1.69) checked first.
    const deployInternal = await startDeployInfo(work.deps.store, task.node, next.state, () => work.driverTask(task), options.deploySteps);
    let instanceInfo: Record<string, unknown> | undefined = options.configdrive !== undefined ? { ...task.node.instance_info, configdrive: options.configdrive } : undefined;
    // Kept where Ironic keeps it, until the agent has set it (never the password in clear).
    if (options.rescuePasswordHash !== undefined) instanceInfo = { ...task.node.instance_info, [RESCUE_PASSWORD_KEY]: options.rescuePasswordHash };
    await task.update(withAgentSession(task.node, {
      provision_state: next.state,
      target_provision_state: next.target,
      provision_updated_at: new Date(),
      last_error: null,
      ...(instanceInfo ? { instance_info: instanceInfo } : {}),
      ...((internal ?? deployInternal) ? { driver_internal_info: internal ?? deployInternal } : {}),
    }));
    await task.recordHistory({ eventType: 'provisioning', severity: 'INFO', event: `${action}: ${status.state} → ${next.state}` });
    abortsCleaning = status.state === 'clean wait' && next.state === 'clean failed';
    abortsInspection = status.state === 'inspect wait' && next.state === 'inspect failed';
    abortsRescue = status.state === 'rescue wait' && next.state === 'rescue failed';
  } catch (err) {
    await task.release();
    throw err;
  }
  if (abortsCleaning) {
    work.background(task, async () => abortCleaning(task, await work.driverTask(task), (d) => work.readPower(d)));
    return;
  }
  if (abortsInspection || abortsRescue) {
    work.background(task, () => abortWaiting(work, task, abortsRescue ? 'rescue' : 'inspection'));
    return;
  }
  work.background(task, () => drive(work, task));
}

/**
 * Checks, before the node changes, that its interfaces can do what `event` asks, as Ironic's
 * conductor validates before it moves the node: `inspect` needs an inspect interface other than
 * `no-inspect`, `rescue`/`unrescue` one other than `no-rescue` (both refuse with
 * `UnsupportedDriverExtension`), and a manual `clean` needs `clean_steps` that the node's interfaces
 * offer. Returns the `driver_internal_info` to write with the new state, if it changes.
 */
async function checkSupported(work: NodeWork, task: NodeTask, event: string, cleanSteps: readonly CleanStepRequest[] | undefined, disableRamdisk = false): Promise<Record<string, unknown> | undefined> {
  if (cleanSteps !== undefined && event !== 'clean') throw new InvalidParameter('"clean_steps" is only valid when setting target provision state to clean');
  if (disableRamdisk && event !== 'clean') throw new InvalidParameter('disable_ramdisk: only valid with manual cleaning (target "clean")');
  const driverTask = await work.driverTask(task);
  const { driver } = driverTask;
  switch (event) {
    case 'inspect':
      await driver.inspect.validate(driverTask);
      await driver.power.validate(driverTask);
      return undefined;
    case 'rescue':
      await driver.rescue.validate(driverTask);
      await driver.power.validate(driverTask);
      return undefined;
    case 'unrescue':
      await driver.rescue.validate(driverTask);
      return undefined;
    case 'clean': {
      if (cleanSteps === undefined) throw new InvalidParameter('"clean_steps" is required when setting target provision state to clean');
      validateCleanSteps(driverTask, cleanSteps);
      // Without the ramdisk (API 1.70) only out-of-band steps can run: the others are refused, not skipped.
      if (disableRamdisk) refuseRamdiskSteps(driverTask, cleanSteps);
      await driver.power.validate(driverTask);
      // The steps to run, kept where Ironic keeps them; nothing of an earlier clean's progress.
      return { ...withoutCleanBookkeeping(task.node.driver_internal_info), clean_steps: cleanSteps.map((s) => ({ ...s })), ...(disableRamdisk ? { [DISABLE_RAMDISK_KEY]: true } : {}) };
    }
    default:
      return undefined;
  }
}
