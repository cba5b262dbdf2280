/**
 * A node's management actions beyond the boot device, as its owner runs them (Ironic's
 * `inject_nmi`, `get_supported_indicators`, `get_indicator_state`, `set_indicator_state`): each
 * through the node's management interface after its `validate`. An interface without the action
 * refuses (400, naming the node's management interface) — Ironic's base class does the same.
 * Reads take a shared task; changes take the node's lock.
 */
import { withTask } from '../cluster/task.js';
import { InvalidParameter } from '../common/errors.js';
import type { DriverTask, IndicatorMap, IndicatorState } from '../drivers/index.js';
import type { NodeWork } from './node-operations.js';

type Management = DriverTask['driver']['management'];

/** The refusal of an action the node's management interface does not have. */
function unsupported(task: DriverTask, action: string): InvalidParameter {
  return new InvalidParameter(`Driver ${task.node.driver} does not support ${action} (disabled or not implemented): the node's management_interface ${JSON.stringify(task.driver.names.management)} cannot do it`);
}

/** Runs `fn` on the node's management interface, validated, under a shared task or the lock. */
async function withManagement<T>(work: NodeWork, uuid: string, purpose: string, exclusive: boolean, fn: (m: Management, task: DriverTask) => Promise<T>): Promise<T> {
  const run = async (nodeTask: Parameters<NodeWork['driverTask']>[0]) => {
    const task = await work.driverTask(nodeTask);
    await task.driver.management.validate(task);
    return fn(task.driver.management, task);
  };
  if (!exclusive) return withTask(work.deps.store, uuid, { host: work.deps.host, shared: true, purpose }, run);
  const nodeTask = await work.lock(uuid, purpose);
  try {
    return await run(nodeTask);
  } finally {
    await nodeTask.release();
  }
}

/** Injects an NMI into the node now (no state of the node changes). */
export function injectNmi(work: NodeWork, uuid: string): Promise<void> {
  return withManagement(work, uuid, 'inject nmi', true, async (m, task) => {
    if (m.injectNmi === undefined) throw unsupported(task, 'inject_nmi');
    await m.injectNmi(task);
  });
}

/** The node's indicators by component and name. */
export function supportedIndicators(work: NodeWork, uuid: string): Promise<IndicatorMap> {
  return withManagement(work, uuid, 'getting indicators', false, async (m, task) => {
    if (m.supportedIndicators === undefined) throw unsupported(task, 'indicators');
    return m.supportedIndicators(task);
  });
}

/** One indicator's state. */
export function getIndicatorState(work: NodeWork, uuid: string, component: string, name: string): Promise<IndicatorState> {
  return withManagement(work, uuid, 'getting indicator state', false, async (m, task) => {
    if (m.getIndicatorState === undefined) throw unsupported(task, 'indicators');
    return m.getIndicatorState(task, component, name);
  });
}

/** Sets one indicator. */
export function setIndicatorState(work: NodeWork, uuid: string, component: string, name: string, state: IndicatorState): Promise<void> {
  return withManagement(work, uuid, 'setting indicator state', true, async (m, task) => {
    if (m.setIndicatorState === undefined) throw unsupported(task, 'indicators');
    await m.setIndicatorState(task, component, name, state);
  });
}
