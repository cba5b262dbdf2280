/**
 * `no-vendor` (Ironic's `NoVendor`): the node has no vendor methods. It lists none, and every call
 * is refused with `UnsupportedDriverExtension` (400) naming the interface, before anything runs.
 */
import { UnsupportedDriverExtension } from '../errors.js';
import type { DriverTask } from '../task.js';
import type { VendorInterface, VendorMethodInfo } from '../vendor.js';

export class NoVendor implements VendorInterface {
  methods(): Record<string, VendorMethodInfo> {
    return {};
  }

  driverMethods(): Record<string, VendorMethodInfo> {
    return {};
  }

  properties(): Record<string, string> {
    return {};
  }

  async validate(task: DriverTask): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'vendor', 'no-vendor');
  }

  async call(task: DriverTask): Promise<never> {
    throw new UnsupportedDriverExtension(task.node.driver, 'vendor', 'no-vendor');
  }

  async callDriver(driver: string): Promise<never> {
    throw new UnsupportedDriverExtension(driver, 'vendor', 'no-vendor');
  }
}
