/**
 * The ends of a node's waits for its agent, as the node's owner handles them: the inventory that
 * ends `inspect wait` (Ironic's `continue_inspection`), the abort of `inspect wait` or
 * `rescue wait`, and the failure of a wait that lasted too long (`wait-timeouts.ts` finds those).
 */
import { acquireTask } from '../cluster/task.js';
import type { NodePatch, NodeTask } from '../cluster/task.js';
import { Conflict, InvalidParameter } from '../common/errors.js';
import { RESCUE_PASSWORD_KEY } from '../drivers/index.js';
import type { NodeRow } from '../nodes/node-store.js';
import { transition } from '../nodes/state-machine.js';
import type { ProvisionStatus } from '../nodes/state-machine.js';
import type { ProvisionState, StableState } from '../nodes/states.js';
import { agentTokenMatches } from '../agent/agent-token.js';
import type { InspectionData } from '../agent/inspection-data.js';
import { INVALID_AGENT_TOKEN, withAgentSession } from './agent-session.js';
import { withoutCleanBookkeeping } from './cleaning.js';
import { DEFAULT_INSPECTOR_SETTINGS, finishInspection } from './inspection.js';
import type { NodeWork } from './node-operations.js';

/**
 * The agent's inventory for a node in `inspect wait` (Ironic's `continue_inspection`): checked
 * here — the node still waits for it, and a node whose agent looked up (it holds a token) must be
 * sent that token — then processed in the background under the node's lock
 * (`inspection.ts`): properties and ports, the inventory stored, `manageable` (or
 * `inspect failed` with `last_error`). `tokenHash` is the digest of the token the agent sent, or
 * null when it sent none (IPA, which posts before any lookup).
 */
export async function continueInspection(work: NodeWork, uuid: string, tokenHash: string | null, data: InspectionData): Promise<void> {
  const check = (node: NodeRow) => {
    if (node.provision_state !== 'inspect wait') throw new Conflict(`node ${node.uuid} is in provision state "${node.provision_state}", not "inspect wait": it is not waiting for an inventory`);
    if (node.agent_token_hash !== null && (tokenHash === null || !agentTokenMatches(tokenHash, node.agent_token_hash))) throw new InvalidParameter(INVALID_AGENT_TOKEN);
  };
  // A wrong token is refused from a plain read, before the lock (as heartbeats are).
  check((await acquireTask(work.deps.store, uuid, { host: '', shared: true })).node);
  const task = await work.lock(uuid, 'continue inspection');
  try {
    check(task.node);
  } catch (err) {
    await task.release();
    throw err;
  }
  work.background(task, async () => {
    const driverTask = await work.driverTask(task);
    const status: ProvisionStatus = { state: task.node.provision_state as ProvisionState, target: task.node.target_provision_state as StableState | null };
    let changes: NodePatch = {};
    let keepAgent = false;
    let error: string | null = null;
    try {
      ({ changes, keepAgent } = await finishInspection(task, driverTask, data, { store: work.deps.store, settings: work.deps.inspector ?? DEFAULT_INSPECTOR_SETTINGS, readPower: (d) => work.readPower(d) }));
    } catch (err) {
      error = `inspection failed: ${(err as Error).message}`;
      changes = await work.readPower(driverTask);
    }
    const next = transition(status, error === null ? 'done' : 'fail');
    await task.update(withAgentSession(task.node, { ...changes, provision_state: next.state, target_provision_state: next.target, provision_updated_at: new Date(), last_error: error }, keepAgent));
    await task.recordHistory({ eventType: 'provisioning', severity: error === null ? 'INFO' : 'ERROR', event: `${status.state} → ${next.state}${error !== null ? `: ${error}` : ''}` });
  });
}

/**
 * An aborted `inspect wait` or `rescue wait` (Ironic's abort of each): the ramdisk torn down, the
 * node powered off; a rescue's password hash goes too.
 */
export async function abortWaiting(work: NodeWork, task: NodeTask, what: 'inspection' | 'rescue'): Promise<void> {
  const driverTask = await work.driverTask(task);
  let error = `By request, the ${what} operation has been aborted`;
  try {
    if (what === 'inspection') await driverTask.driver.inspect.tearDownInspection?.(driverTask, true);
    else await driverTask.driver.rescue.tearDownRescue?.(driverTask);
  } catch (err) {
    error += `; ending the ${what} failed: ${(err as Error).message}`;
  }
  const { [RESCUE_PASSWORD_KEY]: _hash, ...instanceInfo } = task.node.instance_info;
  await task.update({ last_error: error, ...(what === 'rescue' ? { instance_info: instanceInfo } : {}), ...(await work.readPower(driverTask)) });
  await task.recordHistory({ eventType: what, severity: 'WARNING', event: error });
}

/**
 * Fails a node that waited `seconds` too long for its agent in `state` (`wait-timeouts.ts`), with
 * Ironic's message: the ramdisk's boot files go and the node powers off (what fails there is
 * added to the message, never hidden), then the state's failure, the agent session ended. False
 * when the node is locked (someone is on it: the next pass looks again) or no longer in `state`.
 */
export async function failWaitTimeout(work: NodeWork, uuid: string, state: string, seconds: number): Promise<boolean> {
  const task = await work.tryLock(uuid, 'wait timeout');
  if (task === null) return false;
  try {
    if (task.node.provision_state !== state) return false;
    const driverTask = await work.driverTask(task);
    const step = task.node.driver_internal_info.clean_step as { interface?: string; step?: string } | undefined;
    const messages: Record<string, string> = {
      'wait call-back': `Timeout reached while waiting for callback for node ${uuid}`,
      'clean wait': `Timeout reached while cleaning the node. Please check if the ramdisk responsible for the cleaning is running on the node.${step?.step ? ` Failed on step ${step.interface}.${step.step}.` : ''}`,
      'inspect wait': 'Timeout reached while inspecting the node',
      'rescue wait': `Timeout reached while waiting for rescue ramdisk callback for node ${uuid}`,
    };
    let error = `${messages[state] ?? `Timeout reached in ${state}`} (waited more than ${seconds} s)`;
    try {
      if (state === 'wait call-back') await driverTask.driver.deploy.cleanUp(driverTask);
      else await driverTask.driver.boot.cleanUpRamdisk(driverTask);
      await driverTask.driver.power.setPowerState(driverTask, 'power off');
    } catch (err) {
      error += `; powering the node off failed: ${(err as Error).message}`;
    }
    const status: ProvisionStatus = { state: task.node.provision_state as ProvisionState, target: task.node.target_provision_state as StableState | null };
    const next = transition(status, 'fail');
    const { [RESCUE_PASSWORD_KEY]: _hash, ...instanceInfo } = task.node.instance_info;
    await task.update(withAgentSession(task.node, {
      ...(await work.readPower(driverTask)),
      ...(state === 'clean wait' ? { driver_internal_info: withoutCleanBookkeeping(task.node.driver_internal_info) } : {}),
      ...(state === 'rescue wait' ? { instance_info: instanceInfo } : {}),
      provision_state: next.state,
      target_provision_state: next.target,
      provision_updated_at: new Date(),
      last_error: error,
    }));
    await task.recordHistory({ eventType: 'provisioning', severity: 'ERROR', event: `${status.state} → ${next.state}: ${error}` });
    return true;
  } finally {
    await task.release();
  }
}
