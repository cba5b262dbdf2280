/**
 * A node's VIFs (API 1.28): `GET /v1/nodes/{node}/vifs` lists them, `POST` attaches one (`{"id":
 * …}`, and from 1.67 `port_uuid` or `portgroup_uuid` to choose the NIC), `DELETE …/vifs/{vif}`
 * detaches one. The node's conductor records them on its ports and port groups
 * (`src/conductor/vifs.ts`); 404 below 1.28, as Ironic.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Store } from '../../db/connect.js';
import { NODE_NAME_PATTERN } from '../../nodes/node-fields.js';
import { getNode } from '../../nodes/node-store.js';
import type { ConductorRouter } from '../conductor-router.js';
import { compareVersions, requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** The VIFs subresource (Ironic's `allow_vifs_subcontroller`). */
export const VIFS_SINCE: Microversion = [1, 28];
/** `port_uuid` / `portgroup_uuid` in an attach (Ironic's 1.67). */
export const VIF_PORT_SINCE: Microversion = [1, 67];

/** A VIF id: a UUID or a logical name, as Ironic's `uuid_or_name`; 400 naming `field` otherwise. */
export function vifId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !(UUID_PATTERN.test(value) || NODE_NAME_PATTERN.test(value))) {
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 300)) : JSON.stringify(value) ?? 'nothing';
    throw new InvalidParameter(`${field}: expected a UUID or a name of at most 255 letters, digits and -._~, got ${shown}`);
  }
  return UUID_PATTERN.test(value) ? value.toLowerCase() : value;
}

function uuidField(value: unknown, field: string): string {
  if (typeof value !== 'string' || !UUID_PATTERN.test(value)) throw new InvalidParameter(`${field}: expected a UUID, got ${JSON.stringify(typeof value === 'string' ? value.slice(0, 300) : value) ?? 'nothing'}`);
  return value.toLowerCase();
}

type Node = { Params: { ident: string } };

export function nodeVifRoutes(app: FastifyInstance, options: { store: Store; router: ConductorRouter }): void {
  const { store, router } = options;
  const gate = (request: FastifyRequest) => requireVersion(request.apiVersion, VIFS_SINCE, request.url);

  app.get<Node>('/v1/nodes/:ident/vifs', async (request) => {
    gate(request);
    const node = await getNode(store, request.params.ident);
    return router.call<{ vifs: Array<{ id: string }> }>(node, 'GET', 'vifs');
  });

  app.post<Node>('/v1/nodes/:ident/vifs', async (request, reply) => {
    gate(request);
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object with id, the VIF to attach');
    const fields = body as Record<string, unknown>;
    if (fields.id === undefined) throw new InvalidParameter("id: required, the VIF's UUID or name");
    const info: Record<string, string> = { id: vifId(fields.id, 'id') };
    // Other keys are allowed (Ironic passes them to its network interface) and not kept.
    if (compareVersions(request.apiVersion, VIF_PORT_SINCE) >= 0) {
      if (fields.port_uuid !== undefined && fields.portgroup_uuid !== undefined) throw new InvalidParameter('port_uuid and portgroup_uuid: cannot specify both');
      if (fields.port_uuid !== undefined) info.port_uuid = uuidField(fields.port_uuid, 'port_uuid');
      if (fields.portgroup_uuid !== undefined) info.portgroup_uuid = uuidField(fields.portgroup_uuid, 'portgroup_uuid');
    }
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'vif_attach', { vif_info: info });
    return reply.code(204).send();
  });

  app.delete<{ Params: { ident: string; vif: string } }>('/v1/nodes/:ident/vifs/:vif', async (request, reply) => {
    gate(request);
    const vif = vifId(request.params.vif, 'vif_id');
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'vif_detach', { vif_id: vif });
    return reply.code(204).send();
  });
}
