/**
 * The conductor's RPC endpoint: what the API asks of the conductor that owns a node. JSON over HTTP
 * at the `rpc_url` the conductor publishes; errors travel in the API's error format with their
 * status, so the API passes them on unchanged (NodeLocked → 409, InvalidStateTransition → 400 …).
 * Every route needs the RPC credentials (src/auth/rpc-auth.ts), and no answer carries a node's
 * JSON fields: BMC passwords are write-only outside the conductor that uses them. An API in the
 * same process (`ironring up`) calls the same actions directly (`callRpc`), without HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { isAgentTokenHash } from '../agent/agent-token.js';
import { parseInspectionData } from '../agent/inspection-data.js';
import { CRYPT_HASH } from '../agent/rescue-user.js';
import { MAX_HEARTBEAT_STRING_LENGTH, parseCallbackUrl } from '../agent/protocol.js';
import { InvalidParameter, NotFound } from '../common/errors.js';
import { parseCleanSteps } from '../drivers/index.js';
import { parsePatch } from '../nodes/node-patch.js';
import type { NodeRow } from '../nodes/node-store.js';
import { isProvisionAction } from '../nodes/states.js';
import { checkDeploySteps } from '../nodes/deploy-template-fields.js';
import type { NodeOperations } from './node-operations.js';
import { NODE_EXTRA_ACTIONS } from './node-extras-rpc.js';

/**
 * The fields of a node an RPC answer may carry: its identity and states. An allow-list, not a
 * mask — `driver_info`, `instance_info`, `driver_internal_info` and any column added later stay out
 * (the API reads the row itself and masks what it shows).
 */
export const RPC_NODE_FIELDS = [
  'uuid', 'name', 'driver', 'conductor_group', 'provision_state', 'target_provision_state', 'power_state',
  'target_power_state', 'maintenance', 'reservation', 'last_error', 'updated_at',
] as const satisfies ReadonlyArray<keyof NodeRow>;

/** A node as an RPC answer shows it: `RPC_NODE_FIELDS` only. */
export function rpcNodeView(node: NodeRow): Pick<NodeRow, (typeof RPC_NODE_FIELDS)[number]> {
  return Object.fromEntries(RPC_NODE_FIELDS.map((k) => [k, node[k]])) as Pick<NodeRow, (typeof RPC_NODE_FIELDS)[number]>;
}

/** The HTTP methods RPC actions use. */
export type RpcMethod = 'GET' | 'POST';

type Handler = (ops: NodeOperations, uuid: string, body: unknown) => Promise<unknown>;

/** The fields of a request body, or none when there is no body. */
function fields<T extends object>(body: unknown): Partial<T> {
  return (body ?? {}) as Partial<T>;
}

/**
 * Every RPC action, by `<method> <action>`: the one place that checks an action's input and runs
 * it. The HTTP endpoint (`rpcRoutes`) and an in-process caller (`callRpc`, `ironring up`'s API
 * calling its own conductor) both go through it, so the two paths cannot drift apart.
 */
const ACTIONS: Readonly<Record<string, Handler>> = {
  ...NODE_EXTRA_ACTIONS,
  // The patch alone, or `{patch, reset_interfaces}` when a new driver resets the other interfaces (API 1.45).
  'POST update': async (ops, uuid, body) => {
    if (Array.isArray(body)) return { node: rpcNodeView(await ops.update(uuid, parsePatch(body))) };
    const { patch, reset_interfaces: reset } = fields<{ patch: unknown; reset_interfaces: unknown }>(body);
    if (reset !== undefined && typeof reset !== 'boolean') throw new InvalidParameter('reset_interfaces: expected true or false');
    return { node: rpcNodeView(await ops.update(uuid, parsePatch(patch), reset === true)) };
  },

  'POST destroy': async (ops, uuid) => {
    await ops.destroy(uuid);
    return { ok: true };
  },

  'POST provision': async (ops, uuid, body) => {
    const { target, configdrive, clean_steps: cleanSteps, rescue_password_hash: rescueHash } = fields<{ target: unknown; configdrive: unknown; clean_steps: unknown; rescue_password_hash: unknown }>(body);
    const { disable_ramdisk: disableRamdisk } = fields<{ disable_ramdisk: unknown }>(body);
    const { deploy_steps: deploySteps } = fields<{ deploy_steps: unknown }>(body);
    if (disableRamdisk !== undefined && typeof disableRamdisk !== 'boolean') throw new InvalidParameter('disable_ramdisk: expected true or false');
    if (rescueHash !== undefined && (typeof rescueHash !== 'string' || !CRYPT_HASH.test(rescueHash))) throw new InvalidParameter('rescue_password_hash: expected a SHA-256 or SHA-512 crypt hash');
    if (!isProvisionAction(target)) throw new InvalidParameter(`target: ${JSON.stringify(target)} is not a provision action`);
    await ops.provision(uuid, target, {
      ...(configdrive !== undefined ? { configdrive } : {}),
      ...(rescueHash !== undefined ? { rescuePasswordHash: rescueHash as string } : {}),
      ...(deploySteps !== undefined ? { deploySteps: checkDeploySteps(deploySteps, 'deploy_steps') } : {}),
      ...(cleanSteps !== undefined ? { cleanSteps: parseCleanSteps(cleanSteps) } : {}),
      ...(disableRamdisk === true ? { disableRamdisk: true } : {}),
    });
    return { ok: true };
  },

  'POST power': async (ops, uuid, body) => {
    const { target, timeout } = fields<{ target: unknown; timeout: unknown }>(body);
    if (typeof target !== 'string') throw new InvalidParameter('target: required, a power action');
    if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1)) throw new InvalidParameter('timeout: expected a positive integer (seconds)');
    await ops.power(uuid, target, timeout as number | undefined);
    return { ok: true };
  },

  'POST boot_device': async (ops, uuid, body) => {
    const { boot_device: device, persistent } = fields<{ boot_device: unknown; persistent: unknown }>(body);
    if (typeof device !== 'string') throw new InvalidParameter('boot_device: required');
    if (persistent !== undefined && typeof persistent !== 'boolean') throw new InvalidParameter('persistent: expected true or false');
    await ops.setBootDevice(uuid, device, persistent ?? false);
    return { ok: true };
  },

  'GET boot_device': (ops, uuid) => ops.getBootDevice(uuid),

  'GET console': (ops, uuid) => ops.getConsole(uuid),

  'POST console': async (ops, uuid, body) => {
    const { enabled } = fields<{ enabled: unknown }>(body);
    if (typeof enabled !== 'boolean') throw new InvalidParameter('enabled: expected true or false');
    await ops.setConsoleMode(uuid, enabled);
    return { ok: true };
  },

  'POST boot_mode': async (ops, uuid, body) => {
    const { target } = fields<{ target: unknown }>(body);
    if (target !== 'bios' && target !== 'uefi') throw new InvalidParameter(`target: ${JSON.stringify(target)} is not a boot mode; use bios or uefi`);
    await ops.setBootMode(uuid, target);
    return { ok: true };
  },

  'POST secure_boot': async (ops, uuid, body) => {
    const { target } = fields<{ target: unknown }>(body);
    if (typeof target !== 'boolean') throw new InvalidParameter('target: expected true or false');
    await ops.setSecureBoot(uuid, target);
    return { ok: true };
  },

  'POST raid': async (ops, uuid, body) => {
    const { target_raid_config: config } = fields<{ target_raid_config: unknown }>(body);
    if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new InvalidParameter('target_raid_config: expected a JSON object');
    await ops.setTargetRaidConfig(uuid, config as Record<string, unknown>);
    return { ok: true };
  },

  // The agent's lookup and heartbeat: the API sends tokens as their digests (agent-session.ts).
  'POST agent_token': async (ops, uuid, body) => {
    const { token_hash: tokenHash } = fields<{ token_hash: unknown }>(body);
    if (!isAgentTokenHash(tokenHash)) throw new InvalidParameter('token_hash: expected a SHA-256 digest (64 hex digits)');
    return ops.agentToken(uuid, tokenHash);
  },

  'POST heartbeat': async (ops, uuid, body) => {
    const { token_hash: tokenHash, callback_url: callbackUrl, agent_version: agentVersion } = fields<{ token_hash: unknown; callback_url: unknown; agent_version: unknown }>(body);
    if (!isAgentTokenHash(tokenHash)) throw new InvalidParameter('token_hash: expected a SHA-256 digest (64 hex digits)');
    if (typeof agentVersion !== 'string' || agentVersion.length > MAX_HEARTBEAT_STRING_LENGTH) throw new InvalidParameter(`agent_version: expected a string of at most ${MAX_HEARTBEAT_STRING_LENGTH} characters`);
    await ops.heartbeat(uuid, { tokenHash, callbackUrl: parseCallbackUrl(callbackUrl), agentVersion });
    return { ok: true };
  },

  // The agent's inventory (continue_inspection): already checked by the API; checked again here,
  // since this endpoint is reachable by anything holding the RPC credentials.
  'POST continue_inspection': async (ops, uuid, body) => {
    const { token_hash: tokenHash, data } = fields<{ token_hash: unknown; data: unknown }>(body);
    if (tokenHash !== null && !isAgentTokenHash(tokenHash)) throw new InvalidParameter('token_hash: expected a SHA-256 digest (64 hex digits) or null');
    await ops.continueInspection(uuid, tokenHash, parseInspectionData(data));
    return { ok: true };
  },

  'POST maintenance': async (ops, uuid, body) => {
    const { maintenance, reason } = fields<{ maintenance: unknown; reason: unknown }>(body);
    if (typeof maintenance !== 'boolean') throw new InvalidParameter('maintenance: expected true or false');
    if (reason !== undefined && reason !== null && typeof reason !== 'string') throw new InvalidParameter('reason: expected a string');
    await ops.setMaintenance(uuid, maintenance, (reason as string | null | undefined) ?? null);
    return { ok: true };
  },
};

/**
 * Runs RPC `action` on node `uuid` in this process, exactly as the endpoint would, and resolves to
 * its answer; throws the action's own errors (each with its HTTP status). Throws `NotFound` for an
 * action the endpoint does not have.
 */
export function callRpc(ops: NodeOperations, method: RpcMethod, action: string, uuid: string, body?: unknown): Promise<unknown> {
  const handler = ACTIONS[`${method} ${action}`];
  if (!handler) return Promise.reject(new NotFound(`no RPC action ${method} ${action}`));
  return handler(ops, uuid, body);
}

export function rpcRoutes(app: FastifyInstance, ops: NodeOperations): void {
  for (const [key, handler] of Object.entries(ACTIONS)) {
    const [method, action] = key.split(' ') as [RpcMethod, string];
    app.route<{ Params: { uuid: string }; Body: unknown }>({ method, url: `/v1/rpc/nodes/:uuid/${action}`, handler: (request) => handler(ops, request.params.uuid, request.body) });
  }
}
