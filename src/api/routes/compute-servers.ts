/**
 * The compute API: servers (instances on bare-metal nodes), plus read-only views of the compute
 * services and compute nodes of every cell.
 *
 * - `POST /compute/v1/servers` `{ name?, resource_class, image: { kernel, kernel_checksum, ramdisk,
 *   ramdisk_checksum } }` → 202 with the server (`status` BUILD); the scheduler library picks and
 *   claims a node at once (409 with the reason when none fits), the node's compute service deploys it.
 * - `GET /compute/v1/servers`, `GET /compute/v1/servers/{id}`.
 * - `DELETE /compute/v1/servers/{id}` → 202 (`status` DELETING), in any state (BUILD, ACTIVE, ERROR);
 *   the compute service undeploys the node (from `active` or a failed deploy), or lets go of it where
 *   undeploy cannot take it, and removes the server. A server in ERROR shows Nova's `fault`
 *   (`{message, code, created}`).
 * - `GET /compute/v1/services`, `GET /compute/v1/compute-nodes`.
 *
 * Registered by `buildApi` as one plugin. It reaches the bare-metal tier only through the bare-metal
 * REST API — here in-process (`inject`), with the caller's credentials. The API database and the
 * cell databases are lent by the caller (`ironring up`) or opened from `[api_database] url` on first
 * use and closed with the app.
 */
import { Type } from '@fastify/type-provider-typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CellStores } from '../../cells/cell-stores.js';
import { isCell0, listCells } from '../../cells/cells.js';
import type { CellMapping } from '../../cells/cells.js';
import { NotFound } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Config } from '../../config/options.js';
import { openDatabase } from '../../db/connect.js';
import { requireSchema } from '../../db/migrate.js';
import type { Store } from '../../db/connect.js';
import { BaremetalClient } from '../../compute/baremetal-client.js';
import type { Transport } from '../../compute/baremetal-client.js';
import { INSTANCES_CHANNEL, serverView } from '../../compute/instances.js';
import { COMPUTE_BINARY, SCHEDULER_BINARY, liveExpression } from '../../compute/services.js';
import { scheduleServer } from '../../scheduler/schedule.js';

/** The databases of the compute tier. */
export interface ComputeStores {
  api: Store;
  cells: CellStores;
}

export interface ComputeRouteOptions {
  config: Config;
  logger: Logger;
  /** Lent databases; when absent they are opened from the configuration on first use. */
  stores?: ComputeStores;
}

const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const IMAGE_URL = '^(file|https?)://\\S+$';
const CHECKSUM = '^(sha256|sha512|md5):[0-9a-fA-F]+$';

const ServerCreate = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Display name.' })),
    resource_class: Type.String({ minLength: 1, maxLength: 80, pattern: '^[A-Za-z0-9_.:-]+$', description: 'Resource class of the node to run on (the node\'s resource_class).' }),
    image: Type.Object(
      {
        kernel: Type.String({ pattern: IMAGE_URL, description: 'file://, http:// or https:// URL of the kernel.' }),
        kernel_checksum: Type.String({ pattern: CHECKSUM, description: 'sha256:<hex>, sha512:<hex> or md5:<hex>.' }),
        ramdisk: Type.String({ pattern: IMAGE_URL, description: 'URL of the ramdisk.' }),
        ramdisk_checksum: Type.String({ pattern: CHECKSUM, description: 'Checksum of the ramdisk.' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const ServerId = Type.Object({ id: Type.String({ pattern: UUID, description: 'Server uuid.' }) });

/** Lazily opened stores from the configuration, closed with the app. */
function storesFrom(app: FastifyInstance, options: ComputeRouteOptions): () => Promise<ComputeStores> {
  if (options.stores) {
    const lent = options.stores;
    return () => Promise.resolve(lent);
  }
  let opened: Promise<ComputeStores> | undefined;
  app.addHook('onClose', async () => {
    const s = await opened?.catch(() => undefined);
    if (s) {
      await s.cells.close();
      await s.api.close();
    }
  });
  return () => {
    opened ??= (async () => {
      const { database } = options.config;
      const api = await openDatabase(options.config.api_database.url, { maxPoolSize: database.max_pool_size, connectTimeout: database.connect_timeout, sqliteBusyTimeout: database.sqlite_busy_timeout });
      const cells = new CellStores({ logger: options.logger, open: { connectTimeout: database.connect_timeout, sqliteBusyTimeout: database.sqlite_busy_timeout } });
      cells.share(options.config.api_database.url, api);
      try {
        await requireSchema(api, ['api']);
      } catch (err) {
        await cells.close();
        await api.close();
        throw err;
      }
      return { api, cells };
    })();
    opened.catch(() => (opened = undefined));
    return opened;
  };
}

/** The bare-metal API of this very process, reached with the caller's credentials. */
function inProcessTransport(app: FastifyInstance, request: FastifyRequest): Transport {
  return injectTransport(app, request.headers.authorization);
}

/**
 * The bare-metal API of the app `app` belongs to, without a socket: used by the compute API and by
 * the compute service of `ironring up`. `authorization` is sent as is (basic authentication).
 */
export function injectTransport(app: FastifyInstance, authorization?: string): Transport {
  return async ({ method, path, body }) => {
    const res = await app.inject({
      method,
      url: path,
      headers: {
        'x-openstack-ironic-api-version': 'latest',
        accept: 'application/json',
        ...(authorization ? { authorization } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, body: res.body };
  };
}

async function findServer(stores: ComputeStores, id: string) {
  const uuid = id.toLowerCase();
  const mapping = await stores.api.db
    .selectFrom('instance_mappings')
    .innerJoin('cell_mappings', 'cell_mappings.id', 'instance_mappings.cell_id')
    .selectAll('cell_mappings')
    .where('instance_mappings.instance_uuid', '=', uuid)
    .executeTakeFirst();
  if (!mapping) throw new NotFound(`server ${uuid} not found`);
  const cell: CellMapping = { id: mapping.id, uuid: mapping.uuid, name: mapping.name, databaseConnection: mapping.database_connection, disabled: mapping.disabled };
  const store = await stores.cells.get(cell);
  const row = await store.db.selectFrom('instances').selectAll().where('uuid', '=', uuid).executeTakeFirst();
  if (!row) throw new NotFound(`server ${uuid} not found`);
  return { row, cell, store };
}

export async function computeServerRoutes(app: FastifyInstance, options: ComputeRouteOptions): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const stores = storesFrom(app, options);
  const downTime = options.config.compute.service_down_time;

  api.post('/compute/v1/servers', { schema: { body: ServerCreate, tags: ['compute'] } }, async (request, reply) => {
    const s = await stores();
    const body = request.body;
    const { instance, cell } = await scheduleServer(
      { api: s.api, cells: s.cells, baremetal: new BaremetalClient(inProcessTransport(app, request)), serviceDownTime: downTime, logger: request.log as unknown as Logger },
      { name: body.name ?? null, resourceClass: body.resource_class, image: body.image },
    );
    return reply.code(202).header('Location', `/compute/v1/servers/${instance.uuid}`).send(serverView(instance, cell.name));
  });

  api.get('/compute/v1/servers', { schema: { tags: ['compute'] } }, async () => {
    const s = await stores();
    const mappings = new Map((await s.api.db.selectFrom('instance_mappings').select(['instance_uuid', 'cell_id']).execute()).map((m) => [m.instance_uuid, m.cell_id]));
    const servers = [];
    for (const cell of await listCells(s.api)) {
      const store = await s.cells.get(cell);
      const rows = await store.db.selectFrom('instances').selectAll().orderBy('created_at').orderBy('id').execute();
      // Cells that share a database (cell0 may) see the same rows: each shows only its own.
      for (const row of rows) if (mappings.get(row.uuid) === cell.id) servers.push(serverView(row, cell.name));
    }
    return { servers };
  });

  api.get('/compute/v1/servers/:id', { schema: { params: ServerId, tags: ['compute'] } }, async (request) => {
    const { row, cell } = await findServer(await stores(), request.params.id);
    return serverView(row, cell.name);
  });

  api.delete('/compute/v1/servers/:id', { schema: { params: ServerId, tags: ['compute'] } }, async (request, reply) => {
    const s = await stores();
    const { row, cell, store } = await findServer(s, request.params.id);
    if (row.host === null || row.node === null) {
      // Never placed: nothing to undeploy.
      await store.db.deleteFrom('instances').where('uuid', '=', row.uuid).execute();
      await s.api.db.deleteFrom('instance_mappings').where('instance_uuid', '=', row.uuid).execute();
      return reply.code(204).send();
    }
    const updated = await store.db
      .updateTable('instances')
      .set({ task_state: 'deleting', updated_at: store.sqlNow() })
      .where('uuid', '=', row.uuid)
      .returningAll()
      .executeTakeFirst();
    if (!updated) throw new NotFound(`server ${row.uuid} not found`);
    await store.notify(INSTANCES_CHANNEL, row.host).catch(() => undefined);
    return reply.code(202).send(serverView(updated, cell.name));
  });

  api.get('/compute/v1/services', { schema: { tags: ['compute'] } }, async () => {
    const s = await stores();
    const services = [];
    for (const cell of await listCells(s.api)) {
      const store = await s.cells.get(cell);
      const binaries = isCell0(cell) ? [SCHEDULER_BINARY] : [COMPUTE_BINARY];
      const rows = await store.db
        .selectFrom('services')
        .select(['id', 'host', 'binary', 'disabled', 'forced_down', 'mapped', 'last_seen_up'])
        .select(store.sqlFlag(liveExpression(store, downTime)).as('live'))
        .select((eb) => eb.selectFrom('compute_nodes').select(eb.fn.countAll<number>().as('n')).whereRef('compute_nodes.host', '=', 'services.host').as('nodes'))
        .where('binary', 'in', binaries)
        .orderBy('id')
        .execute();
      const hosts = new Set((await s.api.db.selectFrom('host_mappings').select('host').where('cell_id', '=', cell.id).execute()).map((h) => h.host));
      for (const r of rows) {
        services.push({
          id: r.id,
          host: r.host,
          binary: r.binary,
          cell: cell.name,
          state: r.live ? 'up' : 'down',
          status: r.disabled ? 'disabled' : 'enabled',
          forced_down: r.forced_down,
          host_mapped: r.binary === COMPUTE_BINARY ? hosts.has(r.host) : null,
          nodes: r.binary === COMPUTE_BINARY ? Number(r.nodes ?? 0) : null,
          last_seen_up: r.last_seen_up ? r.last_seen_up.toISOString() : null,
        });
      }
    }
    return { services };
  });

  api.get('/compute/v1/compute-nodes', { schema: { tags: ['compute'] } }, async () => {
    const s = await stores();
    const out = [];
    for (const cell of await listCells(s.api)) {
      if (isCell0(cell)) continue;
      const store = await s.cells.get(cell);
      const rows = await store.db.selectFrom('compute_nodes').select(['uuid', 'host', 'resource_class', 'mapped', 'updated_at']).orderBy('host').orderBy('uuid').execute();
      for (const r of rows) out.push({ uuid: r.uuid, host: r.host, cell: cell.name, resource_class: r.resource_class, mapped: r.mapped, updated_at: r.updated_at.toISOString() });
    }
    return { compute_nodes: out };
  });
}
