/**
 * The conductor's RPC endpoint: what the API asks of the conductor that owns a node. JSON over HTTP
 * at the `rpc_url` the conductor publishes; errors travel in the API's error format with their
 * status, so the API passes them on unchanged (NodeLocked → 409, InvalidStateTransition → 400 …).
 * Every route needs the RPC credentials (src/auth/rpc-auth.ts), and no answer carries a node's
 * JSON fields: BMC passwords are write-only outside the conductor that uses them.
 */
import type { FastifyInstance } from 'fastify';
import { InvalidParameter } from '../common/errors.js';
import { parseCleanSteps } from '../drivers/index.js';
import { parsePatch } from '../nodes/node-patch.js';
import type { NodeRow } from '../nodes/node-store.js';
import { isProvisionAction } from '../nodes/states.js';
import type { NodeOperations } from './node-operations.js';

type Params = { Params: { uuid: string } };

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

export function rpcRoutes(app: FastifyInstance, ops: NodeOperations): void {
  app.post<Params & { Body: unknown }>('/v1/rpc/nodes/:uuid/update', async (request) => ({ node: rpcNodeView(await ops.update(request.params.uuid, parsePatch(request.body))) }));

  app.post<Params>('/v1/rpc/nodes/:uuid/destroy', async (request) => {
    await ops.destroy(request.params.uuid);
    return { ok: true };
  });

  app.post<Params & { Body: { target?: unknown; configdrive?: unknown; clean_steps?: unknown } }>('/v1/rpc/nodes/:uuid/provision', async (request) => {
    const { target, configdrive, clean_steps: cleanSteps } = request.body ?? {};
    if (!isProvisionAction(target)) throw new InvalidParameter(`target: ${JSON.stringify(target)} is not a provision action`);
    await ops.provision(request.params.uuid, target, {
      ...(configdrive !== undefined ? { configdrive } : {}),
      ...(cleanSteps !== undefined ? { cleanSteps: parseCleanSteps(cleanSteps) } : {}),
    });
    return { ok: true };
  });

  app.post<Params & { Body: { target?: unknown; timeout?: unknown } }>('/v1/rpc/nodes/:uuid/power', async (request) => {
    const { target, timeout } = request.body ?? {};
    if (typeof target !== 'string') throw new InvalidParameter('target: required, a power action');
    if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1)) throw new InvalidParameter('timeout: expected a positive integer (seconds)');
    await ops.power(request.params.uuid, target, timeout as number | undefined);
    return { ok: true };
  });

  app.post<Params & { Body: { boot_device?: unknown; persistent?: unknown } }>('/v1/rpc/nodes/:uuid/boot_device', async (request) => {
    const { boot_device: device, persistent } = request.body ?? {};
    if (typeof device !== 'string') throw new InvalidParameter('boot_device: required');
    if (persistent !== undefined && typeof persistent !== 'boolean') throw new InvalidParameter('persistent: expected true or false');
    await ops.setBootDevice(request.params.uuid, device, persistent ?? false);
    return { ok: true };
  });

  app.get<Params>('/v1/rpc/nodes/:uuid/boot_device', (request) => ops.getBootDevice(request.params.uuid));

  app.post<Params & { Body: { maintenance?: unknown; reason?: unknown } }>('/v1/rpc/nodes/:uuid/maintenance', async (request) => {
    const { maintenance, reason } = request.body ?? {};
    if (typeof maintenance !== 'boolean') throw new InvalidParameter('maintenance: expected true or false');
    if (reason !== undefined && reason !== null && typeof reason !== 'string') throw new InvalidParameter('reason: expected a string');
    await ops.setMaintenance(request.params.uuid, maintenance, (reason as string | null | undefined) ?? null);
    return { ok: true };
  });
}
