/**
 * `/v1/ports`, `/v1/nodes/{node}/ports` and `/v1/portgroups/{group}/ports`: list (filter by node,
 * port group and address), show, create, JSON Patch and delete, with Ironic's semantics: a port is
 * found by uuid only (a MAC address in the path is 400: `?address=` finds one), its node is named
 * by uuid (400 for anything else or for no such node), and it may join a port group of its node
 * (`portgroup_uuid`, 1.24), whose ports share one physical network (409 otherwise).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Conflict, InvalidParameter, NotAcceptable } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { parsePatch } from '../../nodes/field-table.js';
import { getNode } from '../../nodes/node-store.js';
import { NETWORK_TYPE_SINCE, PORT_FIELDS, PORT_LIST_FIELDS } from '../../nodes/port-fields.js';
import { PORT_SORT_KEYS, checkGroupPhysnet, createPort, deletePort, getPort, listPorts, updatePort } from '../../nodes/port-store.js';
import type { PortChanges, PortRow } from '../../nodes/port-store.js';
import { getPortgroup, nodeIdForChild, portgroupForPort, portgroupOfOtherNode } from '../../nodes/portgroup-store.js';
import type { PortgroupRow } from '../../nodes/portgroup-store.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import type { JsonFieldLimits } from '../json-fields.js';
import { baseUrl, nextPageLink, resourceLinks } from '../links.js';
import { MAX_VERSION, compareVersions, formatVersion, requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

/** Port groups as a port filter and `/v1/portgroups/{g}/ports` (Ironic's subcontrollers, 1.24). */
const PORTGROUP_FILTER_SINCE: Microversion = [1, 24];

const fieldsAt = (version: Microversion): string[] => PORT_FIELDS.fieldsAt(version);
const ALL_PORT_FIELDS = fieldsAt(MAX_VERSION);

function renderPort(port: PortRow, base: string, fields: readonly string[]): Record<string, unknown> {
  const out = PORT_FIELDS.render(port, undefined, fields);
  out.links = resourceLinks(base, 'ports', port.uuid);
  return out;
}

type Query = Record<string, string | undefined>;
type One = { Params: { uuid: string }; Querystring: Query };

/** A port's JSON fields within the `[api]` JSON limits. */
function checkJsonFields(values: Record<string, unknown>, limits: JsonFieldLimits): void {
  for (const field of PORT_FIELDS.jsonFields()) if (values[field] !== undefined) checkJsonField(field, values[field], limits);
}

/** A port uuid from the path: 400 for anything else (a MAC address included), as Ironic's. */
function portUuid(raw: string): string {
  if (!UUID_PATTERN.test(raw)) throw new InvalidParameter(`port_uuid: expected a UUID, got ${JSON.stringify(raw.slice(0, 300))}; find a port by MAC address with GET /v1/ports?address=`);
  return raw.toLowerCase();
}

/** Ironic refuses an empty physical network (null means none). */
function checkPhysnet(value: unknown): void {
  if (value === '') throw new InvalidParameter('physical_network: a non-empty value is required when setting physical_network');
}

/**
 * Ironic's port rules of 1.53 and 1.64: a Smart NIC port names its NIC's `port_id` and `hostname`
 * in `local_link_connection` (400 otherwise), and `local_link_connection.network_type` is refused
 * with 406 below 1.64.
 */
function checkSmartnicAndNetworkType(isSmartnic: unknown, link: unknown, version: Microversion, linkSent: boolean): void {
  const llc = (typeof link === 'object' && link !== null ? link : {}) as Record<string, unknown>;
  if (linkSent && Object.hasOwn(llc, 'network_type') && compareVersions(version, NETWORK_TYPE_SINCE) < 0) {
    throw new NotAcceptable(`local_link_connection.network_type: needs API version ${formatVersion(NETWORK_TYPE_SINCE)} or later`);
  }
  if (isSmartnic === true && (typeof llc.port_id !== 'string' || typeof llc.hostname !== 'string')) {
    throw new InvalidParameter('is_smartnic: a Smart NIC port must have port_id and hostname in local_link_connection');
  }
}

/** A group whose ports must not network-boot on their own takes no port with pxe_enabled (409, Ironic's). */
function checkStandalone(group: PortgroupRow, pxeEnabled: boolean | undefined): void {
  if (pxeEnabled === true && !group.standalone_ports_supported) {
    throw new Conflict(`port group ${group.uuid} doesn't support standalone ports; a port with pxe_enabled true cannot be a member of it`);
  }
}

export function portRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const limits = jsonFieldLimits(config);

  interface Parent {
    node?: string;
    portgroup?: string;
  }

  async function list(request: FastifyRequest<{ Querystring: Query }>, parent: Parent, detailPath: boolean) {
    const q = request.query;
    const valid = fieldsAt(request.apiVersion);
    const fields = parseFields(q.fields, valid, 'port', ALL_PORT_FIELDS);
    const detail = detailPath || (parseBool('detail', q.detail) ?? false);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a port uuid, got ${JSON.stringify(q.marker)}`);
    if (q.node_uuid !== undefined && !UUID_PATTERN.test(q.node_uuid)) throw new InvalidParameter(`node_uuid: expected a UUID, got ${JSON.stringify(q.node_uuid)}`);
    const nodeIdent = parent.node ?? q.node ?? q.node_uuid;
    const groupIdent = parent.portgroup ?? q.portgroup;
    if (q.portgroup !== undefined) requireVersion(request.apiVersion, PORTGROUP_FILTER_SINCE, 'portgroup');
    if (nodeIdent !== undefined && groupIdent !== undefined) throw new InvalidParameter('node and portgroup: name one of them, not both');
    const nodeId = nodeIdent === undefined ? undefined : (await getNode(store, nodeIdent)).id;
    const portgroupId = groupIdent === undefined ? undefined : (await getPortgroup(store, groupIdent)).id;
    const rows = await listPorts(store, {
      limit,
      sortKey: parseChoice('sort_key', q.sort_key, PORT_SORT_KEYS, 'id'),
      sortDir: parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc'),
      ...(nodeId !== undefined ? { nodeId } : {}),
      ...(portgroupId !== undefined ? { portgroupId } : {}),
      ...(q.address !== undefined ? { address: q.address } : {}),
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
    });
    const base = baseUrl(request, config.api.public_endpoint);
    const shown = fields ?? (detail ? valid : PORT_LIST_FIELDS);
    const body: Record<string, unknown> = { ports: rows.map((p) => renderPort(p, base, shown)) };
    if (rows.length === limit && rows.length > 0) body.next = nextPageLink(base, request, limit, rows[rows.length - 1]!.uuid);
    return body;
  }

  type Parented = { Params: { ident: string }; Querystring: Query };
  const ofGroup = (request: FastifyRequest<Parented>): Parent => {
    requireVersion(request.apiVersion, PORTGROUP_FILTER_SINCE, request.url);
    return { portgroup: request.params.ident };
  };
  app.get<{ Querystring: Query }>('/v1/ports', (request) => list(request, {}, false));
  app.get<{ Querystring: Query }>('/v1/ports/detail', (request) => list(request, {}, true));
  app.get<Parented>('/v1/nodes/:ident/ports', (request) => list(request, { node: request.params.ident }, false));
  app.get<Parented>('/v1/nodes/:ident/ports/detail', (request) => list(request, { node: request.params.ident }, true));
  app.get<Parented>('/v1/portgroups/:ident/ports', (request) => list(request, ofGroup(request), false));
  app.get<Parented>('/v1/portgroups/:ident/ports/detail', (request) => list(request, ofGroup(request), true));

  app.get<One>('/v1/ports/:uuid', async (request) => {
    const fields = parseFields(request.query.fields, fieldsAt(request.apiVersion), 'port', ALL_PORT_FIELDS) ?? fieldsAt(request.apiVersion);
    return renderPort(await getPort(store, portUuid(request.params.uuid)), baseUrl(request, config.api.public_endpoint), fields);
  });

  // Documented by the table's schema, checked by the table itself (see the node route).
  app.post('/v1/ports', { schema: { body: PORT_FIELDS.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
    const input = PORT_FIELDS.create(request.body, request.apiVersion);
    checkJsonFields(input, limits);
    checkPhysnet(input.physical_network);
    checkSmartnicAndNetworkType(input.is_smartnic, input.local_link_connection, request.apiVersion, input.local_link_connection !== undefined);
    const node = await nodeIdForChild(store, input.node_uuid as string);
    let group: PortgroupRow | undefined;
    if (typeof input.portgroup_uuid === 'string') {
      group = await portgroupForPort(store, input.portgroup_uuid);
      if (group.node_id !== node.id) throw portgroupOfOtherNode();
      checkStandalone(group, input.pxe_enabled as boolean | undefined);
      await checkGroupPhysnet(store, group.id, group.uuid, (input.physical_network as string | null | undefined) ?? null);
    }
    const port = await createPort(store, {
      address: input.address as string,
      nodeId: node.id,
      ...(group ? { portgroupId: group.id } : {}),
      ...(input.uuid !== undefined ? { uuid: input.uuid as string } : {}),
      ...(input.pxe_enabled !== undefined ? { pxeEnabled: input.pxe_enabled as boolean } : {}),
      ...(input.physical_network !== undefined ? { physicalNetwork: input.physical_network as string | null } : {}),
      ...(input.local_link_connection !== undefined ? { localLinkConnection: input.local_link_connection as Record<string, unknown> } : {}),
      ...(input.extra !== undefined ? { extra: input.extra as Record<string, unknown> } : {}),
      ...(input.is_smartnic !== undefined ? { isSmartnic: input.is_smartnic as boolean } : {}),
    });
    const base = baseUrl(request, config.api.public_endpoint);
    reply.code(201).header('Location', `${base}/v1/ports/${port.uuid}`);
    return renderPort(port, base, fieldsAt(request.apiVersion));
  });

  app.patch<One>('/v1/ports/:uuid', async (request) => {
    const uuid = portUuid(request.params.uuid);
    const ops = parsePatch(request.body);
    PORT_FIELDS.checkPatchVersion(ops, request.apiVersion);
    const port = await getPort(store, uuid);
    const changed = PORT_FIELDS.applyPatch(port, ops);
    checkJsonFields(changed, limits);
    checkPhysnet(changed.physical_network);
    checkSmartnicAndNetworkType(changed.is_smartnic ?? port.is_smartnic, changed.local_link_connection ?? port.local_link_connection, request.apiVersion, changed.local_link_connection !== undefined);
    const changes: PortChanges = {
      ...(changed.address !== undefined ? { address: changed.address as string } : {}),
      ...(changed.pxe_enabled !== undefined ? { pxeEnabled: changed.pxe_enabled as boolean } : {}),
      ...(changed.physical_network !== undefined ? { physicalNetwork: changed.physical_network as string | null } : {}),
      ...(changed.extra !== undefined ? { extra: changed.extra as Record<string, unknown> } : {}),
      ...(changed.local_link_connection !== undefined ? { localLinkConnection: changed.local_link_connection as Record<string, unknown> } : {}),
      ...(changed.is_smartnic !== undefined ? { isSmartnic: changed.is_smartnic as boolean } : {}),
    };
    const groupChanged = changed.portgroup_uuid !== undefined && changed.portgroup_uuid !== port.portgroup_uuid;
    const groupUuid = groupChanged ? (changed.portgroup_uuid as string | null) : port.portgroup_uuid;
    if (groupChanged) changes.portgroupId = null;
    if (groupUuid !== null && (groupChanged || changes.physicalNetwork !== undefined || changes.pxeEnabled !== undefined)) {
      const group = await portgroupForPort(store, groupUuid);
      if (group.node_id !== port.node_id) throw portgroupOfOtherNode();
      if (groupChanged) changes.portgroupId = group.id;
      checkStandalone(group, changes.pxeEnabled);
      if (groupChanged || changes.physicalNetwork !== undefined) await checkGroupPhysnet(store, group.id, group.uuid, changes.physicalNetwork !== undefined ? changes.physicalNetwork : port.physical_network, port.uuid);
    }
    const updated = await updatePort(store, port.uuid, changes);
    return renderPort(updated, baseUrl(request, config.api.public_endpoint), fieldsAt(request.apiVersion));
  });

  app.delete<One>('/v1/ports/:uuid', async (request, reply) => {
    const uuid = portUuid(request.params.uuid);
    // Ironic's: a port bound to a VIF is kept (409) unless its node is in maintenance; detach first.
    const port = await getPort(store, uuid);
    const vif = port.internal_info.tenant_vif_port_id;
    if (typeof vif === 'string' && !(await nodeIdForChild(store, port.node_uuid)).maintenance) {
      throw new Conflict(`Cannot delete the port ${port.uuid} as it is bound to VIF ${vif} for tenant use; detach it first (DELETE /v1/nodes/${port.node_uuid}/vifs/${vif})`);
    }
    await deletePort(store, uuid);
    return reply.code(204).send();
  });
}
