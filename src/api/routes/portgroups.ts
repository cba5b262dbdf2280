/**
 * `/v1/portgroups` and `/v1/nodes/{node}/portgroups` (Ironic's port groups, API 1.23; the node's
 * list 1.24): list (fields, limit, marker, sort, detail, `node`, `address`, next links), show,
 * create, JSON Patch and delete, with Ironic's semantics: a group is found by uuid or name, its node
 * is named by uuid (400 for no such node), a uuid, name or address in use is 409, and a group that
 * ports still belong to cannot be deleted (400). Older microversions do not see the resource (404).
 * Its ports are listed at `/v1/portgroups/{group}/ports`, served with the port list (`ports.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Conflict, InvalidParameter, NotAcceptable } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { parsePatch } from '../../nodes/field-table.js';
import { NODE_NAME_PATTERN } from '../../nodes/node-fields.js';
import { getNode } from '../../nodes/node-store.js';
import { MODE_PROPERTIES, MODE_PROPERTIES_SINCE, PORTGROUP_FIELDS, PORTGROUP_LIST_FIELDS } from '../../nodes/portgroup-fields.js';
import type { PortgroupFieldContext } from '../../nodes/portgroup-fields.js';
import { PORTGROUP_SORT_KEYS, createPortgroup, deletePortgroup, getPortgroup, listPortgroups, nodeIdForChild, updatePortgroup } from '../../nodes/portgroup-store.js';
import type { PortgroupRow, PortgroupValues } from '../../nodes/portgroup-store.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import { baseUrl, nextPageLink, resourceLinks } from '../links.js';
import { compareVersions, requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

/** The resource (Ironic's `allow_portgroups`) and a node's groups (`allow_portgroups_subcontrollers`). */
const PORTGROUPS_SINCE: Microversion = [1, 23];
const NODE_PORTGROUPS_SINCE: Microversion = [1, 24];
/** The provision states a group may move to a node in (else the node must be in maintenance), as Ironic's. */
const MOVE_STATES = ['enroll', 'inspecting', 'inspect wait', 'manageable'];

type Query = Record<string, string | undefined>;
type One = { Params: { ident: string }; Querystring: Query };

/** Every view has `links`, asked for or not (Ironic's views keep it through any `fields`). */
function withLinks(fields: readonly string[]): readonly string[] {
  return fields.includes('links') ? fields : [...fields, 'links'];
}

/** A group's uuid or logical name from the path: 400 for anything else, as Ironic's `uuid_or_name`. */
function portgroupIdent(raw: string): string {
  if (!UUID_PATTERN.test(raw) && !NODE_NAME_PATTERN.test(raw)) throw new InvalidParameter(`portgroup: expected a logical name or UUID, got ${JSON.stringify(raw.slice(0, 300))}`);
  return raw;
}

/**
 * 406 for `mode` or `properties` before 1.26, as Ironic's: named in `fields`, given a value on
 * create, or patched by the first operation (Ironic's `is_path_updated` reads the first one only,
 * and its stock tests patch `properties` second at 1.23: a stricter check would refuse them).
 */
function checkModeProperties(version: Microversion, named: readonly string[]): void {
  if (compareVersions(version, MODE_PROPERTIES_SINCE) >= 0) return;
  const field = MODE_PROPERTIES.find((f) => named.includes(f));
  if (field !== undefined) throw new NotAcceptable(`${field}: needs API version ${MODE_PROPERTIES_SINCE.join('.')} or later`);
}

/** The fields a request names, checked for the version (see `checkModeProperties`). */
function fieldsOf(raw: string | undefined, version: Microversion): string[] | undefined {
  const fields = parseFields(raw, PORTGROUP_FIELDS.fieldsAt(version), 'portgroup');
  if (fields) checkModeProperties(version, fields);
  return fields;
}

export function portgroupRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const limits = jsonFieldLimits(config);
  const context = (request: FastifyRequest): PortgroupFieldContext => {
    const base = baseUrl(request, config.api.public_endpoint);
    return { links: (collection, id) => resourceLinks(base, collection, id) };
  };
  const render = (request: FastifyRequest, row: PortgroupRow, fields?: readonly string[]) =>
    PORTGROUP_FIELDS.render(row, context(request), fields ?? PORTGROUP_FIELDS.fieldsAt(request.apiVersion));
  const since = (request: FastifyRequest, version: Microversion = PORTGROUPS_SINCE) => requireVersion(request.apiVersion, version, request.url);

  /** `extra` and `properties` within the `[api]` JSON limits. */
  function checkJson(values: Record<string, unknown>): void {
    for (const field of PORTGROUP_FIELDS.jsonFields()) if (values[field] !== undefined) checkJsonField(field, values[field], limits);
  }

  async function list(request: FastifyRequest<{ Querystring: Query }>, detailPath: boolean, parentNode?: string) {
    const q = request.query;
    const valid = PORTGROUP_FIELDS.fieldsAt(request.apiVersion);
    const fields = fieldsOf(q.fields, request.apiVersion);
    const detail = detailPath || (parseBool('detail', q.detail) ?? false);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a portgroup uuid, got ${JSON.stringify(q.marker)}`);
    const nodeIdent = parentNode ?? q.node;
    const nodeId = nodeIdent === undefined ? undefined : (await getNode(store, nodeIdent)).id;
    const rows = await listPortgroups(store, {
      limit,
      sortKey: parseChoice('sort_key', q.sort_key, PORTGROUP_SORT_KEYS, 'id'),
      sortDir: parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc'),
      ...(nodeId !== undefined ? { nodeId } : {}),
      ...(q.address !== undefined ? { address: q.address } : {}),
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
    });
    const shown = fields ? withLinks(fields) : detail ? valid : PORTGROUP_LIST_FIELDS;
    const ctx = context(request);
    const body: Record<string, unknown> = { portgroups: rows.map((g) => PORTGROUP_FIELDS.render(g, ctx, shown)) };
    if (rows.length === limit && rows.length > 0) body.next = nextPageLink(baseUrl(request, config.api.public_endpoint), request, limit, rows[rows.length - 1]!.uuid);
    return body;
  }

  app.get<{ Querystring: Query }>('/v1/portgroups', (request) => (since(request), list(request, false)));
  app.get<{ Querystring: Query }>('/v1/portgroups/detail', (request) => (since(request), list(request, true)));
  app.get<One>('/v1/nodes/:ident/portgroups', (request) => (since(request, NODE_PORTGROUPS_SINCE), list(request, false, request.params.ident)));
  app.get<One>('/v1/nodes/:ident/portgroups/detail', (request) => (since(request, NODE_PORTGROUPS_SINCE), list(request, true, request.params.ident)));

  app.get<One>('/v1/portgroups/:ident', async (request) => {
    since(request);
    const fields = fieldsOf(request.query.fields, request.apiVersion);
    return render(request, await getPortgroup(store, portgroupIdent(request.params.ident)), fields && withLinks(fields));
  });

  // Documented by the table's schema, checked by the table itself (see the node route).
  app.post('/v1/portgroups', { schema: { body: PORTGROUP_FIELDS.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
    since(request);
    const body = request.body as Record<string, unknown> | null;
    if (typeof body === 'object' && body !== null) checkModeProperties(request.apiVersion, MODE_PROPERTIES.filter((f) => Boolean(body[f])));
    const input = PORTGROUP_FIELDS.create(body, request.apiVersion);
    checkJson(input);
    const node = await nodeIdForChild(store, input.node_uuid as string);
    const { node_uuid: _node, ...values } = input;
    const group = await createPortgroup(store, node.id, values as PortgroupValues & { uuid?: string });
    reply.code(201).header('Location', `${baseUrl(request, config.api.public_endpoint)}/v1/portgroups/${group.uuid}`);
    return render(request, group);
  });

  app.patch<One>('/v1/portgroups/:ident', async (request) => {
    since(request);
    const ident = portgroupIdent(request.params.ident);
    const ops = parsePatch(request.body);
    checkModeProperties(request.apiVersion, MODE_PROPERTIES.filter((f) => ops[0]!.path === `/${f}` || ops[0]!.path.startsWith(`/${f}/`)));
    if (ops.some((op) => op.op === 'remove' && op.path === '/mode')) throw new InvalidParameter("/mode: 'mode' is a mandatory attribute and can not be removed");
    const group = await getPortgroup(store, ident);
    const { node_uuid: nodeUuid, ...changed } = PORTGROUP_FIELDS.applyPatch(group, ops);
    checkJson(changed);
    let nodeId: number | undefined;
    if (typeof nodeUuid === 'string' && nodeUuid !== group.node_uuid) {
      const node = await nodeIdForChild(store, nodeUuid);
      if (!MOVE_STATES.includes(node.provision_state) && !node.maintenance) {
        throw new Conflict(`portgroup ${group.uuid} can not be associated to node ${nodeUuid} unless the node is in a ${MOVE_STATES.join(', ')} state or in maintenance mode`);
      }
      nodeId = node.id;
    }
    return render(request, await updatePortgroup(store, group, { ...(changed as PortgroupValues), ...(nodeId !== undefined ? { nodeId } : {}) }));
  });

  app.delete<One>('/v1/portgroups/:ident', async (request, reply) => {
    since(request);
    const group = await getPortgroup(store, portgroupIdent(request.params.ident));
    await deletePortgroup(store, group.uuid);
    return reply.code(204).send();
  });
}
