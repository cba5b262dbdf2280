/**
 * Ironic's volume resources (API 1.32; 404 below it, as Ironic answers): `/v1/volume` and
 * `/v1/nodes/{node}/volume` (documents linking the connectors and targets), and for each of
 * `connectors` and `targets`: list (`node`, fields, limit, marker, sort, detail, next links), show,
 * create, JSON Patch and delete, plus the node's own list at `/v1/nodes/{node}/volume/{kind}`.
 * Changes and deletions wait for the node's lock and need the node powered off (Ironic's conductor
 * rule, enforced in `nodes/volume-store.ts`); creation does not.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { NodeLocked } from '../../cluster/errors.js';
import { IronringError, InvalidParameter } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { parsePatch } from '../../nodes/field-table.js';
import type { FieldTable } from '../../nodes/field-table.js';
import { getNode } from '../../nodes/node-store.js';
import { VOLUME_CONNECTOR_FIELDS, VOLUME_CONNECTOR_LIST_FIELDS, VOLUME_SINCE, VOLUME_TARGET_FIELDS, VOLUME_TARGET_LIST_FIELDS } from '../../nodes/volume-fields.js';
import type { VolumeFieldContext } from '../../nodes/volume-fields.js';
import { VOLUME_CONNECTOR, VOLUME_TARGET, createVolume, deleteVolume, getVolume, listVolumes, unknownNodeOfVolume, updateVolume } from '../../nodes/volume-store.js';
import type { IdleWrite, VolumeKind, VolumeRowOf } from '../../nodes/volume-store.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import { baseUrl, nextPageLink, resourceLinks } from '../links.js';
import { requireVersion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

/** Thrown for a change asked through a node's sub-resource (403, Ironic's `OperationNotPermitted`). */
export class OperationNotPermitted extends IronringError {
  override readonly httpStatus = 403;
  constructor() {
    super('Operation not permitted.');
  }
}

type Query = Record<string, string | undefined>;

/** One of the two resources as the routes serve it. */
interface VolumeResource<K extends VolumeKind> {
  /** The path segment and the list's key: `connectors` or `targets`. */
  name: 'connectors' | 'targets';
  kind: K;
  fields: FieldTable<VolumeRowOf<K>, VolumeFieldContext>;
  listFields: readonly string[];
}

const RESOURCES = [
  { name: 'connectors', kind: VOLUME_CONNECTOR, fields: VOLUME_CONNECTOR_FIELDS, listFields: VOLUME_CONNECTOR_LIST_FIELDS },
  { name: 'targets', kind: VOLUME_TARGET, fields: VOLUME_TARGET_FIELDS, listFields: VOLUME_TARGET_LIST_FIELDS },
] as const;

/** Every view has `links`, asked for or not (Ironic's views keep it through any `fields`). */
function withLinks(fields: readonly string[]): readonly string[] {
  return fields.includes('links') ? fields : [...fields, 'links'];
}

/** The links document of `/v1/volume` or `/v1/nodes/{node}/volume`. */
function volumeDocument(base: string, prefix: string): Record<string, unknown> {
  return {
    links: resourceLinks(base, prefix, ''),
    connectors: resourceLinks(base, prefix, 'connectors'),
    targets: resourceLinks(base, prefix, 'targets'),
  };
}

export function volumeRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const limits = jsonFieldLimits(config);
  const since = VOLUME_SINCE;
  const gate = (request: FastifyRequest) => requireVersion(request.apiVersion, since, request.url);
  const context = (request: FastifyRequest): VolumeFieldContext => {
    const base = baseUrl(request, config.api.public_endpoint);
    return { links: (collection, id) => resourceLinks(base, collection, id) };
  };

  /** Waits for a locked node as Ironic's conductor does (`[conductor] node_locked_retry_*`), then 409. */
  async function whenUnlocked<T>(write: () => Promise<IdleWrite<T>>): Promise<T> {
    const { node_locked_retry_attempts: attempts, node_locked_retry_interval: interval } = config.conductor;
    for (let attempt = 1; ; attempt++) {
      const outcome = await write();
      if ('done' in outcome) return outcome.done;
      if (attempt >= attempts) throw new NodeLocked(outcome.locked.node, outcome.locked.holder);
      await delay(interval * 1000);
    }
  }

  app.get('/v1/volume', async (request) => {
    gate(request);
    return volumeDocument(baseUrl(request, config.api.public_endpoint), 'volume');
  });
  // As Ironic, the document is built from the path alone: the node is looked up by its lists.
  app.get<{ Params: { ident: string } }>('/v1/nodes/:ident/volume', async (request) => {
    gate(request);
    return volumeDocument(baseUrl(request, config.api.public_endpoint), `nodes/${encodeURIComponent(request.params.ident)}/volume`);
  });

  for (const resource of RESOURCES) serve(resource as VolumeResource<VolumeKind>);

  function serve<K extends VolumeKind>({ name, kind, fields: table, listFields }: VolumeResource<K>): void {
    const collection = `volume/${name}`;
    const noun = kind.noun;
    /** A uuid from the path: 400 for anything else, as Ironic's (which finds these by uuid only). */
    const pathUuid = (raw: string): string => {
      if (!UUID_PATTERN.test(raw)) throw new InvalidParameter(`${noun.replace('volume ', '')}_uuid: expected a UUID, got ${JSON.stringify(raw)}`);
      return raw.toLowerCase();
    };
    const sortKeys = ['id', ...table.sortKeys()];
    const render = (request: FastifyRequest, row: VolumeRowOf<K>, fields?: readonly string[]) => table.render(row, context(request), fields ?? table.fieldsAt(request.apiVersion));
    const checkJson = (values: Record<string, unknown>) => {
      for (const field of table.jsonFields()) if (values[field] !== undefined) checkJsonField(field, values[field], limits);
    };
    /** The node a create or a move names, by uuid; Ironic's 400 when there is none. */
    const nodeNamed = async (uuid: string) => {
      try {
        return await getNode(store, uuid);
      } catch (err) {
        if (err instanceof IronringError && err.httpStatus === 404) throw unknownNodeOfVolume(uuid);
        throw err;
      }
    };

    async function list(request: FastifyRequest<{ Querystring: Query }>, nodeIdent: string | undefined) {
      gate(request);
      const q = request.query;
      const valid = table.fieldsAt(request.apiVersion);
      const fields = parseFields(q.fields, valid, noun);
      const detail = parseBool('detail', q.detail) ?? false;
      if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
      const limit = parseLimit(q.limit, config.api.max_limit);
      if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a ${noun} uuid, got ${JSON.stringify(q.marker)}`);
      const ident = nodeIdent ?? q.node;
      const nodeId = ident === undefined ? undefined : (await getNode(store, ident)).id;
      const rows = await listVolumes(store, kind, {
        limit,
        sortKey: parseChoice('sort_key', q.sort_key, sortKeys, 'id'),
        sortDir: parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc'),
        ...(nodeId !== undefined ? { nodeId } : {}),
        ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
      });
      const shown = fields ? withLinks(fields) : detail ? valid : listFields;
      const ctx = context(request);
      const body: Record<string, unknown> = { [name]: rows.map((row) => table.render(row, ctx, shown)) };
      if (rows.length === limit && rows.length > 0) body.next = nextPageLink(baseUrl(request, config.api.public_endpoint), request, limit, rows[rows.length - 1]!.uuid);
      return body;
    }

    type One = { Params: { uuid: string }; Querystring: Query };
    type OfNode = { Params: { ident: string; uuid: string }; Querystring: Query };

    app.get<{ Querystring: Query }>(`/v1/${collection}`, (request) => list(request, undefined));
    app.get<{ Params: { ident: string }; Querystring: Query }>(`/v1/nodes/:ident/${collection}`, (request) => list(request, request.params.ident));

    app.get<One>(`/v1/${collection}/:uuid`, async (request) => {
      gate(request);
      const fields = parseFields(request.query.fields, table.fieldsAt(request.apiVersion), noun);
      return render(request, await getVolume(store, kind, pathUuid(request.params.uuid)), fields && withLinks(fields));
    });
    // Through a node, Ironic finds the resource (404 when there is none) and then refuses.
    app.get<OfNode>(`/v1/nodes/:ident/${collection}/:uuid`, async (request) => {
      gate(request);
      await getVolume(store, kind, pathUuid(request.params.uuid));
      throw new OperationNotPermitted();
    });

    // Documented by the table's schema, checked by the table itself (see the node route).
    app.post(`/v1/${collection}`, { schema: { body: table.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
      gate(request);
      const { node_uuid: nodeUuid, ...values } = table.create(request.body, request.apiVersion);
      checkJson(values);
      const node = await nodeNamed(nodeUuid as string);
      const row = await createVolume(store, kind, node.id, node.uuid, values);
      reply.code(201).header('Location', `${baseUrl(request, config.api.public_endpoint)}/v1/${collection}/${row.uuid}`);
      return render(request, row);
    });

    app.patch<One>(`/v1/${collection}/:uuid`, async (request) => {
      gate(request);
      const ops = parsePatch(request.body);
      const row = await getVolume(store, kind, pathUuid(request.params.uuid));
      table.checkPatchVersion(ops, request.apiVersion, row);
      const { node_uuid: nodeUuid, ...changes } = table.applyPatch(row, ops);
      checkJson(changes);
      const nodeId = nodeUuid === undefined || nodeUuid === row.node_uuid ? row.node_id! : (await nodeNamed(nodeUuid as string)).id;
      return render(request, await whenUnlocked(() => updateVolume(store, kind, row, nodeId, changes)));
    });

    app.delete<One>(`/v1/${collection}/:uuid`, async (request, reply) => {
      gate(request);
      const uuid = pathUuid(request.params.uuid);
      await getVolume(store, kind, uuid);
      await whenUnlocked(() => deleteVolume(store, kind, uuid));
      return reply.code(204).send();
    });

    // Changes through a node are refused, as Ironic's node-scoped controllers do.
    const refuse = async (request: FastifyRequest) => {
      gate(request);
      throw new OperationNotPermitted();
    };
    app.post(`/v1/nodes/:ident/${collection}`, refuse);
    app.patch(`/v1/nodes/:ident/${collection}/:uuid`, refuse);
    app.delete(`/v1/nodes/:ident/${collection}/:uuid`, refuse);
  }
}
