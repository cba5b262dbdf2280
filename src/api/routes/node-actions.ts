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
import { checkDeploySteps } from '../../nodes/deploy-template-fields.js';
import type { DeployTemplateStep } from '../../nodes/deploy-template-fields.js';
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
import { compareVersions, formatVersion, requireVersion } from '../microversions.js';
import { parseBool } from '../query.js';
import { checkTemplateJson } from './deploy-templates.js';
import { nodeView } from './nodes.js';

type Node = { Params: { ident: string } };
type NodePatchRequest = { Params: { ident: string }; Querystring: { reset_interfaces?: string } };

/** The node fields `GET /v1/nodes/{node}/states` shows (those of the request's version). */
const STATES_FIELDS: ReadonlySet<string> = new Set([
  'console_enabled', 'last_error', 'power_state', 'provision_state', 'provision_updated_at', 'raid_config',
  'target_power_state', 'target_provision_state', 'target_raid_config',
  // From 1.75, as Ironic's node_states_convert.
  'boot_mode', 'secure_boot',
]);

/** The actions that take a config drive, as in Ironic (deploy under both spellings, and rebuild). */
const CONFIGDRIVE_ACTIONS: readonly ProvisionAction[] = ['active', 'deploy', 'rebuild'];
/** The version that accepts a config drive as a JSON object (Ironic 1.56). */
const CONFIGDRIVE_JSON_VERSION: [number, number] = [1, 56];
/** The version that accepts `vendor_data` in a JSON config drive (Ironic 1.59). */
const CONFIGDRIVE_VENDOR_DATA_VERSION: [number, number] = [1, 59];
/** The version of node PATCH's `reset_interfaces` query parameter (Ironic 1.45). */
export const RESET_INTERFACES_SINCE: [number, number] = [1, 45];
/** The version of `disable_ramdisk` in a manual clean's provision request (Ironic 1.70). */
export const DISABLE_RAMDISK_SINCE: [number, number] = [1, 70];
/** The version that brought `GET /v1/nodes/{node}/inventory` (Ironic 1.81); 404 below, as Ironic's. */
export const INVENTORY_SINCE: [number, number] = [1, 81];

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

  app.patch<NodePatchRequest>('/v1/nodes/:ident', async (request) => {
    const resetInterfaces = parseResetInterfaces(request.query.reset_interfaces, request.apiVersion);
    const ops = parsePatch(request.body);
    // As Ironic: only with a new driver in the same patch (a `remove` of /driver is no new driver).
    if (resetInterfaces === true && !ops.some((op) => op.path === '/driver' && op.op !== 'remove')) {
      throw new InvalidParameter("reset_interfaces: can only be used when changing the node's driver");
    }
    const node = await getNode(store, request.params.ident);
    // A field newer than the request's version cannot be written either, nor chassis_uuid cleared
    // before 1.25 (406, as Ironic).
    NODE_FIELDS.checkPatchVersion(ops, request.apiVersion, node);
    // A dry run at the edge: a patch that is bad, or that would leave a JSON field too deep or too
    // big, is refused here, before the conductor (which applies it again under the node's lock).
    const changes = applyNodePatch(node, ops);
    for (const field of NODE_FIELDS.jsonFields()) if (changes[field] !== undefined) checkJsonField(field, changes[field], limits);
    // The patch alone unless interfaces are to be reset (what a conductor of an older release reads).
    await router.call(node, 'POST', 'update', resetInterfaces === true ? { patch: ops, reset_interfaces: true } : ops);
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
        // Ironic looks for the key itself: even `"vendor_data": null` needs 1.59.
        if ('vendor_data' in body.configdrive && compareVersions(request.apiVersion, CONFIGDRIVE_VENDOR_DATA_VERSION) < 0) {
          throw new InvalidParameter(`configdrive.vendor_data: vendor_data in a config drive needs API version ${formatVersion(CONFIGDRIVE_VENDOR_DATA_VERSION)} or later (this request is ${formatVersion(request.apiVersion)})`);
        }
        checkConfigDriveSpec(body.configdrive);
      } else if (typeof body.configdrive !== 'string') {
        throw new InvalidParameter('configdrive: expected a string (a gzipped, base64-encoded ISO image, or its URL) or, from API 1.56, an object');
      }
    }
    const disableRamdisk = parseDisableRamdisk(body.disable_ramdisk, target, request.apiVersion);
    // Checked here too (the conductor checks again under the lock) so that the refusal lists the
    // actions in the request's own API version: a 1.49 client is offered `active`, not `deploy`.
    const state = node.provision_state as ProvisionState;
    if (!isActionAllowed(state, target)) throw new InvalidStateTransition(state, target, request.apiVersion);
    // The shape of clean_steps is checked here; whether the node's interfaces offer them, by its conductor.
    const cleanSteps = body.clean_steps !== undefined ? parseCleanSteps(body.clean_steps) : undefined;
    // The rescue password is hashed here and only the hash goes on (Ironic stores the hash too).
    const rescueHash = rescuePasswordHash(target, body.rescue_password, config.conductor.rescue_password_hash_algorithm);
    // Their shape here; the node's interfaces offering them, by its conductor (with the templates' steps).
    const deploySteps = parseDeploySteps(body.deploy_steps, target, request.apiVersion);
    if (deploySteps !== undefined) checkTemplateJson({ steps: deploySteps }, limits, 'deploy_steps');
    await router.call(node, 'POST', 'provision', {
      target,
      ...(body.configdrive !== undefined && body.configdrive !== null ? { configdrive: body.configdrive } : {}),
      ...(cleanSteps !== undefined ? { clean_steps: cleanSteps } : {}),
      ...(rescueHash !== undefined ? { rescue_password_hash: rescueHash } : {}),
      ...(deploySteps !== undefined ? { deploy_steps: deploySteps } : {}),
      ...(disableRamdisk ? { disable_ramdisk: true } : {}),
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

  // What the node's last inspection found (Ironic's 1.81 resource: 404 below it, as Ironic's router).
  app.get<Node>('/v1/nodes/:ident/inventory', async (request) => {
    requireVersion(request.apiVersion, INVENTORY_SINCE, request.url);
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

/**
 * `?reset_interfaces=` of a node PATCH (Ironic 1.45): a boolean (`true`, `false`, `1`, `yes`…),
 * undefined when absent; given below 1.45 → 406, as Ironic.
 */
function parseResetInterfaces(raw: string | undefined, version: readonly [number, number]): boolean | undefined {
  if (raw === undefined) return undefined;
  if (compareVersions(version, RESET_INTERFACES_SINCE) < 0) {
    throw new NotAcceptable(`reset_interfaces: needs API version ${formatVersion(RESET_INTERFACES_SINCE)} or later (this request is ${formatVersion(version)})`);
  }
  return parseBool('reset_interfaces', raw);
}

/**
 * `disable_ramdisk` of a provision request (Ironic 1.70; `null` is as absent): a boolean, only with
 * the manual `clean` (400 otherwise), 406 below 1.70. True: the clean boots no ramdisk, so the
 * conductor accepts only steps that need none.
 */
function parseDisableRamdisk(value: unknown, target: string, version: readonly [number, number]): boolean {
  if (value === undefined || value === null) return false;
  if (compareVersions(version, DISABLE_RAMDISK_SINCE) < 0) {
    throw new NotAcceptable(`disable_ramdisk: needs API version ${formatVersion(DISABLE_RAMDISK_SINCE)} or later (this request is ${formatVersion(version)})`);
  }
  // Ironic's boolean argument: true or false, or a string spelling of one ("true", "0", "yes"…).
  const flag = typeof value === 'string' ? parseBool('disable_ramdisk', value) : value;
  if (typeof flag !== 'boolean') throw new InvalidParameter(`disable_ramdisk: expected true or false, got ${JSON.stringify(value)}`);
  if (target !== 'clean') throw new InvalidParameter(`disable_ramdisk: only valid with manual cleaning (target "clean"), not "${target}"`);
  return flag;
}

/** The version of `deploy_steps` in a deploy's provision request (Ironic 1.69). */
const DEPLOY_STEPS_SINCE: [number, number] = [1, 69];

/**
 * `deploy_steps` of a provision request (Ironic 1.69; null or an empty list is as absent): 406 below
 * 1.69, 400 with any target but a deploy (`active`, `deploy`) or `rebuild`, then the shape of a
 * template's steps (`checkDeploySteps`, 400 naming the step and key).
 */
function parseDeploySteps(value: unknown, target: string, version: readonly [number, number]): DeployTemplateStep[] | undefined {
  if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) return undefined;
  if (compareVersions(version, DEPLOY_STEPS_SINCE) < 0) {
    throw new NotAcceptable(`deploy_steps: needs API version ${formatVersion(DEPLOY_STEPS_SINCE)} or later (this request is ${formatVersion(version)})`);
  }
  if (!['active', 'deploy', 'rebuild'].includes(target)) throw new InvalidParameter(`deploy_steps: only valid when setting target provision state to active or rebuild, not "${target}"`);
  return checkDeploySteps(value, 'deploy_steps');
}
