/**
 * Changing a node's boot mode and secure boot state (Ironic's API 1.76 `change_node_boot_mode`,
 * `change_node_secure_boot`): under the node's lock, through its management interface. An interface
 * that cannot (ipmitool has no boot mode command) is refused with 400 before anything is written —
 * never accepted to fail later. The change itself runs in the background, as Ironic's: `last_error`
 * is cleared when it is accepted and says why when it failed; on success the node's `boot_mode` or
 * `secure_boot` is what the interface reads back (the value asked for when it cannot read), and a
 * history event records it.
 */
import { InvalidParameter } from '../common/errors.js';
import type { NodeBootMode } from '../drivers/capabilities.js';
import type { DriverTask } from '../drivers/index.js';
import type { NodeWork } from './node-operations.js';

/** What is changed: the boot mode or the secure boot state. */
type Setting = { kind: 'boot_mode'; target: NodeBootMode } | { kind: 'secure_boot'; target: boolean };

/** Refused because the node's management interface cannot make the change. 400, nothing written. */
export class BootModeUnsupported extends InvalidParameter {
  constructor(readonly driver: string, readonly interfaceName: string, readonly what: string) {
    super(`Driver ${driver} does not support ${what}: the node's management_interface ${JSON.stringify(interfaceName)} cannot change it`);
  }
}

const WHAT = { boot_mode: 'changing the boot mode', secure_boot: 'changing the secure boot state' } as const;

/** Starts the change; resolves once it is accepted (the node's lock is held until it ends). */
export async function changeBootSetting(work: NodeWork, uuid: string, setting: Setting): Promise<void> {
  const task = await work.lock(uuid, WHAT[setting.kind]);
  let driverTask: DriverTask;
  try {
    driverTask = await work.driverTask(task);
    const management = driverTask.driver.management;
    const can = setting.kind === 'boot_mode' ? management.setBootMode !== undefined : management.setSecureBootState !== undefined;
    if (!can) throw new BootModeUnsupported(task.node.driver, driverTask.driver.names.management, WHAT[setting.kind]);
    await management.validate(driverTask);
    await task.update({ last_error: null });
  } catch (err) {
    await task.release();
    throw err;
  }
  const ready = driverTask;
  work.background(task, async () => {
    const label = setting.kind === 'boot_mode' ? 'boot mode' : 'secure boot state';
    try {
      const value = await apply(ready, setting);
      await task.update(setting.kind === 'boot_mode' ? { boot_mode: value as string | null } : { secure_boot: value as boolean | null });
      await task.recordHistory({ eventType: 'management', severity: 'INFO', event: `${label} is ${String(value)}` });
    } catch (err) {
      const message = `Failed to change ${label} to '${String(setting.target)}': ${(err as Error).message}`;
      ready.logger.warn({ node: uuid, err: (err as Error).message }, message);
      await task.update({ last_error: message });
      await task.recordHistory({ eventType: 'management', severity: 'ERROR', event: message });
    }
  });
}

/** A read that may fail: null (unknown) then, as Ironic's check before a change. */
async function readOrNull<T>(read: (() => Promise<T | null>) | undefined): Promise<T | null> {
  try {
    return read === undefined ? null : ((await read()) ?? null);
  } catch {
    return null;
  }
}

/**
 * Sets the value unless the interface reads it as set already (Ironic's check first: an unreadable
 * value is set anyway); returns the value it reads afterwards, or the target when it cannot tell.
 */
async function apply(driverTask: DriverTask, setting: Setting): Promise<NodeBootMode | boolean | null> {
  const m = driverTask.driver.management;
  if (setting.kind === 'boot_mode') {
    const read = m.getBootMode ? () => m.getBootMode!(driverTask) : undefined;
    if ((await readOrNull(read)) !== setting.target) await m.setBootMode!(driverTask, setting.target);
    return (await readOrNull(read)) ?? setting.target;
  }
  const read = m.getSecureBootState ? () => m.getSecureBootState!(driverTask) : undefined;
  if ((await readOrNull(read)) !== setting.target) await m.setSecureBootState!(driverTask, setting.target);
  return (await readOrNull(read)) ?? setting.target;
}

/**
 * What the node's management interface reports of its boot mode and secure boot, for the node's
 * `boot_mode`/`secure_boot` (Ironic's `node_cache_boot_mode`, run when a node is verified): null for
 * what the interface cannot read; nothing (the node keeps what it had) when a read fails.
 */
export async function reportedBootSettings(driverTask: DriverTask): Promise<{ boot_mode?: string | null; secure_boot?: boolean | null }> {
  const m = driverTask.driver.management;
  try {
    return { boot_mode: (await m.getBootMode?.(driverTask)) ?? null, secure_boot: (await m.getSecureBootState?.(driverTask)) ?? null };
  } catch (err) {
    driverTask.logger.warn({ node: driverTask.node.uuid, err: (err as Error).message }, 'could not read the boot mode or secure boot state');
    return {};
  }
}
