/**
 * Hardware types (Ironic's driver composition): a hardware type names, for each interface type, the
 * implementations it supports in order of preference. A node picks one per interface type (or gets
 * the default) and the registry composes them into a `NodeDriver`.
 */
import type { BiosInterface } from './bios.js';
import type { BootInterface } from './boot.js';
import type { ConsoleInterface } from './console.js';
import type { DeployInterface } from './deploy.js';
import type { InspectInterface } from './inspect.js';
import type { ManagementInterface } from './management.js';
import type { PowerInterface } from './power.js';
import type { RaidInterface } from './raid.js';
import type { RescueInterface } from './rescue.js';
import type { StorageInterface } from './storage.js';

/**
 * Every interface type a node has a column for, in Ironic's order. Only the implemented ones carry
 * code; the others are names the API validates and reports (`no-console`, `noop`…). An action whose
 * interface is one of Ironic's `no-*` implementations (`no-inspect`, `no-rescue`) is refused, never
 * pretended.
 */
export const INTERFACE_TYPES = ['bios', 'boot', 'console', 'deploy', 'inspect', 'management', 'network', 'power', 'raid', 'rescue', 'storage', 'vendor'] as const;
export type InterfaceType = (typeof INTERFACE_TYPES)[number];

/** Interface types whose implementations are code the conductor calls. */
export const IMPLEMENTED_INTERFACE_TYPES = ['bios', 'boot', 'console', 'deploy', 'inspect', 'management', 'power', 'raid', 'rescue', 'storage'] as const;
export type ImplementedInterfaceType = (typeof IMPLEMENTED_INTERFACE_TYPES)[number];

/** The node field naming an interface type's implementation, e.g. `boot_interface`. */
export type InterfaceField = `${InterfaceType}_interface`;

/** The node (or request) field for an interface type. */
export function interfaceField(type: InterfaceType): InterfaceField {
  return `${type}_interface`;
}

/** The code behind each implemented interface type. */
export interface InterfaceImplementationTypes {
  bios: BiosInterface;
  boot: BootInterface;
  console: ConsoleInterface;
  deploy: DeployInterface;
  inspect: InspectInterface;
  management: ManagementInterface;
  power: PowerInterface;
  raid: RaidInterface;
  rescue: RescueInterface;
  storage: StorageInterface;
}

/** Implementations by interface type and name; one instance serves every node that uses it. */
export type ImplementationCatalog = {
  [K in ImplementedInterfaceType]: Readonly<Record<string, InterfaceImplementationTypes[K]>>;
};

/** A hardware type as declared in code. */
export interface HardwareType {
  /** The node's `driver`, e.g. `ipmi`. */
  readonly name: string;
  /** One line for operators (`GET /v1/drivers` shows the name; docs and `ironring` show this). */
  readonly description: string;
  /** Supported implementation names per interface type, most preferred (the default) first. */
  readonly supported: { readonly [K in InterfaceType]: readonly string[] };
}

/** A node's interfaces composed: what `task.driver` is. */
export interface NodeDriver extends InterfaceImplementationTypes {
  /** The hardware type. */
  readonly hardwareType: string;
  /** The implementation name chosen for each interface type. */
  readonly names: { readonly [K in InterfaceType]: string };
}
