/**
 * `/v1/nodes`: list (fields, limit, marker, sort, detail, filters, next links), show by uuid or
 * name, create; and a chassis's nodes (`/v1/chassis/{uuid}/nodes`), the same list. Changes to
 * existing nodes go to the node's conductor (see `node-actions.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { nodeOwners } from '../../cluster/conductor-rings.js';
import type { ConductorRings } from '../../cluster/conductor-rings.js';
import { InvalidParameter, NotAcceptable } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { DriverRegistry } from '../../drivers/index.js';
import { getChassis } from '../../nodes/chassis-store.js';
import { NODE_INTERFACE_FIELDS } from '../../nodes/node-fields.js';
import { NODE_SORT_KEYS, createNode, getNode, listNodes } from '../../nodes/node-store.js';
import type { NewNode, NodeFilters, NodeListQuery, NodeRow } from '../../nodes/node-store.js';
import { PROVISION_STATES } from '../../nodes/states.js';
import { initialProvisionState } from '../../nodes/state-machine.js';
import { baseUrl, nextPageLink } from '../links.js';
import { jsonFieldLimits } from '../json-fields.js';
import { MAX_VERSION, compareVersions, formatVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';
import { NODE_FIELDS, NODE_LIST_FIELDS, columnsFor, fieldsAt, renderNode } from '../views/node.js';

/** Every node field of the newest microversion: one asked for at an older version is 406. */
const ALL_NODE_FIELDS = fieldsAt(MAX_VERSION);
import type { NodeViewContext } from '../views/node.js';
import { validateNewNode } from './node-input.js';

export interface NodeRouteOptions {
  store: Store;
  config: Config;
  /** Validates drivers and interfaces (400 listing the valid names) and fills in default interfaces. */
  drivers: DriverRegistry;
  /** The conductors' live rings: each node's `conductor`, `conductor_replicas` and `conductor_affinity`. */
  rings: ConductorRings;
}

type ListQuery = Record<string, string | undefined>;

/** Candidate nodes read per query when filtering by conductor (at least a page). */
const OWNER_SCAN_BATCH = 200;

/**
 * Builds the view context of a request: base URL, microversion and the live owner of each node —
 * from the rings as kept (`current`) or, for the answer to a change, as read afresh (`fresh`).
 */
function viewContextFor(rings: ConductorRings, config: Config, read: 'current' | 'fresh' = 'current') {
  return async (request: FastifyRequest): Promise<NodeViewContext> => {
    const lookup = nodeOwners(read === 'fresh' ? await rings.fresh() : await rings.current(), config.conductor.replicas);
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
export function nodeView(rings: ConductorRings, config: Config, read: 'current' | 'fresh' = 'current') {
  const viewContext = viewContextFor(rings, config, read);
  return async (request: FastifyRequest, node: NodeRow) => renderNode(node, await viewContext(request));
}

export function nodeRoutes(app: FastifyInstance, options: NodeRouteOptions): void {
  const { store, config } = options;
  const viewContext = viewContextFor(options.rings, config);
  const fieldLimits = jsonFieldLimits(config);

  /**
   * One page of the nodes the ring gives to `conductor`, in order. Ownership is no column, so pages of
   * candidates are read and sifted until the page is full or the candidates run out; unlike Ironic
   * (which sifts a single page), a page is never short while more nodes match.
   */
  async function listOwnedBy(conductor: string, query: NodeListQuery, ownerOf: (node: NodeRow) => string | null): Promise<NodeRow[]> {
    const out: NodeRow[] = [];
    const batch = Math.max(query.limit, OWNER_SCAN_BATCH);
    let marker = query.marker;
    for (;;) {
      const rows = await listNodes(store, { ...query, limit: batch, ...(marker !== undefined ? { marker } : {}) });
      for (const row of rows) {
        if (ownerOf(row) !== conductor) continue;
        out.push(row);
        if (out.length === query.limit) return out;
      }
      if (rows.length < batch) return out;
      marker = rows[rows.length - 1]!.uuid;
    }
  }

  /** The row id of the chassis a node list is limited to: 400 for no uuid, 404 for no such chassis, as Ironic. */
  async function chassisFilter(uuid: string): Promise<number> {
    if (!UUID_PATTERN.test(uuid)) throw new InvalidParameter(`chassis_uuid: expected a UUID, got ${JSON.stringify(uuid)}`);
    return (await getChassis(store, uuid)).id;
  }

  /** A page of nodes; `chassis` (a uuid from the path) limits it to that chassis's nodes, as `?chassis_uuid=`. */
  async function list(request: FastifyRequest<{ Querystring: ListQuery }>, forceDetail: boolean, chassis?: string) {
    const q = request.query;
    const valid = fieldsAt(request.apiVersion);
    const fields = parseFields(q.fields, valid, 'node', ALL_NODE_FIELDS);
    const detail = forceDetail || (parseBool('detail', q.detail) ?? false);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a node uuid, got ${JSON.stringify(q.marker)}`);
    // A field an older client cannot see is no sort key for it either: 406, as Ironic's check_allowed_fields.
    const sortSince = q.sort_key === undefined ? undefined : NODE_FIELDS.since(q.sort_key);
    if (sortSince !== undefined && !valid.includes(q.sort_key!)) {
      throw new NotAcceptable(`sort_key: ${q.sort_key} needs API version ${formatVersion(sortSince)} or later`);
    }
    const sortKey = parseChoice('sort_key', q.sort_key === 'id' ? 'created_at' : q.sort_key, NODE_SORT_KEYS, 'created_at');
    const sortDir = parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc');
    const filters = parseNodeFilters(q, request.apiVersion);
    const chassisUuid = chassis ?? q.chassis_uuid;
    if (chassisUuid !== undefined) filters.chassis_id = await chassisFilter(chassisUuid);

    const shown = fields ?? (detail ? undefined : [...NODE_LIST_FIELDS]);
    const columns = shown ? columnsFor(shown) : undefined;
    const ctx = await viewContext(request);
    const listQuery = {
      limit,
      sortKey,
      sortDir,
      filters,
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
      // The conductor filter reads each node's place on the ring: its uuid and group.
      ...(columns ? { columns: q.conductor === undefined ? columns : [...new Set([...columns, 'uuid', 'conductor_group'] as const)] } : {}),
    };
    const rows = q.conductor === undefined ? await listNodes(store, listQuery) : await listOwnedBy(q.conductor, listQuery, ctx.conductorOf);
    const body: Record<string, unknown> = { nodes: rows.map((n) => renderNode(n, ctx, shown, detail)) };
    if (rows.length === limit && rows.length > 0) body.next = nextPageLink(ctx.base, request, limit, rows[rows.length - 1]!.uuid);
    return body;
  }

  app.get<{ Querystring: ListQuery }>('/v1/nodes', (request) => list(request, false));
  app.get<{ Querystring: ListQuery }>('/v1/nodes/detail', (request) => list(request, true));
  // A chassis's nodes, as Ironic serves them under the chassis.
  app.get<{ Params: { uuid: string }; Querystring: ListQuery }>('/v1/chassis/:uuid/nodes', (request) => list(request, false, request.params.uuid));
  app.get<{ Params: { uuid: string }; Querystring: ListQuery }>('/v1/chassis/:uuid/nodes/detail', (request) => list(request, true, request.params.uuid));

  app.get<{ Params: { ident: string }; Querystring: { fields?: string } }>('/v1/nodes/:ident', async (request) => {
    const fields = parseFields(request.query.fields, fieldsAt(request.apiVersion), 'node', ALL_NODE_FIELDS);
    // Both reads at once: the node and the live conductors are independent round trips.
    const [node, ctx] = await Promise.all([getNode(store, request.params.ident), viewContext(request)]);
    return renderNode(node, ctx, fields);
  });

  // The body schema documents the table's create fields; the table checks bodies itself, so that a
  // refusal names the field as Ironic's do (and a newer field answers 406, which a schema cannot say).
  app.post('/v1/nodes', { schema: { body: NODE_FIELDS.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
    const input = validateNewNode(request.body, request.apiVersion, fieldLimits);
    const requested = Object.fromEntries(NODE_INTERFACE_FIELDS.map((f) => [f, (input as Record<string, unknown>)[f] as string | null | undefined]));
    const interfaces = options.drivers.validateInterfaces(input.driver, requested);
    const values: NewNode = { ...input, ...interfaces, provision_state: initialProvisionState(request.apiVersion) };
    const node = await createNode(store, values);
    const ctx = await viewContext(request);
    reply.code(201).header('Location', `${ctx.base}/v1/nodes/${node.uuid}`);
    return renderNode(node, ctx);
  });
}

/** Filters and the microversion each appeared in: older clients get 406, as from Ironic. */
const FILTER_SINCE: ReadonlyArray<readonly [string, Microversion]> = [
  ['provision_state', [1, 9]], ['driver', [1, 16]], ['resource_class', [1, 21]], ['fault', [1, 42]], ['conductor_group', [1, 46]], ['conductor', [1, 49]],
  ['owner', [1, 50]], ['description_contains', [1, 51]], ['lessee', [1, 65]], ['shard', [1, 82]], ['sharded', [1, 82]],
];

/** Most shards one `?shard=` may name. */
export const MAX_SHARD_FILTER = 100;

/** `?shard=a,b`: the distinct names, trimmed and in lower case, as Ironic's string list. */
function parseShards(raw: string): string[] {
  const names = [...new Set(raw.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== ''))];
  if (names.length > MAX_SHARD_FILTER) throw new InvalidParameter(`shard: at most ${MAX_SHARD_FILTER} shards, got ${names.length}`);
  if (names.some((s) => s.length > 255)) throw new InvalidParameter('shard: a shard name has at most 255 characters');
  return names;
}

/**
 * Ironic's node faults (`ironic.common.faults.VALID_FAULTS`). ironring records none, so a valid fault
 * matches no node; an unknown one is refused rather than silently matching nothing.
 */
const NODE_FAULTS = ['power failure', 'clean failure', 'rescue abort failure'] as const;

/** The store filters of a node list query; 406 for a filter newer than the request, 400 for a bad value. */
function parseNodeFilters(q: ListQuery, version: Microversion): NodeFilters {
  for (const [name, since] of FILTER_SINCE) {
    if (q[name] !== undefined && compareVersions(version, since) < 0) {
      throw new NotAcceptable(`${name}: filtering nodes by ${name} needs API version ${formatVersion(since)} or later`);
    }
  }
  const filters: NodeFilters = {};
  if (q.provision_state !== undefined) {
    filters.provision_state = parseChoice('provision_state', q.provision_state, PROVISION_STATES, 'enroll');
  }
  for (const key of ['driver', 'conductor_group', 'resource_class', 'instance_uuid', 'owner', 'description_contains', 'lessee', 'project'] as const) {
    if (q[key] !== undefined) filters[key] = q[key];
  }
  const maintenance = parseBool('maintenance', q.maintenance);
  if (maintenance !== undefined) filters.maintenance = maintenance;
  // Neither `retired` nor `project` needs a microversion in Ironic's API.
  const retired = parseBool('retired', q.retired);
  if (retired !== undefined) filters.retired = retired;
  if (q.shard !== undefined) filters.shard = parseShards(q.shard);
  const sharded = parseBool('sharded', q.sharded);
  if (sharded !== undefined) filters.sharded = sharded;
  const associated = parseBool('associated', q.associated);
  if (associated !== undefined) filters.associated = associated;
  if (q.fault !== undefined) {
    filters.fault = parseChoice('fault', q.fault, NODE_FAULTS, 'power failure');
  }
  return filters;
}
