/**
 * `/v1/allocations` and `/v1/nodes/{node}/allocation` (Ironic's allocation API, 1.52): list (filters
 * `node`, `resource_class`, `state`, `owner` (1.60); fields, limit, marker, sort, next links), show
 * by uuid or name, create, PATCH of `name` and `extra` (1.57), delete; a node's allocation shown and
 * deleted. Older microversions do not see the resource: 404 for GET, 405 for the other verbs, as
 * Ironic answers.
 *
 * A create answers at once with the allocation `allocating`: the conductor the ring gives it to
 * does the allocating (`conductor/allocations.ts`), told by a notification or its next poll. A
 * backfill (1.58: `node` names a deployed node) is done here, synchronously as Ironic's, with the
 * same compare-and-set claim the conductors use, so it cannot race them.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter, MethodNotAllowed, NodeNotFound, NotAcceptable, NotFound } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import {
  ALLOCATIONS_SINCE,
  ALLOCATION_BACKFILL_SINCE,
  ALLOCATION_FIELDS,
  ALLOCATION_OWNER_SINCE,
  ALLOCATION_PATCH_FIELDS,
  ALLOCATION_PATCH_SINCE,
  ALLOCATION_STATES,
} from '../../nodes/allocation-fields.js';
import type { AllocationFieldContext } from '../../nodes/allocation-fields.js';
import { ALLOCATION_SORT_KEYS, allocationOfNode, deleteAllocation, getAllocation, listAllocations, updateAllocation } from '../../nodes/allocation-store.js';
import type { AllocationView } from '../../nodes/allocation-store.js';
import { parsePatch } from '../../nodes/field-table.js';
import { NODE_NAME_PATTERN } from '../../nodes/node-fields.js';
import { getNode } from '../../nodes/node-store.js';
import type { NodeRow } from '../../nodes/node-store.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import { baseUrl, nextPageLink, resourceLinks } from '../links.js';
import { MAX_VERSION, compareVersions, formatVersion, requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseChoice, parseFields, parseLimit } from '../query.js';
import { createAllocationRequest } from './allocation-create.js';

type Query = Record<string, string | undefined>;
type One = { Params: { ident: string }; Querystring: Query };

/** Every allocation field of the newest microversion: one asked for at an older version is 406. */
const ALL_FIELDS = ALLOCATION_FIELDS.fieldsAt(MAX_VERSION);

/** Every view has `links`, asked for or not (Ironic's views keep it through any `fields`). */
function withLinks(fields: readonly string[]): readonly string[] {
  return fields.includes('links') ? fields : [...fields, 'links'];
}

/** An allocation's uuid or logical name from the path: 400 for anything else, as Ironic's `uuid_or_name`. */
function allocationIdent(raw: string): string {
  if (!UUID_PATTERN.test(raw) && !NODE_NAME_PATTERN.test(raw)) throw new InvalidParameter(`allocation: expected a logical name or UUID, got ${JSON.stringify(raw.slice(0, 300))}`);
  return raw;
}

/** 404 below 1.52 for GET, 405 for the other verbs (Ironic's `_route`); 405 for PATCH below 1.57. */
function allowed(request: FastifyRequest, since: Microversion = ALLOCATIONS_SINCE): void {
  if (request.method === 'GET' || request.url.includes('/nodes/')) {
    requireVersion(request.apiVersion, since, request.url);
    return;
  }
  if (compareVersions(request.apiVersion, since) < 0) throw new MethodNotAllowed(`the API version ${formatVersion(request.apiVersion)} does not allow ${request.method} on allocations; it needs ${formatVersion(since)} or later`);
}

/** The node a list or a node's route names; `node` names the query parameter whose unknown node is a 400 (Ironic's). */
async function nodeOf(store: Store, ident: string, parameter?: string): Promise<NodeRow> {
  try {
    return await getNode(store, ident);
  } catch (err) {
    if (parameter !== undefined && err instanceof NodeNotFound) throw new InvalidParameter(`${parameter}: node ${ident} could not be found`);
    throw err;
  }
}

export function allocationRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const limits = jsonFieldLimits(config);
  const retry = { attempts: config.conductor.node_locked_retry_attempts, intervalMs: config.conductor.node_locked_retry_interval * 1000 };
  const context = (request: FastifyRequest): AllocationFieldContext => {
    const base = baseUrl(request, config.api.public_endpoint);
    return { links: (collection, id) => resourceLinks(base, collection, id) };
  };
  const fieldsOf = (request: FastifyRequest<{ Querystring: Query }>) => {
    const fields = parseFields(request.query.fields, ALLOCATION_FIELDS.fieldsAt(request.apiVersion), 'allocation', ALL_FIELDS);
    return fields && withLinks(fields);
  };
  const render = (request: FastifyRequest, row: AllocationView, fields?: readonly string[]) =>
    ALLOCATION_FIELDS.render(row, context(request), fields ?? ALLOCATION_FIELDS.fieldsAt(request.apiVersion));

  app.get<{ Querystring: Query }>('/v1/allocations', async (request) => {
    allowed(request);
    const q = request.query;
    const fields = fieldsOf(request);
    if (q.owner !== undefined) requireOwnerVersion(request.apiVersion);
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected an allocation uuid, got ${JSON.stringify(q.marker)}`);
    if (q.sort_key !== undefined && ['extra', 'candidate_nodes', 'traits'].includes(q.sort_key)) throw new InvalidParameter(`sort_key: ${q.sort_key} is an invalid field for sorting`);
    const nodeId = q.node === undefined ? undefined : (await nodeOf(store, q.node, 'node')).id;
    const rows = await listAllocations(store, {
      limit,
      sortKey: parseChoice('sort_key', q.sort_key, ALLOCATION_SORT_KEYS, 'id'),
      sortDir: parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc'),
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
      filters: {
        ...(nodeId !== undefined ? { nodeId } : {}),
        ...(q.resource_class !== undefined ? { resourceClass: q.resource_class } : {}),
        ...(q.state !== undefined ? { state: parseChoice('state', q.state, ALLOCATION_STATES, 'allocating') } : {}),
        ...(q.owner !== undefined ? { owner: q.owner } : {}),
      },
    });
    const ctx = context(request);
    const shown = fields ?? ALLOCATION_FIELDS.fieldsAt(request.apiVersion);
    const body: Record<string, unknown> = { allocations: rows.map((a) => ALLOCATION_FIELDS.render(a, ctx, shown)) };
    if (rows.length === limit && rows.length > 0) body.next = nextPageLink(baseUrl(request, config.api.public_endpoint), request, limit, rows[rows.length - 1]!.uuid);
    return body;
  });

  app.get<One>('/v1/allocations/:ident', async (request) => {
    allowed(request);
    const fields = fieldsOf(request);
    return render(request, await getAllocation(store, allocationIdent(request.params.ident)), fields);
  });

  // Documented by the table's schema, checked by the table itself (see the node route).
  app.post('/v1/allocations', { schema: { body: ALLOCATION_FIELDS.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
    allowed(request);
    const allocation = await createAllocationRequest(store, request.body, request.apiVersion, { limits, retry, backfillSince: ALLOCATION_BACKFILL_SINCE });
    reply.code(201).header('Location', `${baseUrl(request, config.api.public_endpoint)}/v1/allocations/${allocation.uuid}`);
    return render(request, allocation);
  });

  app.patch<One>('/v1/allocations/:ident', async (request) => {
    allowed(request);
    allowed(request, ALLOCATION_PATCH_SINCE);
    const ops = parsePatch(request.body);
    for (const op of ops) {
      const field = op.path.split('/')[1]!;
      if (field === 'owner') requireOwnerVersion(request.apiVersion);
      if (!(ALLOCATION_PATCH_FIELDS as readonly string[]).includes(field)) {
        throw new InvalidParameter(`${op.path}: cannot be changed on an allocation; only the following can be updated: ${ALLOCATION_PATCH_FIELDS.join(', ')}`);
      }
    }
    const allocation = await getAllocation(store, allocationIdent(request.params.ident));
    ALLOCATION_FIELDS.checkPatchVersion(ops, request.apiVersion, allocation);
    const changed = ALLOCATION_FIELDS.applyPatch(allocation, ops);
    if (changed.extra !== undefined) checkJsonField('extra', changed.extra, limits);
    return render(request, await updateAllocation(store, allocation, changed as { name?: string | null; extra?: Record<string, unknown> }));
  });

  app.delete<One>('/v1/allocations/:ident', async (request, reply) => {
    allowed(request);
    await deleteAllocation(store, allocationIdent(request.params.ident), retry);
    return reply.code(204).send();
  });

  /** The allocation of the node named in the path; 404 when it has none. */
  async function ofNode(ident: string): Promise<AllocationView> {
    const node = await nodeOf(store, ident);
    const allocation = await allocationOfNode(store, node.id);
    if (allocation === undefined) throw new NotFound(`allocation for node ${ident} was not found`);
    return allocation;
  }

  app.get<One>('/v1/nodes/:ident/allocation', async (request) => {
    allowed(request);
    const fields = fieldsOf(request);
    return render(request, await ofNode(request.params.ident), fields);
  });

  app.delete<One>('/v1/nodes/:ident/allocation', async (request, reply) => {
    allowed(request);
    await deleteAllocation(store, (await ofNode(request.params.ident)).uuid, retry);
    return reply.code(204).send();
  });
}

/** 406 for `owner` (a filter, a patch) below 1.60, as Ironic's `NotAcceptable`. */
function requireOwnerVersion(version: Microversion): void {
  if (compareVersions(version, ALLOCATION_OWNER_SINCE) < 0) {
    throw new NotAcceptable(`owner: needs API version ${formatVersion(ALLOCATION_OWNER_SINCE)} or later`);
  }
}
