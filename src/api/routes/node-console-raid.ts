/**
 * A node's console and RAID under `/v1/nodes/{node}/states`: `GET`/`PUT …/console` (start or stop
 * the console, and where to reach it) and `PUT …/raid` (API 1.12: the target RAID configuration).
 * Each goes to the node's conductor, whose interfaces refuse what the node cannot do. Ironic also
 * answers the console at `/v1/nodes/states/console/{node}` (its router reaches the same controller
 * that way, and tempest's client asks there): served the same.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidParameter, NotAcceptable } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { booleanSpelling } from '../../nodes/port-fields.js';
import { getNode } from '../../nodes/node-store.js';
import type { ConductorRouter } from '../conductor-router.js';
import { baseUrl } from '../links.js';
import { compareVersions, formatVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

type Node = { Params: { ident: string } };

/** The microversion of RAID configuration (Ironic's `allow_raid_config`). */
export const RAID_CONFIG_SINCE: Microversion = [1, 12];

export function nodeConsoleRaidRoutes(app: FastifyInstance, options: { store: Store; config: Config; router: ConductorRouter }): void {
  const { store, router } = options;

  const getConsole = async (request: FastifyRequest<Node>) => {
    const node = await getNode(store, request.params.ident);
    return router.call(node, 'GET', 'console');
  };

  const setConsole = async (request: FastifyRequest<Node>, reply: FastifyReply) => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object with enabled');
    const enabled = booleanSpelling((body as Record<string, unknown>).enabled);
    if (typeof enabled !== 'boolean') throw new InvalidParameter(`enabled: expected true or false, got ${JSON.stringify((body as Record<string, unknown>).enabled) ?? 'nothing'}`);
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'console', { enabled });
    const location = `${baseUrl(request, options.config.api.public_endpoint)}/v1/nodes/${node.uuid}/states/console`;
    return reply.code(202).header('Location', location).send();
  };

  for (const url of ['/v1/nodes/:ident/states/console', '/v1/nodes/states/console/:ident']) {
    app.get<Node>(url, getConsole);
    app.put<Node>(url, setConsole);
  }

  app.put<Node>('/v1/nodes/:ident/states/raid', async (request, reply) => {
    if (compareVersions(request.apiVersion, RAID_CONFIG_SINCE) < 0) throw new NotAcceptable(`RAID configuration needs API version ${formatVersion(RAID_CONFIG_SINCE)} or later`);
    const config = request.body;
    if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new InvalidParameter('target_raid_config: expected a JSON object (the request body)');
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'raid', { target_raid_config: config });
    return reply.code(204).send();
  });
}
