/** `/v1/ports` and `/v1/nodes/{node}/ports`: list (filter by node and address), show, create, delete. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { parsePatch } from '../../nodes/field-table.js';
import { getNode } from '../../nodes/node-store.js';
import { PORT_FIELDS, PORT_LIST_FIELDS } from '../../nodes/port-fields.js';
import { PORT_SORT_KEYS, createPort, deletePort, getPort, listPorts, updatePort } from '../../nodes/port-store.js';
import type { PortChanges, PortRow } from '../../nodes/port-store.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import type { JsonFieldLimits } from '../json-fields.js';
import { baseUrl, nextPageLink, resourceLinks } from '../links.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

const fieldsAt = (version: Microversion): string[] => PORT_FIELDS.fieldsAt(version);

function renderPort(port: PortRow, base: string, fields: readonly string[]): Record<string, unknown> {
  const out = PORT_FIELDS.render(port, undefined, fields);
  out.links = resourceLinks(base, 'ports', port.uuid);
  return out;
}

type Query = Record<string, string | undefined>;

/** A port's JSON fields within the `[api]` JSON limits. */
function checkJsonFields(values: Record<string, unknown>, limits: JsonFieldLimits): void {
  for (const field of PORT_FIELDS.jsonFields()) if (values[field] !== undefined) checkJsonField(field, values[field], limits);
}

export function portRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const limits = jsonFieldLimits(config);

  async function list(request: FastifyRequest<{ Querystring: Query }>, nodeIdent: string | undefined, detailPath: boolean) {
    const q = request.query;
    const valid = fieldsAt(request.apiVersion);
    const fields = parseFields(q.fields, valid, 'port');
    const detail = detailPath || (parseBool('detail', q.detail) ?? false);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a port uuid, got ${JSON.stringify(q.marker)}`);
    const ident = nodeIdent ?? q.node ?? q.node_uuid;
    const nodeId = ident === undefined ? undefined : (await getNode(store, ident)).id;
    const rows = await listPorts(store, {
      limit,
      sortKey: parseChoice('sort_key', q.sort_key, PORT_SORT_KEYS, 'id'),
      sortDir: parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc'),
      ...(nodeId !== undefined ? { nodeId } : {}),
      ...(q.address !== undefined ? { address: q.address } : {}),
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
    });
    const base = baseUrl(request, config.api.public_endpoint);
    const shown = fields ?? (detail ? valid : PORT_LIST_FIELDS);
    const body: Record<string, unknown> = { ports: rows.map((p) => renderPort(p, base, shown)) };
    if (rows.length === limit && rows.length > 0) body.next = nextPageLink(base, request, limit, rows[rows.length - 1]!.uuid);
    return body;
  }

  app.get<{ Querystring: Query }>('/v1/ports', (request) => list(request, undefined, false));
  app.get<{ Querystring: Query }>('/v1/ports/detail', (request) => list(request, undefined, true));
  app.get<{ Params: { ident: string }; Querystring: Query }>('/v1/nodes/:ident/ports', (request) => list(request, request.params.ident, false));

  app.get<{ Params: { ident: string }; Querystring: Query }>('/v1/ports/:ident', async (request) => {
    const fields = parseFields(request.query.fields, fieldsAt(request.apiVersion), 'port') ?? fieldsAt(request.apiVersion);
    return renderPort(await getPort(store, request.params.ident), baseUrl(request, config.api.public_endpoint), fields);
  });

  // Documented by the table's schema, checked by the table itself (see the node route).
  app.post('/v1/ports', { schema: { body: PORT_FIELDS.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
    const input = PORT_FIELDS.create(request.body, request.apiVersion);
    checkJsonFields(input, limits);
    const node = await getNode(store, input.node_uuid as string);
    const port = await createPort(store, {
      address: input.address as string,
      nodeId: node.id,
      ...(input.uuid !== undefined ? { uuid: input.uuid as string } : {}),
      ...(input.pxe_enabled !== undefined ? { pxeEnabled: input.pxe_enabled as boolean } : {}),
      ...(input.physical_network !== undefined ? { physicalNetwork: input.physical_network as string | null } : {}),
      ...(input.local_link_connection !== undefined ? { localLinkConnection: input.local_link_connection as Record<string, unknown> } : {}),
      ...(input.extra !== undefined ? { extra: input.extra as Record<string, unknown> } : {}),
    });
    const base = baseUrl(request, config.api.public_endpoint);
    reply.code(201).header('Location', `${base}/v1/ports/${port.uuid}`);
    return renderPort(port, base, fieldsAt(request.apiVersion));
  });

  app.patch<{ Params: { ident: string } }>('/v1/ports/:ident', async (request) => {
    const ops = parsePatch(request.body);
    PORT_FIELDS.checkPatchVersion(ops, request.apiVersion);
    const port = await getPort(store, request.params.ident);
    const changed = PORT_FIELDS.applyPatch(port, ops);
    checkJsonFields(changed, limits);
    const changes: PortChanges = {
      ...(changed.address !== undefined ? { address: changed.address as string } : {}),
      ...(changed.pxe_enabled !== undefined ? { pxeEnabled: changed.pxe_enabled as boolean } : {}),
      ...(changed.physical_network !== undefined ? { physicalNetwork: changed.physical_network as string | null } : {}),
      ...(changed.extra !== undefined ? { extra: changed.extra as Record<string, unknown> } : {}),
      ...(changed.local_link_connection !== undefined ? { localLinkConnection: changed.local_link_connection as Record<string, unknown> } : {}),
    };
    const updated = await updatePort(store, port.uuid, changes);
    return renderPort(updated, baseUrl(request, config.api.public_endpoint), fieldsAt(request.apiVersion));
  });

  app.delete<{ Params: { ident: string } }>('/v1/ports/:ident', async (request, reply) => {
    const port = await getPort(store, request.params.ident);
    await deletePort(store, port.uuid);
    return reply.code(204).send();
  });
}
