/**
 * `PUT /v1/nodes/{node}/states/boot_mode` and `…/states/secure_boot` (Ironic's API 1.76): change the
 * node's firmware boot mode (`{"target": "uefi"}` or `"bios"`) or UEFI secure boot (`{"target":
 * true}`) through its management interface, on its conductor. 202 with the node's states as
 * `Location` once the conductor accepted it; the node's `boot_mode`/`secure_boot` (1.75) show the
 * result, `last_error` a failure. Below 1.76 the endpoints do not exist (404, as Ironic's); a node in
 * a state with work under way is 409; an interface that cannot change it, 400 from the conductor.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Conflict, InvalidParameter } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { NODE_BOOT_MODES } from '../../drivers/capabilities.js';
import { getNode } from '../../nodes/node-store.js';
import { booleanSpelling } from '../../nodes/port-fields.js';
import { WAITING_STATES, WORKING_STATES } from '../../nodes/states.js';
import type { ConductorRouter } from '../conductor-router.js';
import { baseUrl } from '../links.js';
import { requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** The microversion of changing them (Ironic's `MINOR_76_NODE_CHANGE_BOOT_MODE`). */
export const BOOT_MODE_CHANGE_SINCE: Microversion = [1, 76];

/** States whose work the change could disturb (Ironic's `UNSTABLE_STATES`): 409. */
const UNSTABLE_STATES: ReadonlySet<string> = new Set<string>([...WORKING_STATES, ...WAITING_STATES]);

type Node = { Params: { ident: string } };

function targetOf(request: FastifyRequest): unknown {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object with target');
  return (body as Record<string, unknown>).target;
}

export function nodeBootModeRoutes(app: FastifyInstance, options: { store: Store; config: Config; router: ConductorRouter }): void {
  const { store, router, config } = options;

  const change = async (request: FastifyRequest<Node>, reply: FastifyReply, action: 'boot_mode' | 'secure_boot', target: unknown) => {
    const node = await getNode(store, request.params.ident);
    if (UNSTABLE_STATES.has(node.provision_state)) {
      throw new Conflict(`Node ${node.uuid} is in ${node.provision_state} state. Since node is transitioning, the ${action === 'boot_mode' ? 'boot mode' : 'secure boot state'} will not be set as it could interfere with the work under way. Try again later.`);
    }
    await router.call(node, 'POST', action, { target });
    return reply.code(202).header('Location', `${baseUrl(request, config.api.public_endpoint)}/v1/nodes/${node.uuid}/states`).send();
  };

  app.put<Node>('/v1/nodes/:ident/states/boot_mode', async (request, reply) => {
    requireVersion(request.apiVersion, BOOT_MODE_CHANGE_SINCE, request.url);
    const target = targetOf(request);
    if (typeof target !== 'string' || !(NODE_BOOT_MODES as readonly string[]).includes(target)) {
      throw new InvalidParameter(`target: invalid boot mode ${JSON.stringify(target) ?? 'nothing'} requested for node; allowed boot modes are: ${NODE_BOOT_MODES.join(', ')}`);
    }
    return change(request, reply, 'boot_mode', target);
  });

  app.put<Node>('/v1/nodes/:ident/states/secure_boot', async (request, reply) => {
    requireVersion(request.apiVersion, BOOT_MODE_CHANGE_SINCE, request.url);
    const raw = targetOf(request);
    const target = booleanSpelling(raw);
    if (typeof target !== 'boolean') throw new InvalidParameter(`target: invalid secure_boot ${JSON.stringify(raw) ?? 'nothing'} requested for node; allowed: true, false`);
    return change(request, reply, 'secure_boot', target);
  });
}
