/**
 * The vendor interface (Ironic's `VendorInterface`): methods a hardware type offers beyond the
 * standard interfaces, called through `/v1/nodes/{node}/vendor_passthru?method=` (node methods) and
 * `/v1/drivers/{driver}/vendor_passthru?method=` (driver methods). Each method declares the HTTP
 * methods it answers, whether it runs in the background (202) or answers at once (200), and whether
 * it needs the node's exclusive lock — Ironic's `@passthru` metadata, listed by `…/methods`.
 */
import type { DriverTask } from './task.js';

/** What `…/vendor_passthru/methods` shows of one method (Ironic's metadata, without the function). */
export interface VendorMethodInfo {
  /** Upper-case HTTP methods the method answers, e.g. `['POST']`. */
  http_methods: string[];
  /** True: runs in the background and the API answers 202; false: 200 with its return value. */
  async: boolean;
  description: string;
  /** Ironic's `attach` (return value as the raw response body); always false here. */
  attach: boolean;
  /** Node methods only: whether the node's exclusive lock is taken (Ironic's default true). */
  require_exclusive_lock?: boolean;
}

/** The arguments of a call: the request body, an object (Ironic passes it as keyword arguments). */
export type VendorArgs = Readonly<Record<string, unknown>>;

export interface VendorInterface {
  /** The node-level methods, by name. */
  methods(): Readonly<Record<string, VendorMethodInfo>>;
  /** The driver-level methods, by name (`/v1/drivers/{d}/vendor_passthru`). */
  driverMethods(): Readonly<Record<string, VendorMethodInfo>>;
  /** The driver_info keys this interface reads, described (they join `/v1/drivers/{d}/properties`). */
  properties(): Readonly<Record<string, string>>;
  /**
   * Checks a node method's arguments before anything runs. Throws `UnsupportedDriverExtension` for
   * `no-vendor`, `InvalidParameterValue` naming a missing or bad argument.
   */
  validate(task: DriverTask, method: string, args: VendorArgs): Promise<void>;
  /** Runs a node method (already validated); resolves to its return value (null for none). */
  call(task: DriverTask, method: string, httpMethod: string, args: VendorArgs): Promise<unknown>;
  /** Checks and runs a driver method of hardware type `driver`; resolves to its return value. */
  callDriver(driver: string, method: string, httpMethod: string, args: VendorArgs): Promise<unknown>;
}
