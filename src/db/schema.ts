/**
 * Kysely types of every table (DESIGN §3), for both dialects.
 *
 * Reads always give `Date` for timestamps, `boolean` for flags and parsed objects for JSON columns,
 * whichever the engine: PostgreSQL does it natively, SQLite through `sqlite-values.ts`, driven by
 * `COLUMN_KINDS` below. Writes pass JSON columns as `JSON.stringify(…)` text.
 */
import type { ColumnType, Generated, Selectable, SelectType } from 'kysely';
import type { CellMappingsTable, ComputeNodesTable, HostMappingsTable, InstanceMappingsTable, InstancesTable, ServicesTable } from './schema-compute.js';

export type { CellMappingsTable, ComputeNodesTable, HostMappingsTable, InstanceMappingsTable, InstancesTable, ServicesTable } from './schema-compute.js';

/** A timestamp: read as `Date`, written as a `Date`, an ISO string or a database-clock expression. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamp the database fills in on insert. */
export type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
/** A JSON object column: read parsed, written as JSON text. */
export type Json<T = Record<string, unknown>> = ColumnType<T, string, string>;
/** A JSON column with a default. */
export type JsonWithDefault<T = Record<string, unknown>> = ColumnType<T, string | undefined, string>;
/** A flag column with a default. */
export type Flag = ColumnType<boolean, boolean | undefined, boolean>;

// ---- bare-metal tier ------------------------------------------------------------------------

export interface ConductorsTable {
  id: Generated<number>;
  hostname: string;
  conductor_group: ColumnType<string, string | undefined, string>;
  online: Flag;
  /** Hardware types this conductor serves. */
  drivers: JsonWithDefault<string[]>;
  /** Base URL of the conductor's RPC endpoint (`http://host:port`). */
  rpc_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** `host:port` of the conductor's TFTP server, for DHCP next-server. */
  tftp_address: ColumnType<string | null, string | null | undefined, string | null>;
  /** Base URL of the conductor's HTTP boot server. */
  http_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** `host:dhcpPort+pxePort` of the conductor's ProxyDHCP responder (null: none runs). */
  proxydhcp_address: ColumnType<string | null, string | null | undefined, string | null>;
  /** Relative weight on the ring (≥ 1). */
  weight: ColumnType<number, number | undefined, number>;
  created_at: CreatedAt;
  /** The heartbeat, always written with the database clock. */
  updated_at: CreatedAt;
}

/** What changed the conductors' rings, and the reconcile passes that followed (`ring-events.ts`). */
export interface RingEventsTable {
  id: Generated<number>;
  /** `joined`, `left`, `died` or `pass`. */
  kind: string;
  conductor_group: ColumnType<string, string | undefined, string>;
  /** The conductor that joined, left or died, or that ran the pass. */
  hostname: string;
  /** Passes: nodes taken over. */
  nodes_moved: ColumnType<number | null, number | null | undefined, number | null>;
  /** Passes: owned nodes left not current (0: converged here). */
  pending: ColumnType<number | null, number | null | undefined, number | null>;
  duration_ms: ColumnType<number | null, number | null | undefined, number | null>;
  /** Several survivors report one death: the first one's row is kept. */
  dedupe_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** Database clock. */
  at: CreatedAt;
  detail: JsonWithDefault;
}

export interface ConductorHardwareInterfacesTable {
  id: Generated<number>;
  conductor_id: number;
  hardware_type: string;
  interface_type: string;
  interface_name: string;
  default: Flag;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/**
 * A node row as read from the database (JSON columns parsed, timestamps as `Date`); the one `NodeRow`.
 * `chassis_uuid` is the uuid of the node's chassis, joined in by the reads that feed the API's views
 * (`nodes/node-store.ts`); rows read elsewhere (a conductor's task) do not carry it.
 */
export type NodeRow = Selectable<NodesTable> & { chassis_uuid?: string | null; allocation_uuid?: string | null };

export type Nullable<T> = ColumnType<T | null, T | null | undefined, T | null>;
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface NodesTable {
  id: Generated<number>;
  uuid: string;
  name: Nullable<string>;
  /** Ironic's `description` (API 1.51): free text of at most 4096 characters. */
  description: Nullable<string>;
  /** Ironic's `owner` (API 1.50): the owning project, free text; ironring checks no projects. */
  owner: Nullable<string>;
  /** Ironic's `lessee` (API 1.65): the project leasing the node, free text of at most 255 characters. */
  lessee: Nullable<string>;
  /** Ironic's `retired` (API 1.61): a retired node is not made available again (`provide` refused). */
  retired: Flag;
  /** Why the node is retired; cleared when it no longer is. */
  retired_reason: Nullable<string>;
  /** Ironic's `network_data` (API 1.66): static network configuration (Nova's network_data.json), `{}` when none. */
  network_data: JsonWithDefault;
  /** Ironic's `boot_mode` (API 1.75): `bios` or `uefi` as the management interface last reported it; null while unknown. */
  boot_mode: Nullable<string>;
  /** Ironic's `secure_boot` (API 1.75): as the management interface last reported it; null while unknown. */
  secure_boot: Nullable<boolean>;
  /** Ironic's `shard` (API 1.82): free text of at most 255 characters grouping nodes for their clients. */
  shard: Nullable<string>;
  driver: string;
  driver_info: JsonWithDefault;
  driver_internal_info: JsonWithDefault;
  properties: JsonWithDefault;
  instance_info: JsonWithDefault;
  extra: JsonWithDefault;
  /** The node's traits (src/nodes/traits.ts), sorted. */
  traits: JsonWithDefault<string[]>;
  instance_uuid: Nullable<string>;
  conductor_group: ColumnType<string, string | undefined, string>;
  resource_class: Nullable<string>;
  provision_state: string;
  target_provision_state: Nullable<string>;
  provision_updated_at: NullableTimestamp;
  power_state: Nullable<string>;
  target_power_state: Nullable<string>;
  maintenance: Flag;
  maintenance_reason: Nullable<string>;
  last_error: Nullable<string>;
  /** Hostname of the conductor holding the node's exclusive lock. */
  reservation: Nullable<string>;
  /** Id of the conductor whose local boot state is current for this node. */
  conductor_affinity: Nullable<number>;
  /** Id of the chassis the node belongs to (Ironic's `chassis_uuid` in the API); null for none. */
  chassis_id: Nullable<number>;
  /** Id of the allocation holding the node (Ironic's `allocation_uuid` in the API, 1.52); null for none. */
  allocation_id: Nullable<number>;
  bios_interface: Nullable<string>;
  boot_interface: Nullable<string>;
  console_interface: Nullable<string>;
  deploy_interface: Nullable<string>;
  inspect_interface: Nullable<string>;
  management_interface: Nullable<string>;
  network_interface: Nullable<string>;
  power_interface: Nullable<string>;
  raid_interface: Nullable<string>;
  rescue_interface: Nullable<string>;
  storage_interface: Nullable<string>;
  vendor_interface: Nullable<string>;
  /** The RAID configuration the node has (Ironic's `raid_config`), `{}` when none is known. */
  raid_config: JsonWithDefault;
  /** The RAID configuration asked for (`PUT /v1/nodes/{n}/states/raid`), `{}` when none. */
  target_raid_config: JsonWithDefault;
  /** Whether the node's console is started (`PUT /v1/nodes/{n}/states/console`). */
  console_enabled: Flag;
  /** Ironic's `protected` (API 1.48): an active or rescued node that may not be undeployed, rebuilt or deleted. */
  protected: Flag;
  /** Why the node is protected; null unless it is. */
  protected_reason: Nullable<string>;
  /**
   * Ironic's `automated_clean` (API 1.47): true cleans the node automatically even where
   * `[conductor] automated_clean` is off, false never does, null follows the configuration.
   */
  automated_clean: Nullable<boolean>;
  /**
   * SHA-256 (hex) of the node's agent token while it is in an agent state (src/agent/agent-token.ts):
   * never the token itself, and read by no view, RPC answer or log.
   */
  agent_token_hash: Nullable<string>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** An allocation row as read from the database. */
export type AllocationRow = Selectable<AllocationsTable>;

/**
 * Ironic's allocations (`/v1/allocations`, API 1.52): a request for a node of a resource class
 * (with traits, among candidate nodes) that a conductor fulfils by claiming one (`node_id`).
 */
export interface AllocationsTable {
  id: Generated<number>;
  uuid: string;
  /** A logical name (as a node's), unique, or null. */
  name: Nullable<string>;
  /** The node claimed; null while allocating or after a failure. Unique: one allocation per node. */
  node_id: Nullable<number>;
  /** `allocating`, `active` or `error`. */
  state: ColumnType<string, string | undefined, string>;
  /** The owning project (API 1.60), free text. */
  owner: Nullable<string>;
  last_error: Nullable<string>;
  resource_class: Nullable<string>;
  /** The conductor that last worked on it (Ironic's `conductor_affinity`), for operators. */
  conductor_affinity: Nullable<number>;
  /** Traits the node must have, in the order given, without repeats. */
  traits: JsonWithDefault<string[]>;
  /** Uuids of the nodes it may take (empty: any). */
  candidate_nodes: JsonWithDefault<string[]>;
  extra: JsonWithDefault;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** A chassis row as read from the database. */
export type ChassisRow = Selectable<ChassisTable>;

/** Ironic's chassis: a named group of nodes (`/v1/chassis`); one with nodes cannot be deleted. */
export interface ChassisTable {
  id: Generated<number>;
  uuid: string;
  /** At most 255 characters, as Ironic's. */
  description: Nullable<string>;
  extra: JsonWithDefault;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** A deploy template row as read from the database. */
export type DeployTemplateRow = Selectable<DeployTemplatesTable>;

/** One deploy step of a template (Ironic's `deploy_template_steps` row, without its ids). */
export interface DeployTemplateStep {
  interface: string;
  step: string;
  args: Record<string, unknown>;
  priority: number;
}

/** Ironic's deploy templates (`/v1/deploy_templates`, API 1.55): steps a deploy runs when its instance asks for the trait `name`. */
export interface DeployTemplatesTable {
  id: Generated<number>;
  uuid: string;
  /** A trait (`CUSTOM_…` or standard), unique. */
  name: string;
  steps: JsonWithDefault<DeployTemplateStep[]>;
  extra: JsonWithDefault;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface PortsTable {
  id: Generated<number>;
  uuid: string;
  /** MAC address, lower-case, colon-separated. */
  address: string;
  node_id: number;
  /** Id of the port group the port belongs to (Ironic's `portgroup_uuid` in the API); null for none. */
  portgroup_id: Nullable<number>;
  pxe_enabled: Flag;
  physical_network: Nullable<string>;
  local_link_connection: JsonWithDefault;
  extra: JsonWithDefault;
  /** A Smart NIC port (API 1.53): its local_link_connection names the NIC's hostname and port_id. */
  is_smartnic: Flag;
  /** Conductor-private data: the attached VIF as `tenant_vif_port_id` (Ironic's key). */
  internal_info: JsonWithDefault;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/**
 * Ironic's port groups (`/v1/portgroups`): ports of one node bonded together. Name and address are
 * unique where set; a group with ports cannot be deleted; a node's groups go with it.
 */
export interface PortgroupsTable {
  id: Generated<number>;
  uuid: string;
  /** A logical name (as a node's), or null. */
  name: Nullable<string>;
  /** MAC address, lower-case, colon-separated; or null. */
  address: Nullable<string>;
  node_id: number;
  /** The bonding mode (Ironic's default comes from `[DEFAULT] default_portgroup_mode`, active-backup). */
  mode: Nullable<string>;
  standalone_ports_supported: Flag;
  extra: JsonWithDefault;
  internal_info: JsonWithDefault;
  properties: JsonWithDefault;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/**
 * Ironic's volume connectors (API 1.32): an initiator through which a node reaches remote storage;
 * (type, connector_id) is unique across all nodes. They go with their node.
 */
export interface VolumeConnectorsTable {
  id: Generated<number>;
  uuid: string;
  node_id: number;
  /** One of Ironic's connector types (`iqn`, `ip`, `mac`, `wwnn`, `wwpn`, `port`, `portgroup`). */
  type: string;
  connector_id: string;
  extra: JsonWithDefault;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** Ironic's volume targets (API 1.32): a volume a node boots from or attaches, one per boot index of a node. */
export interface VolumeTargetsTable {
  id: Generated<number>;
  uuid: string;
  node_id: Nullable<number>;
  volume_type: string;
  boot_index: number;
  volume_id: string;
  properties: JsonWithDefault;
  extra: JsonWithDefault;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/**
 * Ironic's cached BIOS settings of a node (`/v1/nodes/{node}/bios`, API 1.40), one row per setting
 * name, as its BIOS interface read them. No built-in BIOS interface reads any yet, so it stays empty.
 */
export interface BiosSettingsTable {
  node_id: number;
  name: string;
  value: Nullable<string>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** What the last inspection of a node found (one row per node). */
export interface NodeInventoryTable {
  id: Generated<number>;
  node_id: number;
  /** The agent's hardware inventory, as it posted it. */
  inventory_data: JsonWithDefault;
  /** What the conductor derived (interfaces, root disk) and any extra data the agent sent. */
  plugin_data: JsonWithDefault;
  created_at: CreatedAt;
}

/** An operator's inspection rule (src/nodes/inspection-rules.ts). */
export interface InspectionRulesTable {
  id: Generated<number>;
  uuid: string;
  description: Nullable<string>;
  priority: ColumnType<number, number | undefined, number>;
  phase: ColumnType<string, string | undefined, string>;
  sensitive: ColumnType<boolean, boolean | undefined, boolean>;
  conditions: JsonWithDefault<Array<{ op: string; args: Record<string, unknown> | unknown[] }>>;
  actions: JsonWithDefault<Array<{ op: string; args: Record<string, unknown> | unknown[] }>>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface NodeHistoryTable {
  id: Generated<number>;
  uuid: string;
  node_id: number;
  /** Hostname of the conductor that recorded the event. */
  conductor: Nullable<string>;
  event_type: string;
  severity: string;
  event: string;
  user: Nullable<string>;
  created_at: CreatedAt;
}

/** Every table; one database may hold all of them (the embedded default) or a subset. */
export interface Database {
  conductors: ConductorsTable;
  conductor_hardware_interfaces: ConductorHardwareInterfacesTable;
  ring_events: RingEventsTable;
  nodes: NodesTable;
  chassis: ChassisTable;
  allocations: AllocationsTable;
  deploy_templates: DeployTemplatesTable;
  ports: PortsTable;
  volume_connectors: VolumeConnectorsTable;
  volume_targets: VolumeTargetsTable;
  portgroups: PortgroupsTable;
  bios_settings: BiosSettingsTable;
  node_history: NodeHistoryTable;
  node_inventory: NodeInventoryTable;
  inspection_rules: InspectionRulesTable;
  cell_mappings: CellMappingsTable;
  host_mappings: HostMappingsTable;
  instance_mappings: InstanceMappingsTable;
  services: ServicesTable;
  compute_nodes: ComputeNodesTable;
  instances: InstancesTable;
}

/** How a column's values differ from what SQLite stores: flags (0/1), timestamps (ISO-8601 text), JSON (text). */
export type ColumnKind = 'flag' | 'timestamp' | 'json';

/** The kind a column of this (select) type has; `never` for columns stored as read (text, numbers). */
type KindOf<T> = [NonNullable<T>] extends [boolean] ? 'flag' : [NonNullable<T>] extends [Date] ? 'timestamp' : [NonNullable<T>] extends [object] ? 'json' : never;

/** The columns of one table that need converting, each with its kind. */
type TableKinds<T> = { [C in keyof T as KindOf<SelectType<T[C]>> extends never ? never : C]: KindOf<SelectType<T[C]>> };

/**
 * The kind of every column that needs converting, per table. The compiler derives which columns
 * must be listed (and as what) from the table types above, so a new flag, timestamp or JSON column
 * cannot be forgotten here. SQLite results are converted by the table and column each result
 * column comes from, so an alias (`services.disabled as service_disabled`) converts and a computed
 * column that happens to share a name (`… as online`) does not.
 */
export const COLUMN_KINDS: { readonly [T in keyof Database]: TableKinds<Database[T]> } = {
  conductors: { online: 'flag', drivers: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  conductor_hardware_interfaces: { default: 'flag', created_at: 'timestamp', updated_at: 'timestamp' },
  ring_events: { at: 'timestamp', detail: 'json' },
  nodes: {
    driver_info: 'json', driver_internal_info: 'json', properties: 'json', instance_info: 'json', extra: 'json', traits: 'json',
    raid_config: 'json', target_raid_config: 'json', console_enabled: 'flag', protected: 'flag', automated_clean: 'flag',
    retired: 'flag', secure_boot: 'flag', network_data: 'json',
    provision_updated_at: 'timestamp', maintenance: 'flag', created_at: 'timestamp', updated_at: 'timestamp',
  },
  chassis: { extra: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  allocations: { traits: 'json', candidate_nodes: 'json', extra: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  deploy_templates: { steps: 'json', extra: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  ports: { pxe_enabled: 'flag', local_link_connection: 'json', extra: 'json', is_smartnic: 'flag', internal_info: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  volume_connectors: { extra: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  volume_targets: { properties: 'json', extra: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  portgroups: { standalone_ports_supported: 'flag', extra: 'json', internal_info: 'json', properties: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  bios_settings: { created_at: 'timestamp', updated_at: 'timestamp' },
  node_history: { created_at: 'timestamp' },
  node_inventory: { inventory_data: 'json', plugin_data: 'json', created_at: 'timestamp' },
  inspection_rules: { sensitive: 'flag', conditions: 'json', actions: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
  cell_mappings: { disabled: 'flag', created_at: 'timestamp', updated_at: 'timestamp' },
  host_mappings: { created_at: 'timestamp', updated_at: 'timestamp' },
  instance_mappings: { queued_for_delete: 'flag', created_at: 'timestamp', updated_at: 'timestamp' },
  services: { disabled: 'flag', forced_down: 'flag', last_seen_up: 'timestamp', mapped: 'flag', created_at: 'timestamp', updated_at: 'timestamp' },
  compute_nodes: { mapped: 'flag', created_at: 'timestamp', updated_at: 'timestamp' },
  instances: { image: 'json', created_at: 'timestamp', updated_at: 'timestamp' },
};
