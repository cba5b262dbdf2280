/**
 * What a driver method is given: the node as plain data, its ports, its composed driver and a logger.
 * The conductor adapts its lock-holding task (`cluster/task.ts`) to this shape; drivers never see the
 * database or the lock, and return results for the conductor to write (power state, provision state).
 */
import type { NodeDriver } from './hardware-type.js';

/** The node fields drivers read. JSON columns are plain objects; drivers never mutate them. */
export interface DriverNode {
  uuid: string;
  name?: string | null;
  /** Hardware type, e.g. `ipmi`. */
  driver: string;
  /** BMC address, credentials, deploy images: whatever the node's interfaces need. */
  driver_info: Readonly<Record<string, unknown>>;
  /** Instance images and settings, e.g. `kernel`, `ramdisk` for the ramdisk deploy. */
  instance_info: Readonly<Record<string, unknown>>;
  /** What the conductor keeps about the node's work (the agent's URL, where a deploy is). */
  driver_internal_info?: Readonly<Record<string, unknown>>;
  /** Hardware properties; `capabilities` may carry `boot_mode:uefi`. */
  properties: Readonly<Record<string, unknown>>;
  /** Ironic provision state, e.g. `active`; lets take-over choose what to rebuild. */
  provision_state?: string;
  /** Last recorded power state; the fake power interface starts from it. */
  power_state?: string | null;
}

/** A NIC of the node. Only pxe-enabled ports get boot files and DHCP entries. */
export interface DriverPort {
  /** MAC address, `aa:bb:cc:dd:ee:ff`. */
  address: string;
  pxeEnabled: boolean;
}

/** The subset of a pino logger drivers use (a pino logger fits). */
export interface DriverLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** One driver call's view of a node (Ironic's `task`: `task.node`, `task.ports`, `task.driver`). */
export interface DriverTask {
  readonly node: DriverNode;
  readonly ports: readonly DriverPort[];
  /** The node's composed interfaces, so one interface can call another (deploy → boot, power). */
  readonly driver: NodeDriver;
  readonly logger: DriverLogger;
  /**
   * The credential the node's agent accepts from its conductor (the digest of the node's agent
   * token, `src/agent/agent-client.ts`); null or absent outside an agent session.
   */
  readonly agentToken?: string | null;
  /**
   * Ends the node's agent session (token, URL) before the node boots a new agent, which must be
   * able to look up afresh (Ironic's `wipe_token_and_url` when it reboots a node into its ramdisk):
   * what a fast-track session left would otherwise refuse the new agent its token. Absent in tests
   * of one driver.
   */
  readonly forgetAgent?: () => Promise<void>;
  /** Aborted when the conductor gives up on the task (stop, lock lost); long waits end early. */
  readonly signal?: AbortSignal;
}
