/**
 * Drivers: the hardware interfaces (power, management, boot, deploy), their implementations, and the
 * hardware types that compose them (`fake-hardware`, `ipmi`). The conductor builds one registry with
 * `createDriverRegistry`, turns each lock-holding task into a `DriverTask` with `registry.bind`, and
 * calls `task.driver.<interface>.<method>(task)`.
 */
export type { BootInterface } from './boot.js';
export type { AgentContact, AgentProgress, DeployInterface, DeployOutcome, DeployWait } from './deploy.js';
export { DEPLOY_OUTCOMES } from './deploy.js';
export type { BootDevice, BootDeviceState, ManagementInterface } from './management.js';
export { BOOT_DEVICES } from './management.js';
export type { PowerInterface, PowerState } from './power.js';
export { DEFAULT_POWER_TIMEOUT_S, POWER_STATES } from './power.js';
export type { DriverLogger, DriverNode, DriverPort, DriverTask } from './task.js';
export type { HardwareType, ImplementationCatalog, ImplementedInterfaceType, InterfaceField, InterfaceType, NodeDriver } from './hardware-type.js';
export { IMPLEMENTED_INTERFACE_TYPES, INTERFACE_TYPES, interfaceField } from './hardware-type.js';
export type { BindInput, DriverRegistryOptions, HardwareTypeInfo, InterfaceChoice, InterfaceRegistration, InterfaceSelection, NodeInterfaces } from './registry.js';
export { DriverRegistry } from './registry.js';
export type { BuiltinDriverOptions } from './builtin.js';
export { createDriverRegistry, NO_BOOT_ENVIRONMENT } from './builtin.js';
export { BootDeviceActionFailed, BootEnvironmentUnavailable, InvalidParameterValue, IpmiFailure, PowerActionFailed, UnknownDriver, UnknownInterface, UnsupportedDriverExtension } from './errors.js';
export type { InspectInterface } from './inspect.js';
export type { RescueInterface } from './rescue.js';
export type { ConsoleInfo, ConsoleInterface } from './console.js';
export type { RaidInterface } from './raid.js';
export type { RaidConfig } from './raid-config.js';
export { checkRaidConfig, LOGICAL_DISK_PROPERTIES } from './raid-config.js';
export { RESCUE_FINALIZED_KEY, RESCUE_PASSWORD_KEY } from './direct/agent-rescue.js';
export type { CleanStep, CleanStepInterface, CleanStepRequest, CleanStepSource, CleanStepWait } from './clean-steps.js';
export { automatedCleanSteps, CLEAN_STEP_INTERFACES, cleanStepsOf, executeCleanStep, parseCleanSteps, prepareCleaning, tearDownCleaning, validateCleanSteps } from './clean-steps.js';
export type { BootEnvironmentPort } from './pxe/boot-environment-port.js';
export { FakeHardwareState } from './fake/fake-state.js';
export type { FakeMachine } from './fake/fake-state.js';
export { FAKE_HARDWARE } from './fake/fake-hardware.js';
export { IPMI_HARDWARE } from './ipmi/ipmi-hardware.js';
export type { IpmitoolOptions } from './ipmi/ipmitool.js';
export type { PowerPollOptions } from './ipmi/ipmitool-power.js';
export { nodeBootMode } from './capabilities.js';
export type { VendorArgs, VendorInterface, VendorMethodInfo } from './vendor.js';
export type { IndicatorInfo, IndicatorMap, IndicatorState } from './management.js';
export { INDICATOR_COMPONENTS, INDICATOR_STATES, isIndicatorState } from './management.js';
export { ManagementActionFailed } from './errors.js';
