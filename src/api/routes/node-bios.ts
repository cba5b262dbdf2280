/**
 * `GET /v1/nodes/{node}/bios` and `/bios/{setting}` (Ironic's API 1.40): the node's cached BIOS
 * settings (`nodes/bios-store.ts`) — `{"bios": [...]}`, and `{"<name>": {...}}` for one, each with
 * its name, value, times and links, as Ironic shows them below 1.74. A setting the node does not
 * have is 404 in Ironic's words. Below 1.40 the resource does not exist (404, as Ironic's router);
 * `detail` and `fields` are Ironic's from 1.74, so a 400 names them here.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { apiTime } from '../../common/api-time.js';
import { InvalidParameter } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { getBiosSetting, listBiosSettings } from '../../nodes/bios-store.js';
import type { BiosSetting } from '../../nodes/bios-store.js';
import { getNode } from '../../nodes/node-store.js';
import { baseUrl } from '../links.js';
import { requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** The microversion that brought the BIOS interface and these routes (Ironic's `allow_bios_interface`). */
export const BIOS_SINCE: Microversion = [1, 40];

type Params = { Params: { ident: string; name?: string }; Querystring: Record<string, string | undefined> };

export function nodeBiosRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;

  const nodeOf = async (request: FastifyRequest<Params>) => {
    requireVersion(request.apiVersion, BIOS_SINCE, request.url);
    for (const name of ['detail', 'fields'] as const) {
      if (request.query[name] !== undefined) throw new InvalidParameter(`${name}: not accepted for BIOS settings before API version 1.74, which ironring does not serve`);
    }
    return getNode(store, request.params.ident);
  };

  /** A setting as Ironic shows it; its links name the node as `node` does (Ironic's list: as asked). */
  const view = (request: FastifyRequest<Params>, node: string, setting: BiosSetting) => {
    const path = `nodes/${encodeURIComponent(node)}/bios/${encodeURIComponent(setting.name)}`;
    const base = baseUrl(request, config.api.public_endpoint);
    return {
      created_at: apiTime(setting.created_at),
      updated_at: apiTime(setting.updated_at),
      name: setting.name,
      value: setting.value,
      links: [
        { href: `${base}/v1/${path}`, rel: 'self' },
        { href: `${base}/${path}`, rel: 'bookmark' },
      ],
    };
  };

  app.get<Params>('/v1/nodes/:ident/bios', async (request) => {
    const node = await nodeOf(request);
    return { bios: (await listBiosSettings(store, node.id)).map((s) => view(request, request.params.ident, s)) };
  });

  app.get<Params>('/v1/nodes/:ident/bios/:name', async (request) => {
    const node = await nodeOf(request);
    const name = request.params.name ?? '';
    return { [name]: view(request, node.uuid, await getBiosSetting(store, node, name)) };
  });
}
