/**
 * Changing nodes: PATCH and DELETE `/v1/nodes/{node}`, `/states` (provision, power), management
 * (boot device) and maintenance. Each goes to the node's conductor, which takes the node's lock;
 * state changes answer 202 like the Ironic API and continue on the conductor.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter, NotAcceptable } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { BOOT_DEVICES, parseCleanSteps } from '../../drivers/index.js';
import { parsePatch } from '../../nodes/node-patch.js';
import { getNode } from '../../nodes/node-store.js';
import { actionMinVersion } from '../../nodes/state-machine.js';
import { isProvisionAction } from '../../nodes/states.js';
import type { ProvisionState } from '../../nodes/states.js';
import type { ConductorRouter } from '../conductor-router.js';
import { apiTime, baseUrl } from '../links.js';
import { compareVersions, formatVersion } from '../microversions.js';
import { liveOwnersFor, nodeView } from './nodes.js';

type Node = { Params: { ident: string } };

function objectBody(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object');
  return body as Record<string, unknown>;
}

export function nodeActionRoutes(app: FastifyInstance, options: { store: Store; config: Config; router: ConductorRouter }): void {
  const { store, router } = options;
  // After a change the answer reads the conductors afresh (a change is rare; a GET is not).
  const view = nodeView(liveOwnersFor(store, options.config, 0), options.config);
  // Absolute, like the Location of a created node (and Ironic's): where to watch the change happen.
  const statesUrl = (request: FastifyRequest, uuid: string) => `${baseUrl(request, options.config.api.public_endpoint)}/v1/nodes/${uuid}/states`;

  app.patch<Node>('/v1/nodes/:ident', async (request) => {
    const ops = parsePatch(request.body);
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'update', ops);
    return view(request, await getNode(store, node.uuid));
  });

  app.delete<Node>('/v1/nodes/:ident', async (request, reply) => {
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'destroy');
    return reply.code(204).send();
  });

  app.get<Node>('/v1/nodes/:ident/states', async (request) => {
    const node = await getNode(store, request.params.ident);
    return {
      console_enabled: false,
      last_error: node.last_error,
      power_state: node.power_state,
      provision_state: node.provision_state,
      provision_updated_at: apiTime(node.provision_updated_at),
      raid_config: {},
      target_power_state: node.target_power_state,
      target_provision_state: node.target_provision_state,
      target_raid_config: {},
    };
  });

  app.put<Node>('/v1/nodes/:ident/states/provision', async (request, reply) => {
    const body = objectBody(request);
    const target = body.target;
    if (!isProvisionAction(target)) throw new InvalidParameter(`target: ${JSON.stringify(target)} is not a provision action`);
    const node = await getNode(store, request.params.ident);
    const since = actionMinVersion(target, node.provision_state as ProvisionState);
    if (compareVersions(request.apiVersion, since) < 0) {
      throw new NotAcceptable(`the provision action "${target}" needs API version ${formatVersion(since)} or later`);
    }
    // The shape of clean_steps is checked here; whether the node's interfaces offer them, by its conductor.
    const cleanSteps = body.clean_steps !== undefined ? parseCleanSteps(body.clean_steps) : undefined;
    await router.call(node, 'POST', 'provision', {
      target,
      ...(body.configdrive !== undefined ? { configdrive: body.configdrive } : {}),
      ...(cleanSteps !== undefined ? { clean_steps: cleanSteps } : {}),
    });
    return reply.code(202).header('Location', statesUrl(request, node.uuid)).send();
  });

  app.put<Node>('/v1/nodes/:ident/states/power', async (request, reply) => {
    const body = objectBody(request);
    if (typeof body.target !== 'string') throw new InvalidParameter('target: required, a power action (power on, power off, rebooting)');
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'power', { target: body.target, ...(body.timeout !== undefined ? { timeout: body.timeout } : {}) });
    return reply.code(202).header('Location', statesUrl(request, node.uuid)).send();
  });

  app.put<Node>('/v1/nodes/:ident/management/boot_device', async (request, reply) => {
    const body = objectBody(request);
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'boot_device', { boot_device: body.boot_device, ...(body.persistent !== undefined ? { persistent: body.persistent } : {}) });
    return reply.code(204).send();
  });

  app.get<Node>('/v1/nodes/:ident/management/boot_device', async (request) => {
    const node = await getNode(store, request.params.ident);
    return router.call(node, 'GET', 'boot_device');
  });

  app.get<Node>('/v1/nodes/:ident/management/boot_device/supported', async (request) => {
    await getNode(store, request.params.ident);
    return { supported_boot_devices: [...BOOT_DEVICES] };
  });

  app.put<Node>('/v1/nodes/:ident/maintenance', async (request, reply) => {
    const body = request.body === undefined || request.body === null ? {} : objectBody(request);
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'maintenance', { maintenance: true, reason: body.reason ?? null });
    return reply.code(202).send();
  });

  app.delete<Node>('/v1/nodes/:ident/maintenance', async (request, reply) => {
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'maintenance', { maintenance: false });
    return reply.code(202).send();
  });
}
