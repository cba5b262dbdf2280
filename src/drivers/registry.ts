/**
 * The registry of enabled hardware types: validates a node's driver and interface choices, composes
 * a node's interfaces for the conductor, and gives the rows a conductor registers in
 * `conductor_hardware_interfaces` — which `GET /v1/drivers` lists (this process's own registry
 * only describes the types there).
 *
 * Enabling follows Ironic: a hardware type's usable implementations of an interface type are the
 * ones it supports that are also enabled (`enabled_<type>_interfaces`), in the hardware type's order
 * of preference; the default is the configured `default_<type>_interface` if usable, else the first.
 */
import { ConfigError } from '../common/errors.js';
import { InvalidParameterValue, UnknownDriver, UnknownInterface } from './errors.js';
import { IMPLEMENTED_INTERFACE_TYPES, INTERFACE_TYPES, interfaceField } from './hardware-type.js';
import type { HardwareType, ImplementationCatalog, InterfaceField, InterfaceType, NodeDriver } from './hardware-type.js';
import type { DriverLogger, DriverNode, DriverPort, DriverTask } from './task.js';
import type { VendorInterface } from './vendor.js';

/** What the registry is built from. */
export interface DriverRegistryOptions {
  hardwareTypes: readonly HardwareType[];
  implementations: ImplementationCatalog;
  /** Hardware types to enable (`enabled_hardware_types`); default all given. */
  enabledHardwareTypes?: readonly string[];
  /** Implementations to enable per interface type; default every one supported. */
  enabledInterfaces?: Partial<Record<InterfaceType, readonly string[]>>;
  /** Preferred default per interface type, used where a hardware type can use it. */
  defaultInterfaces?: Partial<Record<InterfaceType, string>>;
  /** Vendor interfaces by name (`fake`, `no-vendor`); a name without one has no vendor methods. */
  vendorInterfaces?: Readonly<Record<string, VendorInterface>>;
}

/** Usable implementations of one interface type for one hardware type. */
export interface InterfaceChoice {
  /** Usable names, default first. */
  readonly enabled: readonly string[];
  readonly default: string;
}

/** One enabled hardware type: its usable interfaces, as a conductor registers them. */
export interface HardwareTypeInfo {
  readonly name: string;
  readonly description: string;
  readonly interfaces: { readonly [K in InterfaceType]: InterfaceChoice };
}

/** A hardware interface row as a conductor registers it (`conductor_hardware_interfaces`). */
export interface InterfaceRegistration {
  hardwareType: string;
  interfaceType: InterfaceType;
  interfaceName: string;
  default: boolean;
}

/** A node's interface fields as stored or requested; null or absent means "the default". */
export type InterfaceSelection = Partial<Record<InterfaceField, string | null>>;

/** The node fields `interfacesFor` reads. */
export type NodeInterfaces = { driver: string } & InterfaceSelection;

/** Input of `bind`: what the conductor's task knows. */
export interface BindInput {
  node: DriverNode & InterfaceSelection;
  ports: readonly DriverPort[];
  logger: DriverLogger;
  signal?: AbortSignal;
  /** The node's agent credential (`DriverTask.agentToken`). */
  agentToken?: string | null;
  /** Ends the node's agent session (`DriverTask.forgetAgent`). */
  forgetAgent?: () => Promise<void>;
}

export class DriverRegistry {
  private readonly types = new Map<string, HardwareTypeInfo>();

  constructor(private readonly options: DriverRegistryOptions) {
    const declared = new Map(options.hardwareTypes.map((t) => [t.name, t]));
    const enabledTypes = options.enabledHardwareTypes ?? options.hardwareTypes.map((t) => t.name);
    for (const name of enabledTypes) {
      const type = declared.get(name);
      if (type === undefined) {
        throw new ConfigError(`enabled_hardware_types names ${name}; known hardware types: ${[...declared.keys()].join(', ')}`, undefined, 'enabled_hardware_types');
      }
      this.types.set(name, this.resolve(type));
    }
  }

  /** Enabled hardware types, sorted by name, with their usable interfaces and defaults. */
  list(): HardwareTypeInfo[] {
    return [...this.types.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** One enabled hardware type. Throws `UnknownDriver` (400) listing the enabled ones. */
  get(driver: string): HardwareTypeInfo {
    const info = this.types.get(driver);
    if (info === undefined) throw new UnknownDriver(driver, [...this.types.keys()].sort());
    return info;
  }

  /**
   * The vendor interface named `name` (a node's `vendor_interface`, or a hardware type's default),
   * or undefined when this registry has none by that name: callers refuse, never pretend.
   */
  vendorInterface(name: string): VendorInterface | undefined {
    const all = this.options.vendorInterfaces;
    return all !== undefined && Object.hasOwn(all, name) ? all[name] : undefined;
  }

  /** Names of the enabled hardware types, sorted (the conductor row's `drivers`). */
  driverNames(): string[] {
    return [...this.types.keys()].sort();
  }

  /** Every usable (hardware type, interface type, implementation) for `conductor_hardware_interfaces`. */
  registrations(): InterfaceRegistration[] {
    return this.list().flatMap((info) =>
      INTERFACE_TYPES.flatMap((type) =>
        info.interfaces[type].enabled.map((name) => ({ hardwareType: info.name, interfaceType: type, interfaceName: name, default: name === info.interfaces[type].default })),
      ),
    );
  }

  /**
   * Checks a driver and interface choice (node create, or a patch of `driver` or `*_interface`) and
   * returns every interface field resolved: the requested name, or the default where none (or
   * null) was requested. Throws `UnknownDriver` or `UnknownInterface` (400) listing the valid names.
   */
  validateInterfaces(driver: string, requested: InterfaceSelection = {}): Record<InterfaceField, string> {
    const info = this.get(driver);
    const resolved = {} as Record<InterfaceField, string>;
    for (const type of INTERFACE_TYPES) {
      const field = interfaceField(type);
      const asked = requested[field];
      const choice = info.interfaces[type];
      if (asked !== undefined && asked !== null && !choice.enabled.includes(asked)) {
        throw new UnknownInterface(driver, type, asked, choice.enabled);
      }
      resolved[field] = asked ?? choice.default;
    }
    return resolved;
  }

  /** Composes a node's implementations. Throws like `validateInterfaces` when its choice is no longer usable. */
  interfacesFor(node: NodeInterfaces): NodeDriver {
    const { driver, ...requested } = node;
    const names = this.validateInterfaces(driver, requested);
    const impl = this.options.implementations;
    const pick = <K extends (typeof IMPLEMENTED_INTERFACE_TYPES)[number]>(type: K) => {
      const found = impl[type][names[interfaceField(type)]];
      // Unreachable after construction checked the catalogue; kept so a bad catalogue fails loudly.
      if (found === undefined) throw new InvalidParameterValue(interfaceField(type), `has no implementation ${names[interfaceField(type)]}`);
      return found;
    };
    return {
      hardwareType: driver,
      names: Object.fromEntries(INTERFACE_TYPES.map((t) => [t, names[interfaceField(t)]])) as NodeDriver['names'],
      bios: pick('bios'),
      boot: pick('boot'),
      console: pick('console'),
      deploy: pick('deploy'),
      inspect: pick('inspect'),
      management: pick('management'),
      power: pick('power'),
      raid: pick('raid'),
      rescue: pick('rescue'),
      storage: pick('storage'),
    };
  }

  /** Builds the `DriverTask` for a node: the conductor's adapter from its lock-holding task. */
  bind(input: BindInput): DriverTask {
    const task: DriverTask = {
      node: input.node,
      ports: input.ports,
      driver: this.interfacesFor(input.node),
      logger: input.logger,
      ...(input.signal !== undefined ? { signal: input.signal } : {}),
      ...(input.agentToken !== undefined ? { agentToken: input.agentToken } : {}),
      ...(input.forgetAgent !== undefined ? { forgetAgent: input.forgetAgent } : {}),
    };
    return task;
  }

  private resolve(type: HardwareType): HardwareTypeInfo {
    const interfaces = {} as Record<InterfaceType, InterfaceChoice>;
    for (const kind of INTERFACE_TYPES) {
      const enabledNames = this.options.enabledInterfaces?.[kind];
      const usable = type.supported[kind].filter((name) => enabledNames === undefined || enabledNames.includes(name));
      if ((IMPLEMENTED_INTERFACE_TYPES as readonly string[]).includes(kind)) {
        const catalogue = this.options.implementations[kind as (typeof IMPLEMENTED_INTERFACE_TYPES)[number]];
        const missing = usable.filter((name) => !(name in catalogue));
        if (missing.length > 0) throw new ConfigError(`${kind} interface ${missing.join(', ')} of hardware type ${type.name} has no implementation`);
      }
      const first = usable[0];
      if (first === undefined) {
        throw new ConfigError(
          `enabled_${kind}_interfaces enables none of ${type.supported[kind].join(', ')}, which hardware type ${type.name} needs`,
          undefined,
          `enabled_${kind}_interfaces`,
        );
      }
      const preferred = this.options.defaultInterfaces?.[kind];
      const def = preferred !== undefined && usable.includes(preferred) ? preferred : first;
      interfaces[kind] = { enabled: [def, ...usable.filter((n) => n !== def)], default: def };
    }
    return { name: type.name, description: type.description, interfaces };
  }
}
