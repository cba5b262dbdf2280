/**
 * Instances (servers) as the compute tier records them in a cell database, and how they look
 * through the compute API.
 *
 * Life of an instance: the scheduler claims a node and inserts it `building`/`spawning` on the
 * node's host; that compute service deploys the node through the bare-metal API and sets `active`
 * (or `error` with a `fault`). A delete sets `task_state = deleting`; the host undeploys the node and
 * removes the instance and its mapping.
 */
import type { Selectable } from 'kysely';
import type { InstancesTable } from '../db/schema.js';

export const VM_STATES = ['building', 'active', 'error'] as const;
export type VmState = (typeof VM_STATES)[number];

export const TASK_STATES = ['spawning', 'deleting'] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** PostgreSQL NOTIFY channel that wakes a compute service when it has instance work; payload = host. */
export const INSTANCES_CHANNEL = 'ironring_compute_instances';

/** The image a server boots: kernel and ramdisk URLs with their checksums (`sha256:<hex>`…). */
export interface ServerImage {
  kernel: string;
  kernel_checksum: string;
  ramdisk: string;
  ramdisk_checksum: string;
}

export type InstanceRow = Selectable<InstancesTable>;

/**
 * Why a server is in ERROR, shaped like Nova's instance fault: the reason, an HTTP-like code (500:
 * the build failed on the bare-metal side) and when it was recorded.
 */
export interface ServerFault {
  message: string;
  code: number;
  created: string;
}

/** The `fault` column's text for `message`: the fault as JSON, recorded now. */
export function encodeFault(message: string, code = 500, created: Date = new Date()): string {
  return JSON.stringify({ message, code, created: created.toISOString() } satisfies ServerFault);
}

/** The fault recorded in a row; rows written before faults were JSON hold the bare message. */
export function decodeFault(text: string | null, recorded: Date): ServerFault | null {
  if (text === null) return null;
  try {
    const parsed = JSON.parse(text) as Partial<ServerFault>;
    if (parsed && typeof parsed.message === 'string') {
      return { message: parsed.message, code: typeof parsed.code === 'number' ? parsed.code : 500, created: typeof parsed.created === 'string' ? parsed.created : recorded.toISOString() };
    }
  } catch {
    // a bare message
  }
  return { message: text, code: 500, created: recorded.toISOString() };
}

/** A server as `GET /compute/v1/servers/{id}` shows it. */
export interface ServerView {
  id: string;
  name: string | null;
  /** BUILD, ACTIVE, ERROR or DELETING, as Nova's API says it. */
  status: string;
  vm_state: string;
  task_state: string | null;
  resource_class: string | null;
  /** The compute service host managing the server. */
  host: string | null;
  /** The bare-metal node uuid. */
  node: string | null;
  cell: string | null;
  image: Record<string, unknown>;
  /** Why the server is in ERROR (Nova's `fault`): null otherwise. */
  fault: ServerFault | null;
  created_at: string;
  updated_at: string;
}

export function serverStatus(row: Pick<InstanceRow, 'vm_state' | 'task_state'>): string {
  if (row.task_state === 'deleting') return 'DELETING';
  switch (row.vm_state) {
    case 'building':
      return 'BUILD';
    case 'active':
      return 'ACTIVE';
    case 'error':
      return 'ERROR';
    default:
      return row.vm_state.toUpperCase();
  }
}

export function serverView(row: InstanceRow, cell: string | null): ServerView {
  return {
    id: row.uuid,
    name: row.display_name,
    status: serverStatus(row),
    vm_state: row.vm_state,
    task_state: row.task_state,
    resource_class: row.resource_class,
    host: row.host,
    node: row.node,
    cell,
    image: row.image,
    fault: decodeFault(row.fault, row.updated_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
