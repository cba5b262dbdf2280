/**
 * Every configuration option ironring reads: its section, type, default and a one-line description.
 *
 * Section and option names follow Ironic's where one exists, so an operator's muscle memory carries
 * over. This table is the single source for validation, `config defaults`, `config show`, the
 * `IRONRING_…` environment variables and the typed `Config` object the rest of the code reads.
 */

import { LOG_LEVELS } from '../common/logger.js';
import { BOOT_SECTIONS } from './boot-options.js';
import type { LogLevel } from '../common/logger.js';

export { LOG_LEVELS };
export type { LogLevel };

export const HASH_RING_MODES = ['balanced', 'tooz'] as const;

/** What a value must be; `describe` words appear in error messages ("expected an integer ≥ 1"). */
export type OptionType =
  | { kind: 'string'; pattern?: RegExp; describe?: string }
  | { kind: 'integer'; min?: number; max?: number }
  | { kind: 'number'; min?: number }
  | { kind: 'boolean' }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'address' };

export interface OptionSpec {
  type: OptionType;
  default: string | number | boolean;
  description: string;
  /** Masked in `config show` (for URLs only the password part). */
  secret?: boolean;
  /** A file-system path: relative values are resolved against the working directory or data_dir. */
  path?: 'cwd' | 'data_dir';
  /** A comma-separated list (Ironic's ListOpt); with `path`, each item is resolved on its own. */
  list?: boolean;
}

/** `host:port` with an IPv4 address, a host name, or a bracketed IPv6 address. */
export const ADDRESS_PATTERN = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

export { IPV4_PATTERN } from './boot-options.js';

const seconds = (min: number) => ({ kind: 'integer', min }) as const;

/**
 * The option table. `DEFAULT` holds the top-level keys of the TOML file (those before any
 * `[section]`), as in Ironic's `[DEFAULT]`.
 */
export const OPTIONS = {
  DEFAULT: {
    host: {
      type: { kind: 'string', pattern: /^[A-Za-z0-9_.-]*$/, describe: 'letters, digits, _ . - only' },
      default: '',
      description: 'Name of this host in the cluster (conductor hostname, compute host); empty means the machine hostname.',
    },
    data_dir: {
      type: { kind: 'string' },
      default: './ironring-data',
      path: 'cwd',
      description: 'Directory for local state; relative paths in other options are resolved against it.',
    },
    log_level: {
      type: { kind: 'enum', values: LOG_LEVELS },
      default: 'info',
      description: 'Least severe log level written.',
    },
    auth_strategy: {
      type: { kind: 'enum', values: ['noauth', 'http_basic'] },
      default: 'noauth',
      description: "API authentication: 'noauth' (keep the API on 127.0.0.1 then) or 'http_basic' with http_basic_auth_user_file.",
    },
    http_basic_auth_user_file: {
      type: { kind: 'string' },
      default: 'htpasswd',
      path: 'data_dir',
      description: 'Apache htpasswd file of API users (bcrypt hashes, `htpasswd -B`) for http_basic.',
    },
  },
  database: {
    url: {
      type: { kind: 'string' },
      default: '',
      description: 'Database URL: sqlite:///abs/path.db, sqlite:relative.db or postgres://user:pass@host:port/db; empty means sqlite under data_dir.',
      secret: true,
    },
    max_pool_size: {
      type: { kind: 'integer', min: 1, max: 1000 },
      default: 10,
      description: 'Most connections one process opens to a PostgreSQL database.',
    },
    connect_timeout: {
      type: seconds(1),
      default: 10,
      description: 'Seconds to wait for a database connection before giving up.',
    },
    sqlite_busy_timeout: {
      type: { kind: 'integer', min: 0 },
      default: 5000,
      description: 'Milliseconds an SQLite writer waits for a lock held by another process.',
    },
  },
  api: {
    address: {
      type: { kind: 'address' },
      default: '127.0.0.1:6385',
      description: 'Address (host:port) the REST API listens on.',
    },
    public_endpoint: {
      type: { kind: 'string' },
      default: '',
      description: 'Base URL clients use to reach the API, for links in responses; empty means the request Host header.',
    },
    max_limit: {
      type: { kind: 'integer', min: 1 },
      default: 1000,
      description: 'Most items one list request returns; larger pages get a next link.',
    },
    // Logins (http_basic here and on conductor listeners): checked off the event loop, limited per address.
    login_failure_limit: {
      type: { kind: 'integer', min: 0 },
      default: 10,
      description: 'Failed logins one client address may make within login_failure_window before it is answered 429 with Retry-After (0: no limit).',
    },
    login_failure_window: {
      type: seconds(1),
      default: 60,
      description: 'Seconds a failed login counts against its client address.',
    },
    password_check_threads: {
      type: { kind: 'integer', min: 1, max: 64 },
      default: 2,
      description: 'Worker threads checking bcrypt passwords, so that logins never stall the event loop.',
    },
    password_check_queue: {
      type: { kind: 'integer', min: 1 },
      default: 64,
      description: 'Password checks that may wait for a thread; more are answered 503 with Retry-After.',
    },
    max_json_depth: {
      type: { kind: 'integer', min: 2, max: 1000 },
      default: 32,
      description: 'Deepest nesting of objects and arrays a JSON field (driver_info, extra …) may hold after a create or patch, and (plus the two levels of a JSON Patch) in any request body; deeper gets 400 and nothing is stored.',
    },
    ramdisk_heartbeat_timeout: {
      type: { kind: 'integer', min: 10, max: 86400 },
      default: 300,
      description: 'Seconds within which a deploy agent must heartbeat again, told to agents at lookup (Ironic\'s [api] ramdisk_heartbeat_timeout); agents heartbeat after 0.3 to 0.6 of it.',
    },
    max_json_field_size: {
      type: { kind: 'integer', min: 1024 },
      default: 65536,
      description: "Largest a node's driver_info, properties or extra, or a port's extra or local_link_connection, may be, in bytes of JSON; larger gets 400 and nothing is stored. instance_info (which may carry a config drive) is bounded by the 1 MiB request body limit instead.",
    },
  },
  conductor: {
    conductor_group: {
      type: { kind: 'string', pattern: /^[a-zA-Z0-9_.-]*$/, describe: 'letters, digits, _ . - only' },
      default: '',
      description: 'Conductor group this conductor serves (lower-cased); nodes of other groups are never placed here.',
    },
    rpc_address: {
      type: { kind: 'address' },
      default: '127.0.0.1:6386',
      description: 'Address (host:port) of this conductor\'s RPC endpoint, published in its conductor row; port 0 picks a free one.',
    },
    heartbeat_interval: {
      type: seconds(1),
      default: 10,
      description: 'Seconds between heartbeats written with the database clock.',
    },
    heartbeat_timeout: {
      type: seconds(2),
      default: 60,
      description: 'Seconds without a heartbeat (by the database clock) after which a conductor is dead.',
    },
    graceful_shutdown_timeout: {
      type: seconds(0),
      default: 60,
      description:
        'Seconds a stopping conductor waits for locked work to finish before releasing its locks; in dnsmasq files mode it also bounds the wait for new owners to write their DHCP entries before the stopping conductor retires its own (at least 5 s after its locks are released).',
    },
    sync_local_state_interval: {
      type: seconds(0),
      default: 180,
      description: 'Seconds between safety-net passes that re-check local boot state (0 disables; ring changes still trigger passes).',
    },
    sync_local_state_workers: {
      type: { kind: 'integer', min: 1, max: 256 },
      default: 8,
      description: 'Nodes whose boot state the reconciler prepares, takes over or cleans up at once.',
    },
    replicas: {
      type: { kind: 'integer', min: 1, max: 10 },
      default: 2,
      description: 'Conductors per node on the ring: the owner plus replicas that pre-cache its kernel and ramdisk.',
    },
    node_locked_retry_attempts: {
      type: { kind: 'integer', min: 1 },
      default: 3,
      description: 'Attempts to take a node lock held by another conductor before answering NodeLocked.',
    },
    node_locked_retry_interval: {
      type: seconds(0),
      default: 1,
      description: 'Seconds between attempts to take a node lock.',
    },
    hash_ring_mode: {
      type: { kind: 'enum', values: HASH_RING_MODES },
      default: 'balanced',
      description: "Ring placement: 'balanced' (ironring's) or 'tooz' (byte-for-byte Ironic's placements).",
    },
    hash_partition_exponent: {
      type: { kind: 'integer', min: 0, max: 16 },
      default: 5,
      description: "In 'tooz' mode, each conductor gets 2**exponent points on the ring, as in Ironic.",
    },
    // Nodes waiting for their agent (Ironic's names and defaults): failed once they waited too long.
    check_provision_state_interval: {
      type: seconds(0),
      default: 60,
      description: 'Seconds between checks of the nodes this conductor owns that wait for their agent (wait call-back, clean wait, inspect wait, rescue wait) against the timeouts below; 0 disables.',
    },
    deploy_callback_timeout: {
      type: seconds(0),
      default: 1800,
      description: "Seconds a node may wait in wait call-back for its agent (since it entered the state or the agent's last heartbeat) before the deploy fails; 0: for ever.",
    },
    clean_callback_timeout: {
      type: seconds(0),
      default: 1800,
      description: "Seconds a node may wait in clean wait (since it entered the state or the agent's last heartbeat) before the clean fails; 0: for ever.",
    },
    inspect_wait_timeout: {
      type: seconds(0),
      default: 1800,
      description: "Seconds a node may wait in inspect wait for its agent's inventory before the inspection fails (Ironic's [conductor] inspect_wait_timeout); 0: for ever.",
    },
    rescue_callback_timeout: {
      type: seconds(0),
      default: 1800,
      description: "Seconds a node may wait in rescue wait for its agent before the rescue fails; 0: for ever.",
    },
    // Power-state sync (Ironic's names and defaults): each conductor reads the BMCs of the nodes it owns.
    sync_power_state_interval: {
      type: seconds(0),
      default: 60,
      description: 'Seconds between power-state syncs of the nodes this conductor owns (BMC read vs. recorded power_state); 0 disables.',
    },
    force_power_state_during_sync: {
      type: { kind: 'boolean' },
      default: true,
      description: "On a mismatch, true: set the BMC back to the recorded power state; false: record the BMC's state.",
    },
    power_state_sync_max_retries: {
      type: { kind: 'integer', min: 0 },
      default: 3,
      description: "Failed or unsuccessful syncs of a node in a row before its BMC's state is recorded and it is put in maintenance with last_error.",
    },
    sync_power_state_workers: {
      type: { kind: 'integer', min: 1, max: 256 },
      default: 8,
      description: 'BMCs a power-state sync reads at once (a slow or dead BMC holds up only its worker).',
    },
    automated_clean: {
      type: { kind: 'boolean' },
      default: true,
      description:
        "Whether automated cleaning (after undeploy, and on provide) runs the clean steps the node's interfaces offer with a priority above 0, as Ironic's [conductor] automated_clean; false: the node goes to available with its disks as they were. A node's own automated_clean (API 1.47), when true or false, overrides it for that node.",
    },
    rescue_password_hash_algorithm: {
      type: { kind: 'enum', values: ['sha256', 'sha512'] },
      default: 'sha256',
      description:
        "The crypt hash a rescue password is kept as (Ironic's [conductor] rescue_password_hash_algorithm): the API hashes it on arrival, only the hash reaches the conductor and the node's agent, and it is dropped once the rescue user is set.",
    },
    file_url_allowed_paths: {
      type: { kind: 'string', pattern: /^(?!(?:.*[/,]\s*)?\.\.(?:[/,]|\s*$))[^\0]*$/, describe: 'comma-separated directories, no ".." segments' },
      default: 'images',
      path: 'data_dir',
      list: true,
      description:
        'Comma-separated directories file:// image URLs may name (symlinks resolved before the check); /dev, /sys, /proc, /boot, /etc and /run are refused whatever this says; empty disables file:// images (Ironic CVE-2024-44082 / OSSA-2025-001).',
    },
  },
  json_rpc: {
    auth_strategy: {
      type: { kind: 'enum', values: ['hmac', 'http_basic', 'noauth'] },
      default: 'hmac',
      description:
        "Authentication of conductor RPC (/v1/rpc/…): 'hmac' (requests signed with secret_file), 'http_basic' (http_basic_auth_user_file; callers use username and password) or 'noauth' (anyone who reaches rpc_address may change any node; logged as a warning).",
    },
    secret_file: {
      type: { kind: 'string' },
      default: 'rpc-secret',
      path: 'data_dir',
      description:
        "Shared secret signing RPC requests under 'hmac'; every API and conductor needs the same file. `ironring up`, and a conductor on a loopback rpc_address, create it (mode 0600) when missing; a conductor on any other address refuses to start without it.",
    },
    replay_window: {
      type: seconds(1),
      default: 300,
      description: "Seconds a signed RPC request stays valid either side of the conductor's clock; a request is accepted once.",
    },
    http_basic_auth_user_file: {
      type: { kind: 'string' },
      default: 'htpasswd-json-rpc',
      path: 'data_dir',
      description: "Apache htpasswd file (bcrypt, `htpasswd -B`) of RPC callers under 'http_basic', as Ironic's [json_rpc] option.",
    },
    username: {
      type: { kind: 'string' },
      default: '',
      description: "User the API sends to conductors under 'http_basic'.",
    },
    password: {
      type: { kind: 'string' },
      default: '',
      description: "Password the API sends to conductors under 'http_basic'.",
      secret: true,
    },
    use_ssl: {
      type: { kind: 'boolean' },
      default: false,
      description: 'Serve RPC over TLS with cert_file and key_file (the conductor publishes an https:// rpc_url; callers follow it).',
    },
    cert_file: {
      type: { kind: 'string' },
      default: 'rpc-tls.crt',
      path: 'data_dir',
      description: "PEM certificate (chain) of this conductor's RPC endpoint, when use_ssl is on.",
    },
    key_file: {
      type: { kind: 'string' },
      default: 'rpc-tls.key',
      path: 'data_dir',
      description: 'PEM private key of cert_file, when use_ssl is on.',
    },
    cafile: {
      type: { kind: 'string' },
      default: 'rpc-ca.crt',
      path: 'data_dir',
      description: "PEM CA certificates an API trusts for https:// conductors; when the file does not exist, the system's CAs.",
    },
  },
  api_database: {
    url: {
      type: { kind: 'string' },
      default: '',
      description: "The compute tier's API database (cell, host and instance mappings), a URL like [database] url; empty means sqlite api.db under data_dir.",
      secret: true,
    },
  },
  baremetal: {
    endpoint: {
      type: { kind: 'string' },
      default: '',
      description: 'Base URL of the bare-metal REST API the compute tier talks to; empty means http://<[api] address>.',
    },
    username: {
      type: { kind: 'string' },
      default: '',
      description: 'User for http_basic authentication against the bare-metal API (empty: none).',
    },
    password: {
      type: { kind: 'string' },
      default: '',
      description: 'Password for http_basic authentication against the bare-metal API.',
      secret: true,
    },
  },
  compute: {
    cell: {
      type: { kind: 'string', pattern: /^[A-Za-z0-9_.-]*$/, describe: 'letters, digits, _ . - only' },
      default: 'cell1',
      description: 'Name (or uuid) of the cell this compute service belongs to.',
    },
    report_interval: {
      type: seconds(1),
      default: 10,
      description: "Seconds between a compute service's heartbeats (services.last_seen_up, database clock).",
    },
    service_down_time: {
      type: seconds(2),
      default: 60,
      description: 'Seconds without a heartbeat after which a compute service is dead and its nodes move.',
    },
    update_resources_interval: {
      type: seconds(1),
      default: 10,
      description: 'Seconds between passes that list nodes through the bare-metal API and update compute_nodes.',
    },
  },
  scheduler: {
    discover_hosts_interval: {
      type: { kind: 'integer', min: -1 },
      default: 60,
      description: 'Seconds between periodic host discoveries on the leading scheduler (-1 or 0 disables).',
    },
    discover_hosts_by_service: {
      type: { kind: 'boolean' },
      default: true,
      description: 'Periodic discovery maps every compute service, even one with no nodes yet.',
    },
  },
  ...BOOT_SECTIONS,
} as const satisfies Record<string, Record<string, OptionSpec>>;

export type Sections = typeof OPTIONS;
export type SectionName = keyof Sections;

type ValueOf<S extends OptionSpec> = S['type'] extends { kind: 'integer' | 'number' }
  ? number
  : S['type'] extends { kind: 'boolean' }
    ? boolean
    : S['type'] extends { kind: 'enum'; values: readonly (infer V)[] }
      ? V
      : string;

/** The validated, effective configuration; every option has a value. */
export type Config = {
  -readonly [S in SectionName]: { -readonly [K in keyof Sections[S]]: Sections[S][K] extends OptionSpec ? ValueOf<Sections[S][K]> : never };
};

/** All options as a flat list, in table order. */
export function listOptions(): Array<{ section: SectionName; key: string; spec: OptionSpec }> {
  const out: Array<{ section: SectionName; key: string; spec: OptionSpec }> = [];
  for (const section of Object.keys(OPTIONS) as SectionName[]) {
    for (const [key, spec] of Object.entries(OPTIONS[section])) out.push({ section, key, spec: spec as OptionSpec });
  }
  return out;
}

/** Human words for a type, used in errors and in `config defaults`. */
export function describeType(type: OptionType): string {
  switch (type.kind) {
    case 'string':
      return type.describe ? `a string (${type.describe})` : 'a string';
    case 'integer': {
      const bounds = [type.min !== undefined ? `≥ ${type.min}` : '', type.max !== undefined ? `≤ ${type.max}` : '']
        .filter(Boolean)
        .join(' and ');
      return bounds ? `an integer ${bounds}` : 'an integer';
    }
    case 'number':
      return type.min !== undefined ? `a number ≥ ${type.min}` : 'a number';
    case 'boolean':
      return 'a boolean (true or false)';
    case 'enum':
      return `one of ${type.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'address':
      return 'an address host:port (port 0–65535)';
  }
}
