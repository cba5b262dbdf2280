/**
 * Fake vendor methods (Ironic's `FakeVendorB`, the `fake` vendor interface of fake-hardware): each
 * tests the value of its `bar` argument, with no hardware behind it — for tests and demos, like
 * every `fake` interface. `second_method` runs in the background (202), `third_method_sync` answers
 * at once (200), `fourth_method_shared_lock` runs without the node's exclusive lock. Calls are
 * recorded on the fake machine so a test sees the background ones ran. It declares the driver
 * properties `B1` and `B2`, as Ironic's does; it has no driver-level methods.
 */
import { InvalidParameterValue } from '../errors.js';
import type { DriverTask } from '../task.js';
import type { VendorArgs, VendorInterface, VendorMethodInfo } from '../vendor.js';
import type { FakeHardwareState } from './fake-state.js';

const METHODS: Readonly<Record<string, VendorMethodInfo & { expects: string }>> = {
  second_method: { http_methods: ['POST'], async: true, description: 'Test if the value of bar is kazoo', attach: false, require_exclusive_lock: true, expects: 'kazoo' },
  third_method_sync: { http_methods: ['POST'], async: false, description: 'Test if the value of bar is meow', attach: false, require_exclusive_lock: true, expects: 'meow' },
  fourth_method_shared_lock: { http_methods: ['POST'], async: true, description: 'Test if the value of bar is woof', attach: false, require_exclusive_lock: false, expects: 'woof' },
};

export class FakeVendor implements VendorInterface {
  constructor(private readonly state: FakeHardwareState) {}

  methods(): Record<string, VendorMethodInfo> {
    return Object.fromEntries(Object.entries(METHODS).map(([name, { expects: _, ...info }]) => [name, { ...info, http_methods: [...info.http_methods] }]));
  }

  driverMethods(): Record<string, VendorMethodInfo> {
    return {};
  }

  properties(): Record<string, string> {
    return { B1: 'B1 description. Required.', B2: 'B2 description. Required.' };
  }

  async validate(_task: DriverTask, method: string, args: VendorArgs): Promise<void> {
    if (!Object.hasOwn(METHODS, method)) return;
    const bar = args.bar;
    // Ironic's `if not bar`: every falsy value, empty lists and objects included, is missing.
    const empty = bar === undefined || bar === null || bar === '' || bar === false || bar === 0 || (typeof bar === 'object' && Object.keys(bar).length === 0);
    if (empty) throw new InvalidParameterValue('bar', `is required by vendor method ${method}`);
  }

  async call(task: DriverTask, method: string, httpMethod: string, args: VendorArgs): Promise<unknown> {
    const spec = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
    if (spec === undefined) throw new InvalidParameterValue('method', `${JSON.stringify(method)}: no handler for this vendor method`);
    const result = args.bar === spec.expects;
    (this.state.machine(task.node).vendorCalls ??= []).push({ method, httpMethod, result });
    return result;
  }

  async callDriver(_driver: string, method: string): Promise<unknown> {
    throw new InvalidParameterValue('method', `${JSON.stringify(method)}: no handler for this driver vendor method`);
  }
}
