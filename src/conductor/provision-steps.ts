/**
 * The work of a node's intermediate provision states, as its owner runs it once a provision action
 * (or a heartbeat, or a resume) set the node moving: each state's driver work (`verifying`,
 * `cleaning`, `inspecting`, `rescuing`, `adopting`, `deploying`, `deleting`…), then `done`,
 * `wait` or `fail` moves the node on, until it rests or waits for its agent. A node that comes to
 * rest on boot files made here is released with this conductor's affinity.
 */
import type { NodePatch, NodeTask } from '../cluster/task.js';
import type { Logger } from '../common/logger.js';
import { RESCUE_FINALIZED_KEY, RESCUE_PASSWORD_KEY } from '../drivers/index.js';
import type { DriverPort, DriverTask } from '../drivers/index.js';
import { deleteAllocationOfNode } from '../nodes/allocation-store.js';
import { bootNeed, stateKind, transition } from '../nodes/state-machine.js';
import type { ProvisionStatus } from '../nodes/state-machine.js';
import type { ProvisionState, StableState } from '../nodes/states.js';
import { adopt, verify } from './adoption.js';
import { withAgentSession } from './agent-session.js';
import { clean, withoutCleanBookkeeping } from './cleaning.js';
import { deployWork, withoutDeployBookkeeping } from './deploy-steps.js';
import type { NodeWork } from './node-operations.js';

/** The events a conductor fires when a state's work ends. */
type StepEvent = 'done' | 'wait' | 'fail' | 'manage' | 'clean';

/** What the work of one state ended with: the event to fire and what to write with it. */
export interface StepResult {
  event: StepEvent | null;
  /** Columns written together with the new state (power state read back, instance fields wiped…). */
  changes?: NodePatch;
  /** The node's agent stays up past the new state (fast track): its session is kept. */
  keepAgent?: boolean;
}

/**
 * True when a node that comes to rest in `state` boots from the files its work left on this
 * conductor (a working state is not a rest: the next step decides).
 */
const restsOnOwnBootFiles = (state: ProvisionState): boolean => stateKind(state) !== 'working' && bootNeed(state) !== 'none';

/**
 * The power state the BMC reports after a provision step changed it, to be written with the new
 * state. A failed read does not fail the step (the work is done); it records the state as unknown
 * (null), which the power-state sync fills in on its next pass.
 */
export async function readPower(logger: Logger, driverTask: DriverTask): Promise<NodePatch> {
  try {
    return { power_state: await driverTask.driver.power.getPowerState(driverTask) };
  } catch (err) {
    logger.warn({ node: driverTask.node.uuid, err: (err as Error).message }, 'could not read the power state after a provision step');
    return { power_state: null };
  }
}

/**
 * Moves a node through intermediate states until it rests: each state's work is done by the
 * driver, then `done`, `wait` or `fail` moves it on.
 */
export async function drive(work: NodeWork, task: NodeTask): Promise<void> {
  const ports = await runSteps(work, task);
  await releaseOnOwnBootFiles(work, task, ports);
}

/**
 * Releases a node whose work left it resting on boot files made here with `conductor_affinity`
 * naming this conductor, in the same conditional write (the one path that sets affinity, as a
 * take-over's release does), and tells the reconciler the files are current as of that write.
 * Any other node is left to the caller's plain release.
 */
async function releaseOnOwnBootFiles(work: NodeWork, task: NodeTask, ports: readonly DriverPort[] | undefined): Promise<void> {
  const me = work.deps.conductorId?.();
  if (me === undefined || ports === undefined || !restsOnOwnBootFiles(task.node.provision_state as ProvisionState)) return;
  const released = await task.release({ affinity: me });
  if (released !== null) work.deps.bootStateMade?.(released.uuid, released.stamp, ports);
}

/**
 * The steps of `drive`; returns the ports the driver work of the last step that moved the node
 * saw (undefined when no step moved it: then no work of this drive made its files).
 */
async function runSteps(work: NodeWork, task: NodeTask): Promise<readonly DriverPort[] | undefined> {
  let ports: readonly DriverPort[] | undefined;
  for (let steps = 0; steps < 10; steps++) {
    const node = task.node;
    const status: ProvisionStatus = { state: node.provision_state as ProvisionState, target: node.target_provision_state as StableState | null };
    let result: StepResult;
    let error: string | null = null;
    let stepPorts: readonly DriverPort[] | undefined;
    try {
      const driverTask = await work.driverTask(task);
      stepPorts = driverTask.ports;
      result = await stateWork(work, task, driverTask, status);
    } catch (err) {
      error = (err as Error).message;
      // A failed adoption leaves the recorded power state meaningless, as Ironic wipes it.
      result = { event: 'fail', ...(status.state === 'adopting' ? { changes: { power_state: null } } : {}) };
    }
    const { event } = result;
    if (event === null) return ports;
    // A step the table refuses is a bug in this file, not the node's fault: fail loudly.
    const next = transition(status, event);
    await task.update(withAgentSession(task.node, {
      ...result.changes,
      provision_state: next.state,
      target_provision_state: next.target,
      provision_updated_at: new Date(),
      ...(error !== null ? { last_error: error } : {}),
    }, result.keepAgent === true));
    ports = stepPorts;
    await task.recordHistory({
      eventType: 'provisioning',
      severity: event === 'fail' ? 'ERROR' : 'INFO',
      event: `${status.state} → ${next.state}${error !== null ? `: ${error}` : ''}`,
    });
    if (event === 'wait' || event === 'fail') return ports;
  }
  return ports;
}

/** The driver work of one intermediate state; a null event for a state that rests. */
async function stateWork(work: NodeWork, task: NodeTask, driverTask: DriverTask, status: ProvisionStatus): Promise<StepResult> {
  const { driver } = driverTask;
  switch (status.state) {
    case 'verifying':
      return verify(task, driverTask);
    case 'cleaning':
      return clean(task, driverTask, status, { automatedClean: work.deps.automatedClean !== false, readPower: (d) => work.readPower(d) });
    case 'inspecting': {
      // The agent interface boots the node and waits for its inventory (`continueInspection`).
      const outcome = await driver.inspect.inspectHardware(driverTask);
      return outcome === 'wait' ? { event: 'wait', changes: await work.readPower(driverTask) } : { event: 'done' };
    }
    case 'rescuing': {
      // The agent rescue boots the node and waits for its agent (`rescue wait`); back here once
      // the agent set the rescue user, to finish: the password's hash and the flag go.
      if ((await driver.rescue.rescue(driverTask)) === 'wait') return { event: 'wait', changes: await work.readPower(driverTask) };
      const { [RESCUE_PASSWORD_KEY]: _hash, ...instanceInfo } = task.node.instance_info;
      const { [RESCUE_FINALIZED_KEY]: _done, ...internal } = task.node.driver_internal_info;
      return { event: 'done', changes: { instance_info: instanceInfo, driver_internal_info: internal } };
    }
    case 'unrescuing':
      await driver.rescue.unrescue(driverTask);
      return { event: 'done' };
    case 'adopting':
      return adopt(task, driverTask);
    case 'deploying':
      // The deploy's steps, the deploy interface's own (validate, prepare, deploy) among them.
      return deployWork(task, driverTask, work.deps.store, (d) => work.readPower(d));
    case 'deleting':
      // Tear-down ends in cleaning, as in Ironic: the node is cleaned before it is available again.
      // The instance's fields go with the instance (Ironic clears them at tear-down, never at provide).
      await driver.deploy.tearDown(driverTask);
      await driver.deploy.cleanUp(driverTask);
      // The node's allocation goes with its instance (Ironic's tear-down destroys it).
      await deleteAllocationOfNode(work.deps.store, task.node.id);
      return { event: 'clean', changes: { instance_uuid: null, instance_info: {}, driver_internal_info: withoutDeployBookkeeping(withoutCleanBookkeeping(task.node.driver_internal_info)), ...(await work.readPower(driverTask)) } };
    default:
      return { event: null };
  }
}
