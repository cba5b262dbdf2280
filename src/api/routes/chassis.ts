/**
 * `/v1/chassis`: list (fields, limit, marker, sort, detail, next links), show, create, JSON Patch
 * and delete, with Ironic's semantics: a chassis is found by uuid only, a duplicate uuid is 409,
 * and a chassis that nodes still belong to cannot be deleted (400). Its nodes are listed at
 * `/v1/chassis/{uuid}/nodes`, served with the node list (`nodes.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { CHASSIS_FIELDS, CHASSIS_LIST_FIELDS } from '../../nodes/chassis-fields.js';
import type { ChassisFieldContext } from '../../nodes/chassis-fields.js';
import { CHASSIS_SORT_KEYS, createChassis, deleteChassis, getChassis, listChassis, updateChassis } from '../../nodes/chassis-store.js';
import type { ChassisRow, ChassisValues } from '../../nodes/chassis-store.js';
import { parsePatch } from '../../nodes/field-table.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import { baseUrl, nextPageLink, resourceLinks } from '../links.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

type Query = Record<string, string | undefined>;
type One = { Params: { uuid: string }; Querystring: Query };

/** Every view has `links`, asked for or not (Ironic's views keep it through any `fields`). */
function withLinks(fields: readonly string[]): readonly string[] {
  return fields.includes('links') ? fields : [...fields, 'links'];
}

/** A chassis uuid from the path: 400 for anything else, as Ironic's (which finds chassis by uuid only). */
function chassisUuid(raw: string): string {
  if (!UUID_PATTERN.test(raw)) throw new InvalidParameter(`chassis_uuid: expected a UUID, got ${JSON.stringify(raw)}`);
  return raw.toLowerCase();
}

export function chassisRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const limits = jsonFieldLimits(config);
  const context = (request: FastifyRequest): ChassisFieldContext => {
    const base = baseUrl(request, config.api.public_endpoint);
    return { links: (collection, id) => resourceLinks(base, collection, id) };
  };
  const render = (request: FastifyRequest, row: ChassisRow, fields?: readonly string[]) =>
    CHASSIS_FIELDS.render(row, context(request), fields ?? CHASSIS_FIELDS.fieldsAt(request.apiVersion));

  /** `extra` within the `[api]` JSON limits. */
  function checkExtra(values: Record<string, unknown>): void {
    for (const field of CHASSIS_FIELDS.jsonFields()) if (values[field] !== undefined) checkJsonField(field, values[field], limits);
  }

  async function list(request: FastifyRequest<{ Querystring: Query }>, detailPath: boolean) {
    const q = request.query;
    const valid = CHASSIS_FIELDS.fieldsAt(request.apiVersion);
    const fields = parseFields(q.fields, valid, 'chassis');
    const detail = detailPath || (parseBool('detail', q.detail) ?? false);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a chassis uuid, got ${JSON.stringify(q.marker)}`);
    const rows = await listChassis(store, {
      limit,
      sortKey: parseChoice('sort_key', q.sort_key, CHASSIS_SORT_KEYS, 'id'),
      sortDir: parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc'),
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
    });
    const shown = fields ? withLinks(fields) : detail ? valid : CHASSIS_LIST_FIELDS;
    const ctx = context(request);
    const body: Record<string, unknown> = { chassis: rows.map((c) => CHASSIS_FIELDS.render(c, ctx, shown)) };
    if (rows.length === limit && rows.length > 0) body.next = nextPageLink(baseUrl(request, config.api.public_endpoint), request, limit, rows[rows.length - 1]!.uuid);
    return body;
  }

  app.get<{ Querystring: Query }>('/v1/chassis', (request) => list(request, false));
  app.get<{ Querystring: Query }>('/v1/chassis/detail', (request) => list(request, true));

  app.get<One>('/v1/chassis/:uuid', async (request) => {
    const fields = parseFields(request.query.fields, CHASSIS_FIELDS.fieldsAt(request.apiVersion), 'chassis');
    return render(request, await getChassis(store, chassisUuid(request.params.uuid)), fields && withLinks(fields));
  });

  // Documented by the table's schema, checked by the table itself (see the node route).
  app.post('/v1/chassis', { schema: { body: CHASSIS_FIELDS.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
    const input = CHASSIS_FIELDS.create(request.body, request.apiVersion);
    checkExtra(input);
    const chassis = await createChassis(store, input as ChassisValues & { uuid?: string });
    reply.code(201).header('Location', `${baseUrl(request, config.api.public_endpoint)}/v1/chassis/${chassis.uuid}`);
    return render(request, chassis);
  });

  app.patch<One>('/v1/chassis/:uuid', async (request) => {
    const ops = parsePatch(request.body);
    const chassis = await getChassis(store, chassisUuid(request.params.uuid));
    CHASSIS_FIELDS.checkPatchVersion(ops, request.apiVersion, chassis);
    const changed = CHASSIS_FIELDS.applyPatch(chassis, ops);
    checkExtra(changed);
    return render(request, await updateChassis(store, chassis.uuid, changed as ChassisValues));
  });

  app.delete<One>('/v1/chassis/:uuid', async (request, reply) => {
    await deleteChassis(store, chassisUuid(request.params.uuid));
    return reply.code(204).send();
  });
}
