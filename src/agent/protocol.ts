/**
 * The agent protocol, as Ironic serves it to ironic-python-agent (IPA) and as IPA serves its own
 * command API to Ironic's conductor — one set of shapes for both sides of ironring: the API and
 * the conductor here, `ironring agent` (which runs in the deploy ramdisk).
 *
 * Two directions:
 * - agent → API: `GET /v1/lookup?addresses=<mac>,…&node_uuid=…` answers the node the agent runs on
 *   (a restricted view) and its configuration, with the node's agent token the first time;
 *   `POST /v1/heartbeat/{node}` says where the agent listens, carrying that token.
 * - conductor → agent: `POST {callback_url}/v1/commands/?wait=…&agent_token=…` with
 *   `{name, params}` runs a command (`standby.prepare_image` …); `GET …/v1/commands/` lists the
 *   results, `GET …/v1/commands/{id}` gives one, `GET …/v1/status` says the agent is up.
 *
 * Everything that arrives from the other side is checked here (`parse…`), with bounded sizes and
 * messages naming the field, then trusted as the types below. Pure: no I/O.
 */
import { InvalidParameter } from '../common/errors.js';
import { isForbiddenKey, stringProblem } from '../common/json-safety.js';
import { isUuid } from '../common/uuid.js';

/** An API microversion as [major, minor]. */
export type ProtocolVersion = readonly [number, number];

/**
 * The microversions at which Ironic's API grew the agent endpoints and their fields. A request
 * below a field's version that uses the field is refused (400), as Ironic's API refuses it.
 */
export const AGENT_API_VERSIONS = {
  /** `/v1/lookup` and `/v1/heartbeat/{node}` exist (older requests: 404). */
  endpoints: [1, 22],
  /** `agent_version` in a heartbeat. */
  agentVersion: [1, 36],
  /** Ironic hands out agent tokens at lookup from here (see docs/deploy.md for ironring's rule). */
  agentToken: [1, 62],
  /** `agent_verify_ca` in a heartbeat. */
  agentVerifyCa: [1, 68],
  /** `agent_status` and `agent_status_message` in a heartbeat. */
  agentStatus: [1, 72],
} as const satisfies Record<string, ProtocolVersion>;

// ---- lookup ---------------------------------------------------------------------------------

/** Most addresses one lookup may name: a server's NICs, with room; more is refused, not truncated. */
export const MAX_LOOKUP_ADDRESSES = 64;
/**
 * Longest single entry of `addresses`. IPA sends every interface's hardware address, and an
 * InfiniBand one is 20 bytes (59 characters as `xx:` pairs); entries that are no Ethernet MAC are
 * ignored, as Ironic ignores them, but none may be longer than this.
 */
export const MAX_LOOKUP_ADDRESS_LENGTH = 64;

/** An Ethernet MAC as ports store them (`src/nodes/port-store.ts` accepts the same spellings). */
const MAC = /^([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})$/i;

/** A lookup as the API received it, checked. */
export interface LookupQuery {
  /** The valid Ethernet MACs among `addresses`, lower case with colons, duplicates dropped. */
  addresses: string[];
  /** How many entries of `addresses` were not an Ethernet MAC (ignored, as Ironic does). */
  ignored: number;
  /** `node_uuid` in lower case, when given. */
  nodeUuid: string | null;
}

/**
 * Checks a lookup's query. `addresses` is a comma-separated list (or the parameter repeated);
 * entries that are no Ethernet MAC are ignored as by Ironic, but too many entries or an entry too
 * long is refused (400 naming `addresses`): the route answers callers without credentials. Neither
 * a valid MAC nor `node_uuid` → 400, as Ironic's `IncompleteLookup`.
 */
export function parseLookupQuery(query: Readonly<Record<string, unknown>>): LookupQuery {
  const raw = query.addresses;
  const parts: string[] = [];
  for (const value of raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]) {
    if (typeof value !== 'string') throw new InvalidParameter('addresses: expected a comma-separated list of MAC addresses');
    for (const part of value.split(',')) if (part.trim() !== '') parts.push(part.trim());
    if (parts.length > MAX_LOOKUP_ADDRESSES) throw new InvalidParameter(`addresses: at most ${MAX_LOOKUP_ADDRESSES} addresses may be looked up at once`);
  }
  const addresses = new Set<string>();
  let ignored = 0;
  for (const part of parts) {
    if (part.length > MAX_LOOKUP_ADDRESS_LENGTH) throw new InvalidParameter(`addresses: an entry is longer than ${MAX_LOOKUP_ADDRESS_LENGTH} characters`);
    const mac = MAC.exec(part);
    if (mac) addresses.add(mac.slice(1, 7).join(':').toLowerCase());
    else ignored++;
  }
  let nodeUuid: string | null = null;
  if (query.node_uuid !== undefined) {
    if (!isUuid(query.node_uuid)) throw new InvalidParameter('node_uuid: expected a UUID');
    nodeUuid = query.node_uuid.toLowerCase();
  }
  if (addresses.size === 0 && nodeUuid === null) {
    throw new InvalidParameter('addresses: at least one valid MAC address or node_uuid is required for lookup');
  }
  return { addresses: [...addresses], ignored, nodeUuid };
}

/**
 * The node as a lookup answers it: the fields Ironic returns to agents (its `_LOOKUP_RETURN_FIELDS`)
 * and links; `instance_info` with its secrets masked, as every node view masks them.
 */
export interface LookupNode {
  uuid: string;
  properties: Record<string, unknown>;
  instance_info: Record<string, unknown>;
  driver_internal_info: Record<string, unknown>;
  links: Array<{ href: string; rel: string }>;
}

/**
 * What the agent is told at lookup. `agent_token` is the node's token the first time it is asked
 * for in a state that expects an agent; afterwards `******` (Ironic's answer once a token exists),
 * which no heartbeat can use.
 */
export interface AgentConfig {
  /** Seconds within which the agent must heartbeat again (IPA heartbeats after 0.3–0.6 of it). */
  heartbeat_timeout: number;
  agent_token: string | null;
  /** Always true: ironring refuses a heartbeat without the token. */
  agent_token_required: true;
  /** Whether the agent may verify images against an MD5 `image_checksum` (ironring: no). */
  agent_md5_checksum_enable: boolean;
}

/** The answer to `GET /v1/lookup`. */
export interface LookupAnswer {
  node: LookupNode;
  config: AgentConfig;
}

/** The refusal of every lookup that finds no node expecting an agent: one text, nothing disclosed. */
export const LOOKUP_NOT_FOUND = 'no node that expects an agent matches the lookup';

/** What a second lookup gets for `agent_token`: the token exists and is never shown again. */
export const TOKEN_ALREADY_ISSUED = '******';

// ---- heartbeat ------------------------------------------------------------------------------

/** Largest heartbeat body accepted, in bytes: its fields are short strings (a CA would not fit). */
export const HEARTBEAT_BODY_LIMIT = 16 * 1024;
/** Longest `callback_url`. */
export const MAX_CALLBACK_URL_LENGTH = 2048;
/** Longest `agent_version`, `agent_status_message` … — any other string field of a heartbeat. */
export const MAX_HEARTBEAT_STRING_LENGTH = 1024;
/** Longest `agent_token`: ironring's are 43 characters; Ironic's documentation speaks of 128. */
export const MAX_AGENT_TOKEN_LENGTH = 256;

/** The valid `agent_status` values (Ironic's, sent by the anaconda ramdisk). */
export const AGENT_STATUSES = ['start', 'end', 'error'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** A heartbeat body, checked. */
export interface Heartbeat {
  /** Where the agent's command API listens: `http(s)://host:port`, no credentials. */
  callback_url: string;
  /** The agent's version; Ironic assumes 3.0.0 when an agent sends none. */
  agent_version: string | null;
  /** Required: a heartbeat without it is refused before any node is read. */
  agent_token: string;
  agent_verify_ca: string | null;
  agent_status: AgentStatus | null;
  agent_status_message: string | null;
}

/** What Ironic records for an agent that sends no `agent_version` (the last release without it). */
export const DEFAULT_AGENT_VERSION = '3.0.0';

const HEARTBEAT_FIELDS = ['callback_url', 'agent_version', 'agent_token', 'agent_verify_ca', 'agent_status', 'agent_status_message'] as const;

/**
 * Checks a `callback_url`: http or https, a host, no user name or password (an agent's URL is
 * recorded on the node and shown to operators), at most `MAX_CALLBACK_URL_LENGTH` characters.
 * Returns the URL as parsed and serialised again. Throws `InvalidParameter` naming the field.
 */
export function parseCallbackUrl(value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new InvalidParameter('callback_url: required, the http(s) URL of the agent\'s API');
  if (value.length > MAX_CALLBACK_URL_LENGTH) throw new InvalidParameter(`callback_url: longer than ${MAX_CALLBACK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidParameter('callback_url: not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidParameter(`callback_url: expected an http:// or https:// URL, got ${url.protocol}//`);
  if (url.hostname === '') throw new InvalidParameter('callback_url: the URL names no host');
  if (url.username !== '' || url.password !== '') throw new InvalidParameter('callback_url: must not carry a user name or password');
  if (url.search !== '' || url.hash !== '') throw new InvalidParameter('callback_url: must not carry a query or fragment');
  return url.href.replace(/\/$/, '');
}

function optionalString(body: Readonly<Record<string, unknown>>, field: string, max: number): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new InvalidParameter(`${field}: expected a string`);
  if (value.length > max) throw new InvalidParameter(`${field}: longer than ${max} characters`);
  const problem = stringProblem(value);
  if (problem !== null) throw new InvalidParameter(`${field}: ${problem}`);
  return value;
}

const atLeast = (asked: ProtocolVersion, since: ProtocolVersion): boolean => asked[0] > since[0] || (asked[0] === since[0] && asked[1] >= since[1]);
const shownVersion = (v: ProtocolVersion): string => `${v[0]}.${v[1]}`;

/**
 * Checks a heartbeat body sent at API version `version`: the fields Ironic knows, each as Ironic
 * gates it by version (a field newer than the request → 400 naming it and the version it needs),
 * bounded in length. An unknown field is refused, as Ironic's argument validation refuses it.
 * A missing `agent_token` is refused here, before any node is read (Ironic's API does the same).
 * `served`, the highest version the API serves, lets a refusal say that no version can send it.
 */
export function parseHeartbeat(body: unknown, version: ProtocolVersion, served?: ProtocolVersion): Heartbeat {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object');
  const fields = body as Readonly<Record<string, unknown>>;
  for (const key of Object.keys(fields)) {
    if (isForbiddenKey(key) || !(HEARTBEAT_FIELDS as readonly string[]).includes(key)) {
      throw new InvalidParameter(`${JSON.stringify(key.slice(0, 64))}: not a heartbeat field; expected ${HEARTBEAT_FIELDS.join(', ')}`);
    }
  }
  const need = (field: string, since: ProtocolVersion): void => {
    if (Object.hasOwn(fields, field) && fields[field] !== null && !atLeast(version, since)) {
      const beyond = served !== undefined && !atLeast(served, since) ? `, and this API serves up to ${shownVersion(served)}` : '';
      throw new InvalidParameter(`${field}: not recognised at API version ${shownVersion(version)}; it needs ${shownVersion(since)} or later${beyond}`);
    }
  };
  need('agent_version', AGENT_API_VERSIONS.agentVersion);
  need('agent_verify_ca', AGENT_API_VERSIONS.agentVerifyCa);
  need('agent_status', AGENT_API_VERSIONS.agentStatus);
  need('agent_status_message', AGENT_API_VERSIONS.agentStatus);
  const callbackUrl = parseCallbackUrl(fields.callback_url);
  const agentToken = optionalString(fields, 'agent_token', MAX_AGENT_TOKEN_LENGTH);
  if (agentToken === null || agentToken === '') throw new InvalidParameter('agent_token: required for heartbeat processing (the token the node\'s lookup answered)');
  const status = optionalString(fields, 'agent_status', MAX_HEARTBEAT_STRING_LENGTH);
  if (status !== null && !(AGENT_STATUSES as readonly string[]).includes(status)) {
    throw new InvalidParameter(`agent_status: ${JSON.stringify(status.slice(0, 64))} is not valid; valid states are ${AGENT_STATUSES.join(', ')}`);
  }
  return {
    callback_url: callbackUrl,
    agent_version: optionalString(fields, 'agent_version', MAX_HEARTBEAT_STRING_LENGTH),
    agent_token: agentToken,
    agent_verify_ca: optionalString(fields, 'agent_verify_ca', MAX_HEARTBEAT_STRING_LENGTH),
    agent_status: status as AgentStatus | null,
    agent_status_message: optionalString(fields, 'agent_status_message', MAX_HEARTBEAT_STRING_LENGTH),
  };
}

// ---- IPA's command API ----------------------------------------------------------------------

/**
 * The commands ironring's `direct` deploy (and its cleaning, inspection and rescue) sends to an agent, as IPA names them
 * (`<extension>.<command>`). The conductor sends only these; `ironring agent` serves them.
 */
export const AGENT_COMMANDS = [
  'standby.prepare_image',
  'standby.get_partition_uuids',
  'standby.sync',
  'standby.power_off',
  'image.install_bootloader',
  'log.collect_system_logs',
  'deploy.get_deploy_steps',
  'deploy.execute_deploy_step',
  'clean.get_clean_steps',
  'clean.execute_clean_step',
  'rescue.finalize_rescue',
] as const;
export type AgentCommandName = (typeof AGENT_COMMANDS)[number];

/** The body of `POST {callback_url}/v1/commands/`. */
export interface AgentCommandRequest {
  name: string;
  params: Record<string, unknown>;
}

/** A command's state, as IPA reports it. */
export const COMMAND_STATUSES = ['RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

/** An error as IPA serialises it in `command_error` (its `RESTError`). */
export interface AgentCommandError {
  type: string;
  code: number;
  message: string;
  details: string;
}

/** A command and how it went, as IPA answers `POST`/`GET …/v1/commands/…`. */
export interface AgentCommandResult {
  id: string;
  command_name: string;
  command_params: Record<string, unknown>;
  command_status: CommandStatus;
  command_error: AgentCommandError | null;
  command_result: Record<string, unknown> | null;
}

/** The answer to `GET {callback_url}/v1/status`. */
export interface AgentStatusAnswer {
  /** Seconds since the epoch, when the agent started. */
  started_at: number;
  version: string;
}

/** The paths of IPA's command API, relative to the agent's `callback_url`. */
export const AGENT_PATHS = {
  status: '/v1/status',
  commands: '/v1/commands/',
  command: (id: string) => `/v1/commands/${encodeURIComponent(id)}`,
} as const;

/** Largest answer of an agent the conductor reads, in bytes (a command list with logs fits). */
export const MAX_AGENT_ANSWER_BYTES = 4 * 1024 * 1024;
/** Most command results one `GET …/v1/commands/` may list. */
export const MAX_AGENT_COMMANDS = 1000;
const MAX_COMMAND_STRING = 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function boundedString(value: unknown, where: string, max = MAX_COMMAND_STRING): string {
  if (typeof value !== 'string') throw new InvalidParameter(`${where}: expected a string`);
  if (value.length > max) throw new InvalidParameter(`${where}: longer than ${max} characters`);
  return value;
}

/**
 * Checks a command request as an agent receives it: `name` a `<extension>.<command>` string,
 * `params` an object (IPA refuses anything else with 400 "Missing or invalid name or params").
 */
export function parseCommandRequest(body: unknown): AgentCommandRequest {
  if (!isObject(body)) throw new InvalidParameter('request body: expected a JSON object with name and params');
  const name = boundedString(body.name, 'name', 128);
  if (!/^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$/.test(name)) throw new InvalidParameter(`name: ${JSON.stringify(name)} is not <extension>.<command>`);
  if (!isObject(body.params)) throw new InvalidParameter('params: expected a JSON object');
  return { name, params: body.params };
}

/**
 * Checks one command result as the conductor receives it from an agent; `where` names it in
 * errors (`command result`, `commands[3]`). Only the known fields are kept, so no other key of
 * the agent's answer travels on.
 */
export function parseCommandResult(value: unknown, where = 'command result'): AgentCommandResult {
  if (!isObject(value)) throw new InvalidParameter(`${where}: expected a JSON object`);
  const status = boundedString(value.command_status, `${where}.command_status`, 32);
  if (!(COMMAND_STATUSES as readonly string[]).includes(status)) {
    throw new InvalidParameter(`${where}.command_status: ${JSON.stringify(status)} is not one of ${COMMAND_STATUSES.join(', ')}`);
  }
  const params = value.command_params ?? {};
  if (!isObject(params)) throw new InvalidParameter(`${where}.command_params: expected a JSON object`);
  const result = value.command_result ?? null;
  if (result !== null && !isObject(result)) throw new InvalidParameter(`${where}.command_result: expected a JSON object or null`);
  return {
    id: boundedString(value.id, `${where}.id`, 128),
    command_name: boundedString(value.command_name, `${where}.command_name`, 128),
    command_params: params,
    command_status: status as CommandStatus,
    command_error: parseCommandError(value.command_error ?? null, `${where}.command_error`),
    command_result: result,
  };
}

function parseCommandError(value: unknown, where: string): AgentCommandError | null {
  if (value === null) return null;
  // Older agents and some extensions put a bare string here.
  if (typeof value === 'string') return { type: 'CommandExecutionError', code: 500, message: boundedString(value, where, 64 * 1024), details: '' };
  if (!isObject(value)) throw new InvalidParameter(`${where}: expected a JSON object, a string or null`);
  const code = value.code ?? 500;
  if (typeof code !== 'number' || !Number.isInteger(code)) throw new InvalidParameter(`${where}.code: expected an integer`);
  return {
    type: boundedString(value.type ?? 'Error', `${where}.type`, 128),
    code,
    message: boundedString(value.message ?? '', `${where}.message`, 64 * 1024),
    details: boundedString(value.details ?? '', `${where}.details`, 64 * 1024),
  };
}

/** Checks the answer to `GET …/v1/commands/`: `{commands: [...]}`, at most `MAX_AGENT_COMMANDS`. */
export function parseCommandList(value: unknown): AgentCommandResult[] {
  if (!isObject(value) || !Array.isArray(value.commands)) throw new InvalidParameter('command list: expected {"commands": [...]}');
  if (value.commands.length > MAX_AGENT_COMMANDS) throw new InvalidParameter(`command list: more than ${MAX_AGENT_COMMANDS} commands`);
  return value.commands.map((c, i) => parseCommandResult(c, `commands[${i}]`));
}

/** Checks the answer to `GET …/v1/status`. */
export function parseAgentStatus(value: unknown): AgentStatusAnswer {
  if (!isObject(value)) throw new InvalidParameter('agent status: expected a JSON object');
  if (typeof value.started_at !== 'number' || !Number.isFinite(value.started_at)) throw new InvalidParameter('agent status.started_at: expected a number of seconds');
  return { started_at: value.started_at, version: boundedString(value.version, 'agent status.version', 128) };
}
