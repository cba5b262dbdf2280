/**
 * Kysely types of the compute tier's tables (the API database's mappings and a cell's services,
 * compute nodes and instances), in the form of `schema.ts`, which re-exports them and lists them
 * in `Database` and `COLUMN_KINDS`.
 */
import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Flag, JsonWithDefault, Nullable, NullableTimestamp } from './schema.js';

// ---- compute tier: API database ---------------------------------------------------------------

export interface CellMappingsTable {
  id: Generated<number>;
  uuid: string;
  name: string;
  transport_url: Nullable<string>;
  /** URL of the cell's database. */
  database_connection: string;
  disabled: Flag;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface HostMappingsTable {
  id: Generated<number>;
  cell_id: number;
  host: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface InstanceMappingsTable {
  id: Generated<number>;
  instance_uuid: string;
  cell_id: Nullable<number>;
  project_id: Nullable<string>;
  queued_for_delete: Flag;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

// ---- compute tier: cell database --------------------------------------------------------------

export interface ServicesTable {
  id: Generated<number>;
  uuid: string;
  host: string;
  binary: string;
  topic: Nullable<string>;
  report_count: ColumnType<number, number | undefined, number>;
  disabled: Flag;
  disabled_reason: Nullable<string>;
  forced_down: Flag;
  /** Heartbeat, written with the database clock. */
  last_seen_up: NullableTimestamp;
  /** True once discovery has mapped this service's host to the cell. */
  mapped: Flag;
  /** Random per start of the process holding the row (cell migration 0004); null before. */
  instance_token: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface ComputeNodesTable {
  id: Generated<number>;
  /** The bare-metal node's uuid. */
  uuid: string;
  /** The compute service host exposing this node. */
  host: string;
  hypervisor_hostname: string;
  resource_class: Nullable<string>;
  /** True once discovery has mapped this node's host to the cell. */
  mapped: Flag;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface InstancesTable {
  id: Generated<number>;
  uuid: string;
  display_name: Nullable<string>;
  project_id: Nullable<string>;
  /** Compute service host that manages the instance. */
  host: Nullable<string>;
  /** Bare-metal node uuid the instance runs on. */
  node: Nullable<string>;
  resource_class: Nullable<string>;
  vm_state: string;
  task_state: Nullable<string>;
  image: JsonWithDefault;
  /** Why the instance is in `error` (null otherwise). */
  fault: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
