/**
 * A node's console and target RAID configuration as its owner changes them (Ironic's
 * `set_console_mode`, `get_console_information`, `set_target_raid_config`): each under the node's
 * lock, through the node's console or RAID interface, which refuses (`no-console`, `no-raid`) before
 * anything is written. Starting or stopping a console runs in the background, as Ironic's does.
 */
import { withTask } from '../cluster/task.js';
import { NotFound } from '../common/errors.js';
import { UnsupportedDriverExtension } from '../drivers/index.js';
import type { ConsoleInfo } from '../drivers/index.js';
import type { NodeWork } from './node-operations.js';

/** What `GET /v1/nodes/{node}/states/console` answers. */
export interface ConsoleState {
  console_enabled: boolean;
  console_info: ConsoleInfo | Record<string, never> | null;
}

/** The node's console state; `console_info` only while it is enabled (then asked of its interface). */
export function getConsole(work: NodeWork, uuid: string): Promise<ConsoleState> {
  // A read: a shared task, as Ironic's, so a node busy with other work still answers.
  return withTask(work.deps.store, uuid, { host: work.deps.host, shared: true, purpose: 'getting console information' }, async (task) => {
    if (!task.node.console_enabled) return { console_enabled: false, console_info: null };
    const driverTask = await work.driverTask(task);
    await driverTask.driver.console.validate(driverTask);
    return { console_enabled: true, console_info: await driverTask.driver.console.info(driverTask) };
  });
}

/**
 * Starts or stops the node's console: checked by its interface now (a `no-console` node is refused
 * with 400), done in the background, `console_enabled` written once it is. Asking for the state it
 * is in already changes nothing.
 */
export async function setConsoleMode(work: NodeWork, uuid: string, enabled: boolean): Promise<void> {
  const task = await work.lock(uuid, 'setting console mode');
  let driverTask;
  try {
    driverTask = await work.driverTask(task);
    await driverTask.driver.console.validate(driverTask);
    if (task.node.console_enabled === enabled) {
      await task.release();
      return;
    }
    await task.update({ last_error: null });
  } catch (err) {
    await task.release();
    throw err;
  }
  const verb = enabled ? 'start' : 'stop';
  const ready = driverTask;
  work.background(task, async () => {
    try {
      if (enabled) await ready.driver.console.start(ready);
      else await ready.driver.console.stop(ready);
      await task.update({ console_enabled: enabled });
      await task.recordHistory({ eventType: 'console', severity: 'INFO', event: `console ${enabled ? 'enabled' : 'disabled'}` });
    } catch (err) {
      const message = `Failed to ${verb} console for node ${uuid}: ${(err as Error).message}`;
      await task.update({ last_error: message });
      await task.recordHistory({ eventType: 'console', severity: 'ERROR', event: message });
    }
  });
}

/**
 * Stores the node's target RAID configuration (`{}` clears it). A non-empty one is checked by the
 * node's RAID interface first: Ironic's schema, or, for `no-raid`, a refusal — 404 there, as Ironic's
 * API answers a driver without RAID.
 */
export async function setTargetRaidConfig(work: NodeWork, uuid: string, config: Record<string, unknown>): Promise<void> {
  const task = await work.lock(uuid, 'setting target RAID config');
  try {
    if (Object.keys(config).length > 0) {
      const driverTask = await work.driverTask(task);
      try {
        await driverTask.driver.raid.validateRaidConfig(driverTask, config);
      } catch (err) {
        if (err instanceof UnsupportedDriverExtension) throw new NotFound(err.message);
        throw err;
      }
    }
    await task.update({ target_raid_config: JSON.stringify(config) });
  } finally {
    await task.release();
  }
}
