/**
 * Changing nodes: PATCH and DELETE `/v1/nodes/{node}`, `/states` (provision, power), management
 * (boot device) and maintenance. Each goes to the node's conductor, which takes the node's lock;
 * state changes answer 202 like the Ironic API and continue on the conductor.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkConfigDriveSpec } from '../../boot/config-drive-iso.js';
import type { ConductorRings } from '../../cluster/conductor-rings.js';
import { InvalidParameter, NotAcceptable } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { BOOT_DEVICES, parseCleanSteps } from '../../drivers/index.js';
import { NODE_FIELDS } from '../../nodes/node-fields.js';
import { applyNodePatch, parsePatch } from '../../nodes/node-patch.js';
import { getInventory } from '../../nodes/inventory-store.js';
import { shaCrypt } from '../../common/sha-crypt.js';
import type { ShaCryptAlgorithm } from '../../common/sha-crypt.js';
import { getNode } from '../../nodes/node-store.js';
import { InvalidStateTransition, actionMinVersion, isActionAllowed } from '../../nodes/state-machine.js';
import { isPowerAction, isProvisionAction } from '../../nodes/states.js';
import type { ProvisionAction, ProvisionState } from '../../nodes/states.js';
import type { ConductorRouter } from '../conductor-router.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import { baseUrl } from '../links.js';
import { compareVersions, formatVersion } from '../microversions.js';
import { nodeView } from './nodes.js';

type Node = { Params: { ident: string } };

/** The node fields `GET /v1/nodes/{node}/states` shows (those of the request's version). */
const STATES_FIELDS: ReadonlySet<string> = new Set([
  'console_enabled', 'last_error', 'power_state', 'provision_state', 'provision_updated_at', 'raid_config',
  'target_power_state', 'target_provision_state', 'target_raid_config',
]);

/** The actions that take a config drive, as in Ironic (deploy under both spellings, and rebuild). */
const CONFIGDRIVE_ACTIONS: readonly ProvisionAction[] = ['active', 'deploy', 'rebuild'];
/** The version that accepts a config drive as a JSON object (Ironic 1.56). */
const CONFIGDRIVE_JSON_VERSION: [number, number] = [1, 56];

/**
 * Longest power `timeout` accepted, in seconds. Ironic asks only for a positive integer; a bound
 * keeps `1e308` (an integer to JavaScript) from reaching a driver's timer, and an hour is far
 * beyond any BMC's power transition.
 */
export const MAX_POWER_TIMEOUT = 3600;

function objectBody(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object');
  return body as Record<string, unknown>;
}

export function nodeActionRoutes(app: FastifyInstance, options: { store: Store; config: Config; router: ConductorRouter; rings: ConductorRings }): void {
  const { store, router, config } = options;
  // After a change the answer reads the conductors afresh (a change is rare; a GET is not).
  const view = nodeView(options.rings, options.config, 'fresh');
  // Absolute, like the Location of a created node (and Ironic's): where to watch the change happen.
  const statesUrl = (request: FastifyRequest, uuid: string) => `${baseUrl(request, options.config.api.public_endpoint)}/v1/nodes/${uuid}/states`;

  const limits = jsonFieldLimits(options.config);

  app.patch<Node>('/v1/nodes/:ident', async (request) => {
    const ops = parsePatch(request.body);
    const node = await getNode(store, request.params.ident);
    // A field newer than the request's version cannot be written either, nor chassis_uuid cleared
    // before 1.25 (406, as Ironic).
    NODE_FIELDS.checkPatchVersion(ops, request.apiVersion, node);
    // A dry run at the edge: a patch that is bad, or that would leave a JSON field too deep or too
    // big, is refused here, before the conductor (which applies it again under the node's lock).
    const changes = applyNodePatch(node, ops);
    for (const field of NODE_FIELDS.jsonFields()) if (changes[field] !== undefined) checkJsonField(field, changes[field], limits);
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
    // The node's own fields, rendered as the node view renders them at this version (raid_config
    // and target_raid_config from 1.12), as Ironic's node_states_convert.
    // None of them reads where the ring places the node; provision_state reads the version.
    const fields = NODE_FIELDS.fieldsAt(request.apiVersion).filter((f) => STATES_FIELDS.has(f));
    return NODE_FIELDS.render(node, { conductorOf: () => null, version: request.apiVersion }, fields);
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
    if (body.configdrive !== undefined && body.configdrive !== null) {
      if (!CONFIGDRIVE_ACTIONS.includes(target)) throw new InvalidParameter(`configdrive: only the deploy (active) and rebuild actions take a config drive, not "${target}"`);
      if (typeof body.configdrive === 'object' && !Array.isArray(body.configdrive)) {
        // The JSON form, built into the ISO by the conductor (src/boot/config-drive-iso.ts).
        if (compareVersions(request.apiVersion, CONFIGDRIVE_JSON_VERSION) < 0) {
          throw new InvalidParameter(`configdrive: a JSON object needs API version ${formatVersion(CONFIGDRIVE_JSON_VERSION)} or later (this request is ${formatVersion(request.apiVersion)}); below it, send the gzipped, base64-encoded ISO image or its URL, or set instance_info/configdrive to the object`);
        }
        checkConfigDriveSpec(body.configdrive);
      } else if (typeof body.configdrive !== 'string') {
        throw new InvalidParameter('configdrive: expected a string (a gzipped, base64-encoded ISO image, or its URL) or, from API 1.56, an object');
      }
    }
    // Checked here too (the conductor checks again under the lock) so that the refusal lists the
    // actions in the request's own API version: a 1.49 client is offered `active`, not `deploy`.
    const state = node.provision_state as ProvisionState;
    if (!isActionAllowed(state, target)) throw new InvalidStateTransition(state, target, request.apiVersion);
    // The shape of clean_steps is checked here; whether the node's interfaces offer them, by its conductor.
    const cleanSteps = body.clean_steps !== undefined ? parseCleanSteps(body.clean_steps) : undefined;
    // The rescue password is hashed here and only the hash goes on (Ironic stores the hash too).
    const rescueHash = rescuePasswordHash(target, body.rescue_password, config.conductor.rescue_password_hash_algorithm);
    await router.call(node, 'POST', 'provision', {
      target,
      ...(body.configdrive !== undefined && body.configdrive !== null ? { configdrive: body.configdrive } : {}),
      ...(cleanSteps !== undefined ? { clean_steps: cleanSteps } : {}),
      ...(rescueHash !== undefined ? { rescue_password_hash: rescueHash } : {}),
    });
    return reply.code(202).header('Location', statesUrl(request, node.uuid)).send();
  });

  app.put<Node>('/v1/nodes/:ident/states/power', async (request, reply) => {
    const body = objectBody(request);
    if (typeof body.target !== 'string') throw new InvalidParameter('target: required, a power action (power on, power off, rebooting)');
    if (!isPowerAction(body.target)) throw new InvalidParameter(`target: ${JSON.stringify(body.target)} is not a power action (power on, power off, rebooting, soft rebooting, soft power off)`);
    const { timeout } = body;
    if (timeout !== undefined && timeout !== null && (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_POWER_TIMEOUT)) {
      throw new InvalidParameter(`timeout: expected a positive integer of seconds, at most ${MAX_POWER_TIMEOUT}, got ${JSON.stringify(timeout)}`);
    }
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'power', { target: body.target, ...(typeof timeout === 'number' ? { timeout } : {}) });
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

  // What the node's last inspection found (Ironic's 1.81 resource; served at every version here
  // until ironring's maximum reaches it).
  app.get<Node>('/v1/nodes/:ident/inventory', async (request) => {
    const node = await getNode(store, request.params.ident);
    return getInventory(store, node);
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

/** Longest rescue password accepted. */
const MAX_RESCUE_PASSWORD = 255;

/**
 * The crypt hash of a rescue request's `rescue_password` (Ironic's rules: required and non-blank
 * with `rescue`, refused with any other action); undefined for other actions.
 */
function rescuePasswordHash(target: string, password: unknown, algorithm: ShaCryptAlgorithm): string | undefined {
  if (target !== 'rescue') {
    if (password !== undefined && password !== null) throw new InvalidParameter("rescue_password: only valid when setting target provision state to rescue");
    return undefined;
  }
  if (typeof password !== 'string' || password.trim() === '') throw new InvalidParameter("rescue_password: a non-empty 'rescue_password' is required when setting target provision state to rescue");
  if (password.length > MAX_RESCUE_PASSWORD) throw new InvalidParameter(`rescue_password: at most ${MAX_RESCUE_PASSWORD} characters`);
  if (/[\0\n\r]/.test(password)) throw new InvalidParameter('rescue_password: may not contain NUL or line breaks');
  return shaCrypt(password, algorithm);
}
