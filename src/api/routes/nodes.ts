/**
 * `/v1/nodes`: list (fields, limit, marker, sort, detail, filters, next links), show by uuid or
 * name, create. Changes to existing nodes go to the node's conductor (see `node-actions.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { conductorRingOptions } from '../../cluster/ring-options.js';
import { InvalidParameter } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import type { DriverRegistry } from '../../drivers/index.js';
import { NODE_SORT_KEYS, UUID_PATTERN, createNode, getNode, listNodes } from '../../nodes/node-store.js';
import type { NewNode, NodeFilters, NodeRow } from '../../nodes/node-store.js';
import { initialProvisionState } from '../../nodes/state-machine.js';
import { baseUrl } from '../links.js';
import { jsonFieldLimits } from '../json-fields.js';
import { LiveOwners } from '../live-owners.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';
import { NODE_LIST_FIELDS, columnsFor, fieldsAt, renderNode } from '../views/node.js';
import type { NodeViewContext } from '../views/node.js';
import { validateNewNode } from './node-input.js';

export interface NodeRouteOptions {
  store: Store;
  config: Config;
  /** Validates drivers and interfaces (400 listing the valid names) and fills in default interfaces. */
  drivers: DriverRegistry;
}

type ListQuery = Record<string, string | undefined>;

/** The owners an API shows, from the `[conductor]` settings (see `live-owners.ts`); `maxAgeMs` 0 reads afresh. */
export function liveOwnersFor(store: Store, config: Config, maxAgeMs?: number): LiveOwners {
  const { conductor } = config;
  return new LiveOwners(store, { heartbeatTimeout: conductor.heartbeat_timeout, ring: conductorRingOptions(conductor), replicas: conductor.replicas }, maxAgeMs);
}

/** Builds the view context of a request: base URL, microversion and the live owner of each node. */
function viewContextFor(owners: LiveOwners, config: Config) {
  return async (request: FastifyRequest): Promise<NodeViewContext> => {
    const lookup = await owners.get();
    return {
      base: baseUrl(request, config.api.public_endpoint),
      version: request.apiVersion,
      conductorOf: lookup.owner,
      replicasOf: lookup.replicas,
      conductorName: lookup.hostname,
    };
  };
}

/** Renders one node in full for a request (used after changes too). */
export function nodeView(owners: LiveOwners, config: Config) {
  const viewContext = viewContextFor(owners, config);
  return async (request: FastifyRequest, node: NodeRow) => renderNode(node, await viewContext(request));
}

export function nodeRoutes(app: FastifyInstance, options: NodeRouteOptions): void {
  const { store, config } = options;
  const owners = liveOwnersFor(store, config);
  app.addHook('onClose', async () => {
    await owners.close();
  });
  const viewContext = viewContextFor(owners, config);
  const fieldLimits = jsonFieldLimits(config);

  async function list(request: FastifyRequest<{ Querystring: ListQuery }>, forceDetail: boolean) {
    const q = request.query;
    const valid = fieldsAt(request.apiVersion);
    const fields = parseFields(q.fields, valid, 'node');
    const detail = forceDetail || (parseBool('detail', q.detail) ?? false);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a node uuid, got ${JSON.stringify(q.marker)}`);
    const sortKey = parseChoice('sort_key', q.sort_key === 'id' ? 'created_at' : q.sort_key, NODE_SORT_KEYS, 'created_at');
    const sortDir = parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc');
    const filters: NodeFilters = {};
    for (const key of ['provision_state', 'driver', 'conductor_group', 'resource_class', 'instance_uuid'] as const) {
      if (q[key] !== undefined) filters[key] = q[key];
    }
    const maintenance = parseBool('maintenance', q.maintenance);
    if (maintenance !== undefined) filters.maintenance = maintenance;
    const associated = parseBool('associated', q.associated);
    if (associated !== undefined) filters.associated = associated;

    const shown = fields ?? (detail ? undefined : [...NODE_LIST_FIELDS]);
    const [rows, ctx] = await Promise.all([listNodes(store, {
      limit,
      sortKey,
      sortDir,
      filters,
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
      ...(shown ? { columns: columnsFor(shown) } : {}),
    }), viewContext(request)]);
    const body: Record<string, unknown> = { nodes: rows.map((n) => renderNode(n, ctx, shown, detail)) };
    if (rows.length === limit && rows.length > 0) body.next = nextLink(ctx.base, request, limit, rows[rows.length - 1]!);
    return body;
  }

  app.get<{ Querystring: ListQuery }>('/v1/nodes', (request) => list(request, false));
  app.get<{ Querystring: ListQuery }>('/v1/nodes/detail', (request) => list(request, true));

  app.get<{ Params: { ident: string }; Querystring: { fields?: string } }>('/v1/nodes/:ident', async (request) => {
    const fields = parseFields(request.query.fields, fieldsAt(request.apiVersion), 'node');
    // Both reads at once: the node and the live conductors are independent round trips.
    const [node, ctx] = await Promise.all([getNode(store, request.params.ident), viewContext(request)]);
    return renderNode(node, ctx, fields);
  });

  app.post('/v1/nodes', async (request, reply) => {
    const input = validateNewNode(request.body, request.apiVersion, fieldLimits);
    const interfaces = options.drivers.validateInterfaces(input.driver, {
      boot_interface: input.boot_interface, console_interface: input.console_interface, deploy_interface: input.deploy_interface,
      inspect_interface: input.inspect_interface, management_interface: input.management_interface, network_interface: input.network_interface,
      power_interface: input.power_interface, rescue_interface: input.rescue_interface, vendor_interface: input.vendor_interface,
    });
    const values: NewNode = { ...input, ...interfaces, provision_state: initialProvisionState(request.apiVersion) };
    const node = await createNode(store, values);
    const ctx = await viewContext(request);
    reply.code(201).header('Location', `${ctx.base}/v1/nodes/${node.uuid}`);
    return renderNode(node, ctx);
  });
}

function nextLink(base: string, request: FastifyRequest<{ Querystring: ListQuery }>, limit: number, last: NodeRow): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(request.query)) if (v !== undefined && k !== 'marker' && k !== 'limit') params.set(k, v);
  params.set('limit', String(limit));
  params.set('marker', last.uuid);
  const path = request.url.split('?')[0]!.replace(/\/+$/, '');
  return `${base}${path}?${params.toString()}`;
}
