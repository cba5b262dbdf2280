/**
 * Errors of the driver layer. Each carries the HTTP status the API answers it with (through
 * `IronringError`), so a route turns any of them into Ironic's error body without a status table.
 */
import { IronringError, InvalidParameter } from '../common/errors.js';

/**
 * Thrown by `validate` (and by any driver method before it touches the hardware) when a node field a
 * driver needs is missing or malformed, e.g. `driver_info.ipmi_address` or `instance_info.kernel`.
 * Ironic's `InvalidParameterValue`/`MissingParameterValue`. 400; nothing was sent to the hardware.
 */
export class InvalidParameterValue extends InvalidParameter {
  constructor(
    /** The offending field as a path, e.g. `driver_info.ipmi_port`. */
    readonly field: string,
    /** What is wrong with it, e.g. `is required by the ipmitool power interface`. */
    readonly reason: string,
  ) {
    super(`${field} ${reason}`);
  }
}

/** Thrown for a node or request naming a hardware type that is not enabled. Lists the valid ones. */
export class UnknownDriver extends InvalidParameter {
  constructor(
    /** The hardware type asked for. */
    readonly driver: string,
    /** The enabled hardware types. */
    readonly valid: readonly string[],
  ) {
    super(`driver ${JSON.stringify(driver)} is not enabled; valid drivers: ${valid.join(', ') || '(none)'}`);
  }
}

/**
 * Thrown for a node or request naming an interface implementation its hardware type does not
 * support or this deployment has not enabled (e.g. `boot_interface: "redfish-virtual-media"` on an
 * `ipmi` node). Lists the valid ones for that hardware type.
 */
export class UnknownInterface extends InvalidParameter {
  constructor(
    /** The hardware type of the node. */
    readonly driver: string,
    /** The interface type, e.g. `boot`. */
    readonly interfaceType: string,
    /** The implementation asked for. */
    readonly interfaceName: string,
    /** The implementations enabled for this hardware type and interface type. */
    readonly valid: readonly string[],
  ) {
    super(
      `${interfaceType}_interface ${JSON.stringify(interfaceName)} is not enabled for driver ${driver}; ` +
        `valid ${interfaceType} interfaces: ${valid.join(', ')}`,
    );
  }
}

/**
 * Thrown when one `ipmitool` command failed on every attempt: BMC unreachable, authentication
 * refused, command rejected, timed out. `bmcMessage` is what ipmitool printed (its last error lines).
 * Ironic's `IPMIFailure`; 500 like Ironic, so clients that handle Ironic handle this.
 */
export class IpmiFailure extends IronringError {
  override readonly httpStatus = 500;
  override readonly userError = false;
  constructor(
    /** The ipmitool command without credentials, e.g. `chassis power status`. */
    readonly command: string,
    /** `address:port` of the BMC. */
    readonly bmc: string,
    /** ipmitool's own error text. */
    readonly bmcMessage: string,
    /** How many times the command was tried. */
    readonly attempts: number,
    options?: ErrorOptions,
  ) {
    super(`ipmitool ${command} on ${bmc} failed after ${attempts} attempt(s): ${bmcMessage}`, options);
  }
}

/** A BMC action that did not take effect; the message names the action, the node and the BMC's reason. 500. */
export abstract class BmcActionFailed extends IronringError {
  override readonly httpStatus = 500;
  override readonly userError = false;
  constructor(
    /** Node uuid. */
    readonly node: string,
    /** What was asked: `power on`, `get power state`, `set boot device pxe`… */
    readonly action: string,
    /** The BMC's message, or why the wait gave up. */
    readonly bmcMessage: string,
    options?: ErrorOptions,
  ) {
    super(`${action} failed for node ${node}: ${bmcMessage}`, options);
  }
}

/**
 * Thrown when a power action did not take effect: the BMC refused or did not answer, or it did not
 * report the target state before the timeout. Ironic's `PowerStateFailure`.
 */
export class PowerActionFailed extends BmcActionFailed {}

/** Thrown when the BMC refused or did not answer a boot-device read or change. */
export class BootDeviceActionFailed extends BmcActionFailed {}

/** Thrown when the BMC refused or did not answer another management action (an NMI). */
export class ManagementActionFailed extends BmcActionFailed {}

/**
 * Thrown when a network-boot interface is used in a process that has no boot environment (the API
 * process lists and validates drivers but never prepares boot files). 503: a conductor must do it.
 */
export class BootEnvironmentUnavailable extends IronringError {
  override readonly httpStatus = 503;
  override readonly userError = false;
  constructor() {
    super('this process has no boot environment; network boot runs on the node\'s conductor');
  }
}

/**
 * Thrown when a node's interface cannot do what was asked: its implementation is one of Ironic's
 * `no-*` ones (`no-inspect`, `no-rescue`), or none of its interfaces has the clean step asked for.
 * Ironic's `UnsupportedDriverExtension`, same wording; 400, and thrown before the node changes.
 */
export class UnsupportedDriverExtension extends InvalidParameter {
  constructor(
    /** The node's hardware type, e.g. `ipmi`. */
    readonly driver: string,
    /** The interface type that cannot do it, e.g. `inspect`. */
    readonly extension: string,
    /** The node's implementation of it, e.g. `no-inspect`. */
    readonly interfaceName: string,
  ) {
    super(`Driver ${driver} does not support ${extension} (disabled or not implemented): the node's ${extension}_interface is ${JSON.stringify(interfaceName)}`);
  }
}
