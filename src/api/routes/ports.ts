/** `/v1/ports` and `/v1/nodes/{node}/ports`: list (filter by node and address), show, create, delete. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter } from '../../common/errors.js';
import { cloneJson } from '../../common/json-safety.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import { getNode } from '../../nodes/node-store.js';
import { parsePatch, pathTokens } from '../../nodes/node-patch.js';
import { PORT_SORT_KEYS, createPort, deletePort, getPort, listPorts, updatePort } from '../../nodes/port-store.js';
import type { PortChanges, PortRow } from '../../nodes/port-store.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import type { JsonFieldLimits } from '../json-fields.js';
import { apiTime, baseUrl, resourceLinks } from '../links.js';
import { compareVersions } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

const PORT_FIELDS: Readonly<Record<string, Microversion>> = {
  uuid: [1, 1], address: [1, 1], node_uuid: [1, 1], extra: [1, 1], created_at: [1, 1], updated_at: [1, 1],
  internal_info: [1, 18], local_link_connection: [1, 19], pxe_enabled: [1, 19], portgroup_uuid: [1, 24], physical_network: [1, 34],
};
const LIST_FIELDS = ['uuid', 'address'];

function fieldsAt(version: Microversion): string[] {
  return Object.entries(PORT_FIELDS).filter(([, since]) => compareVersions(version, since) >= 0).map(([f]) => f);
}

function renderPort(port: PortRow, base: string, fields: readonly string[]): Record<string, unknown> {
  const all: Record<string, unknown> = {
    uuid: port.uuid,
    address: port.address,
    node_uuid: port.node_uuid,
    extra: port.extra,
    created_at: apiTime(port.created_at),
    updated_at: apiTime(port.updated_at),
    // Conductor-private data (Ironic keeps e.g. cleaning VIFs here); ironring keeps none.
    internal_info: {},
    local_link_connection: port.local_link_connection,
    pxe_enabled: port.pxe_enabled,
    // ironring has no port groups.
    portgroup_uuid: null,
    physical_network: port.physical_network,
  };
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f] = all[f];
  out.links = resourceLinks(base, 'ports', port.uuid);
  return out;
}

type Query = Record<string, string | undefined>;

/** The keys Ironic accepts in a port's `local_link_connection` (LLDP data of the switch port). */
export const LOCAL_LINK_CONNECTION_KEYS = ['switch_id', 'port_id', 'switch_info', 'network_type'] as const;
const NETWORK_TYPES = ['managed', 'unmanaged'];

/** One `local_link_connection` entry: a known key with a string value; 400 naming the path otherwise. */
function checkLocalLinkEntry(path: string, key: string, value: unknown): void {
  if (!(LOCAL_LINK_CONNECTION_KEYS as readonly string[]).includes(key)) {
    throw new InvalidParameter(`${path}: unknown local_link_connection key ${JSON.stringify(key)}; valid keys: ${LOCAL_LINK_CONNECTION_KEYS.join(', ')}`);
  }
  if (typeof value !== 'string') throw new InvalidParameter(`${path}: expected a string`);
  if (key === 'network_type' && !NETWORK_TYPES.includes(value)) throw new InvalidParameter(`${path}: expected one of ${NETWORK_TYPES.join(', ')}, got ${JSON.stringify(value)}`);
}

/** A whole `local_link_connection` and a port's `extra`: known keys, within the JSON field limits. */
function checkPortFields(extra: unknown, llc: unknown, limits: JsonFieldLimits): void {
  if (extra !== undefined) checkJsonField('extra', extra, limits);
  if (llc !== undefined) {
    for (const [key, value] of Object.entries(llc as Record<string, unknown>)) checkLocalLinkEntry(`local_link_connection.${key}`, key, value);
    checkJsonField('local_link_connection', llc, limits);
  }
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
    const shown = fields ?? (detail ? valid : LIST_FIELDS);
    const body: Record<string, unknown> = { ports: rows.map((p) => renderPort(p, base, shown)) };
    if (rows.length === limit && rows.length > 0) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(q)) if (v !== undefined && k !== 'marker' && k !== 'limit') params.set(k, v);
      params.set('limit', String(limit));
      params.set('marker', rows[rows.length - 1]!.uuid);
      body.next = `${base}${request.url.split('?')[0]}?${params.toString()}`;
    }
    return body;
  }

  app.get<{ Querystring: Query }>('/v1/ports', (request) => list(request, undefined, false));
  app.get<{ Querystring: Query }>('/v1/ports/detail', (request) => list(request, undefined, true));
  app.get<{ Params: { ident: string }; Querystring: Query }>('/v1/nodes/:ident/ports', (request) => list(request, request.params.ident, false));

  app.get<{ Params: { ident: string }; Querystring: Query }>('/v1/ports/:ident', async (request) => {
    const fields = parseFields(request.query.fields, fieldsAt(request.apiVersion), 'port') ?? fieldsAt(request.apiVersion);
    return renderPort(await getPort(store, request.params.ident), baseUrl(request, config.api.public_endpoint), fields);
  });

  app.post('/v1/ports', async (request, reply) => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object');
    const input = body as Record<string, unknown>;
    const valid = new Set(['uuid', 'address', 'node_uuid', 'extra', ...fieldsAt(request.apiVersion).filter((f) => ['pxe_enabled', 'local_link_connection', 'physical_network'].includes(f))]);
    for (const key of Object.keys(input)) if (!valid.has(key)) throw new InvalidParameter(`${key}: unknown or read-only field for a new port`);
    if (typeof input.node_uuid !== 'string') throw new InvalidParameter('node_uuid: required, the uuid of the port\'s node');
    if (input.uuid !== undefined && (typeof input.uuid !== 'string' || !UUID_PATTERN.test(input.uuid))) throw new InvalidParameter('uuid: expected a UUID');
    for (const f of ['extra', 'local_link_connection'] as const) {
      const v = input[f];
      if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) throw new InvalidParameter(`${f}: expected a JSON object`);
    }
    checkPortFields(input.extra, input.local_link_connection, limits);
    // The stock client sends `--pxe-enabled false` as the string "false"; Ironic's boolean type takes both.
    const pxeEnabled = typeof input.pxe_enabled === 'string' ? parseBool('pxe_enabled', input.pxe_enabled) : input.pxe_enabled;
    if (pxeEnabled !== undefined && typeof pxeEnabled !== 'boolean') throw new InvalidParameter('pxe_enabled: expected true or false');
    if (input.physical_network !== undefined && input.physical_network !== null && (typeof input.physical_network !== 'string' || input.physical_network.length > 64)) {
      throw new InvalidParameter('physical_network: expected a string of at most 64 characters');
    }
    const node = await getNode(store, input.node_uuid);
    const port = await createPort(store, {
      address: input.address as string,
      nodeId: node.id,
      ...(input.uuid !== undefined ? { uuid: input.uuid as string } : {}),
      ...(pxeEnabled !== undefined ? { pxeEnabled } : {}),
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
    const port = await getPort(store, request.params.ident);
    const changes: PortChanges = {};
    // Copies without a prototype: a key never reaches one (parsePatch refused prototype names too).
    const extra = cloneJson(port.extra);
    const llc = cloneJson(port.local_link_connection);
    for (const op of ops) {
      const [field, ...rest] = pathTokens(op.path);
      const value = op.op === 'remove' ? undefined : op.value;
      if ((field === 'extra' || field === 'local_link_connection') && rest.length > 0) {
        const bag = field === 'extra' ? extra : llc;
        const key = rest.join('/');
        if (op.op === 'remove') {
          if (!Object.hasOwn(bag, key)) throw new InvalidParameter(`${op.path}: no such key to remove`);
          delete bag[key];
        } else {
          if (op.op === 'replace' && !Object.hasOwn(bag, key)) throw new InvalidParameter(`${op.path}: no such key to replace (use add)`);
          if (field === 'local_link_connection') checkLocalLinkEntry(op.path, key, value);
          bag[key] = cloneJson(value);
        }
        if (field === 'extra') changes.extra = extra;
        else changes.localLinkConnection = llc;
      } else if (field === 'address' && rest.length === 0 && op.op !== 'remove') {
        changes.address = String(value);
      } else if (field === 'pxe_enabled' && rest.length === 0 && op.op !== 'remove') {
        const flag = value === true || value === 'true' ? true : value === false || value === 'false' ? false : undefined;
        if (flag === undefined) throw new InvalidParameter(`${op.path}: expected true or false`);
        changes.pxeEnabled = flag;
      } else if (field === 'physical_network' && rest.length === 0) {
        if (value !== undefined && value !== null && (typeof value !== 'string' || value.length > 64)) throw new InvalidParameter(`${op.path}: expected a string of at most 64 characters`);
        changes.physicalNetwork = (value as string | undefined) ?? null;
      } else {
        throw new InvalidParameter(`${op.path}: cannot be changed on a port`);
      }
    }
    checkPortFields(changes.extra, changes.localLinkConnection, limits);
    const updated = await updatePort(store, port.uuid, changes);
    return renderPort(updated, baseUrl(request, config.api.public_endpoint), fieldsAt(request.apiVersion));
  });

  app.delete<{ Params: { ident: string } }>('/v1/ports/:ident', async (request, reply) => {
    const port = await getPort(store, request.params.ident);
    await deletePort(store, port.uuid);
    return reply.code(204).send();
  });
}
