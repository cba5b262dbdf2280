/**
 * Node vendor passthru as the node's owner runs it (Ironic's `vendor_passthru` and
 * `get_node_vendor_passthru_methods`): the method is looked up in the node's vendor interface (400
 * "no handler" otherwise), its HTTP methods checked (400), the node's lock taken when the method
 * needs it, its arguments validated by the interface, then the method runs — in the background
 * for an asynchronous one (the API answers 202), at once for a synchronous one (200 with its
 * value). `no-vendor`, or a vendor interface this conductor has no code for, is refused (400,
 * naming it) before anything runs.
 */
import { acquireTask, withTask } from '../cluster/task.js';
import type { NodeTask } from '../cluster/task.js';
import { InvalidParameter } from '../common/errors.js';
import { UnsupportedDriverExtension } from '../drivers/index.js';
import type { DriverTask, VendorArgs, VendorInterface, VendorMethodInfo } from '../drivers/index.js';
import type { NodeWork } from './node-operations.js';

/** What a call answers: its value (null when it runs in the background) and how it ran. */
export interface PassthruResult {
  async: boolean;
  return: unknown;
}

function vendorOf(work: NodeWork, task: DriverTask): VendorInterface {
  const name = task.driver.names.vendor;
  const vendor = work.deps.drivers.vendorInterface(name);
  if (vendor === undefined || name === 'no-vendor') throw new UnsupportedDriverExtension(task.node.driver, 'vendor', name);
  return vendor;
}

/** The node's vendor methods and their metadata (`{}` for `no-vendor`, as Ironic's). */
export function vendorMethods(work: NodeWork, uuid: string): Promise<Record<string, VendorMethodInfo>> {
  return withTask(work.deps.store, uuid, { host: work.deps.host, shared: true, purpose: 'listing vendor passthru methods' }, async (task) => {
    const driverTask = await work.driverTask(task);
    return { ...(work.deps.drivers.vendorInterface(driverTask.driver.names.vendor)?.methods() ?? {}) };
  });
}

/** Calls node vendor method `method` with HTTP method `httpMethod` and arguments `args`. */
export async function vendorPassthru(work: NodeWork, uuid: string, method: string, httpMethod: string, args: VendorArgs): Promise<PassthruResult> {
  const info = await withTask(work.deps.store, uuid, { host: work.deps.host, shared: true, purpose: 'calling vendor passthru' }, async (task) => {
    const vendor = vendorOf(work, await work.driverTask(task));
    const methods = vendor.methods();
    const found = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (found === undefined) throw new InvalidParameter(`method: no handler for method ${JSON.stringify(method)}; the node's vendor methods: ${Object.keys(methods).join(', ') || '(none)'}`);
    if (!found.http_methods.includes(httpMethod)) throw new InvalidParameter(`The method ${method} does not support HTTP ${httpMethod}; it takes ${found.http_methods.join(', ')}`);
    return found;
  });
  // Ironic's default is the exclusive lock; a method may declare it needs none.
  const task: NodeTask = info.require_exclusive_lock === false
    ? await acquireTask(work.deps.store, uuid, { host: work.deps.host, shared: true, purpose: `vendor passthru ${method}` })
    : await work.lock(uuid, `vendor passthru ${method}`);
  let driverTask: DriverTask;
  let vendor: VendorInterface;
  try {
    driverTask = await work.driverTask(task);
    vendor = vendorOf(work, driverTask);
    await vendor.validate(driverTask, method, args);
    if (!info.async) {
      const value = await vendor.call(driverTask, method, httpMethod, args);
      await task.release();
      return { async: false, return: value ?? null };
    }
  } catch (err) {
    await task.release();
    throw err;
  }
  const ready = { driverTask, vendor };
  work.background(task, async () => {
    try {
      await ready.vendor.call(ready.driverTask, method, httpMethod, args);
    } catch (err) {
      work.deps.logger.error({ node: uuid, method, err: (err as Error).message }, 'vendor passthru method failed');
    }
  });
  return { async: true, return: null };
}
