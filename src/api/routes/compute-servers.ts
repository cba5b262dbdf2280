/**
 * The compute API: servers (instances on bare-metal nodes), plus read-only views of the compute
 * services and compute nodes of every cell.
 *
 * - `POST /compute/v1/servers` `{ name?, resource_class, image: { kernel, kernel_checksum, ramdisk,
 *   ramdisk_checksum } }` → 202 with the server (`status` BUILD); the scheduler library picks and
 *   claims a node at once (409 with the reason when none fits), the node's compute service deploys it.
 * - `GET /compute/v1/servers?limit=&marker=`: a page of servers of every cell, oldest first
 *   (created_at, then uuid), as Nova pages them: `limit` at most `[api] max_limit`, which is also
 *   the page without one (0 too); `marker` the uuid of the last server of the previous page (400
 *   "marker [<id>] not found" when it is no server); `servers_links` with a `next` link when more
 *   servers follow the page.
 * - `GET /compute/v1/servers/{id}`.
 * - `DELETE /compute/v1/servers/{id}` → 202 (`status` DELETING), in any state (BUILD, ACTIVE, ERROR);
 *   the compute service undeploys the node (from `active` or a failed deploy), or lets go of it where
 *   undeploy cannot take it, and removes the server. A server in ERROR shows Nova's `fault`
 *   (`{message, code, created}`).
 * - `GET /compute/v1/services`, `GET /compute/v1/compute-nodes`.
 *
 * Registered by `buildApi` as one plugin. It reaches the bare-metal tier only through the bare-metal
 * REST API — here in-process (`inject`), with the caller's credentials. The API database and the
 * cell databases are lent by the caller (`ironring up`) or opened from `[api_database] url` on first
 * use and closed with the app; the queries are `compute/servers.ts`'s.
 */
import { Type } from '@fastify/type-provider-typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LazyComputeStores, openComputeStores } from '../../cells/compute-stores.js';
import type { ComputeStores } from '../../cells/compute-stores.js';
import type { Logger } from '../../common/logger.js';
import { baseUrl, nextPageLink } from '../links.js';
import { parseLimit } from '../query.js';
import type { Config } from '../../config/options.js';
import { BaremetalClient } from '../../compute/baremetal-client.js';
import type { Transport } from '../../compute/baremetal-client.js';
import { injectTransport } from '../../compute/in-process-transport.js';
import { serverView } from '../../compute/instances.js';
import { deleteServer, findServer, listComputeNodes, listServersPage, listServiceStates } from '../../compute/servers.js';
import { scheduleServer } from '../../scheduler/schedule.js';

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

const ServerListQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: 'Most servers on the page (at most [api] max_limit, which is also the default).' })),
  marker: Type.Optional(Type.String({ maxLength: 255, description: 'Uuid of the last server of the previous page.' })),
});

/** The lent stores, or stores opened from the configuration on first use and closed with the app. */
function storesFrom(app: FastifyInstance, options: ComputeRouteOptions): () => Promise<ComputeStores> {
  if (options.stores) {
    const lent = options.stores;
    return () => Promise.resolve(lent);
  }
  const { database } = options.config;
  const lazy = new LazyComputeStores(() =>
    openComputeStores(options.config.api_database.url, {
      open: { maxPoolSize: database.max_pool_size, connectTimeout: database.connect_timeout, sqliteBusyTimeout: database.sqlite_busy_timeout },
      logger: options.logger,
    }),
  );
  app.addHook('onClose', () => lazy.close());
  return () => lazy.get();
}

/** The bare-metal API of this very process, reached with the caller's credentials. */
function inProcessTransport(app: FastifyInstance, request: FastifyRequest): Transport {
  return injectTransport(app, request.headers.authorization);
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

  api.get('/compute/v1/servers', { schema: { querystring: ServerListQuery, tags: ['compute'] } }, async (request) => {
    const { limit: rawLimit, marker } = request.query;
    const limit = parseLimit(rawLimit, options.config.api.max_limit);
    const page = await listServersPage(await stores(), { limit, ...(marker !== undefined ? { marker } : {}) });
    if (page.next === null) return { servers: page.servers };
    const href = nextPageLink(baseUrl(request, options.config.api.public_endpoint), request, limit, page.next);
    return { servers: page.servers, servers_links: [{ rel: 'next', href }] };
  });

  api.get('/compute/v1/servers/:id', { schema: { params: ServerId, tags: ['compute'] } }, async (request) => {
    const { row, cell } = await findServer(await stores(), request.params.id);
    return serverView(row, cell.name);
  });

  api.delete('/compute/v1/servers/:id', { schema: { params: ServerId, tags: ['compute'] } }, async (request, reply) => {
    const marked = await deleteServer(await stores(), request.params.id);
    // Never placed: gone at once; else its compute service undeploys the node and removes it.
    return marked === null ? reply.code(204).send() : reply.code(202).send(marked);
  });

  api.get('/compute/v1/services', { schema: { tags: ['compute'] } }, async () => ({ services: await listServiceStates(await stores(), downTime) }));

  api.get('/compute/v1/compute-nodes', { schema: { tags: ['compute'] } }, async () => ({ compute_nodes: await listComputeNodes(await stores()) }));
}
