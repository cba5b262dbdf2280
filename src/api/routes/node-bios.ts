/**
 * `GET /v1/nodes/{node}/bios` and `/bios/{setting}` (Ironic's API 1.40): the node's cached BIOS
 * settings (`nodes/bios-store.ts`) — `{"bios": [...]}`, and `{"<name>": {...}}` for one, each with
 * its name, value, times and links. A setting the node does not have is 404 in Ironic's words.
 * Below 1.40 the resource does not exist (404, as Ironic's router).
 *
 * From 1.74 (Ironic's BIOS registry) a setting also shows its registry fields (`attribute_type`,
 * `allowable_values`, bounds, lengths, `read_only`, `reset_required`, `unique`): always for one
 * setting, with `detail=True` in a list, and a list takes `fields` (name, value or a registry field)
 * instead. Below 1.74 `detail` and `fields` are refused with 400, as Ironic's.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { apiTime } from '../../common/api-time.js';
import { InvalidParameter } from '../../common/errors.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { BIOS_REGISTRY_FIELDS, getBiosSetting, listBiosSettings } from '../../nodes/bios-store.js';
import type { BiosSetting } from '../../nodes/bios-store.js';
import { getNode } from '../../nodes/node-store.js';
import { baseUrl } from '../links.js';
import { compareVersions, formatVersion, requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseFields } from '../query.js';

/** The microversion that brought the BIOS interface and these routes (Ironic's `allow_bios_interface`). */
export const BIOS_SINCE: Microversion = [1, 40];
/** The microversion of the BIOS registry fields, `detail` and `fields` (Ironic's `allow_query_bios`). */
export const BIOS_REGISTRY_SINCE: Microversion = [1, 74];

/** What a setting shows by default, and with its registry (Ironic's two field lists). */
const DEFAULT_FIELDS = ['name', 'value'] as const;
const REGISTRY_VIEW_FIELDS: readonly string[] = [...DEFAULT_FIELDS, ...BIOS_REGISTRY_FIELDS];

type Params = { Params: { ident: string; name?: string }; Querystring: Record<string, string | undefined> };

export function nodeBiosRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;

  const nodeOf = async (request: FastifyRequest<Params>) => {
    requireVersion(request.apiVersion, BIOS_SINCE, request.url);
    return getNode(store, request.params.ident);
  };

  /** The fields a list shows: by default name and value; `detail` or `fields` from 1.74 (400 before, as Ironic). */
  const listFields = (request: FastifyRequest<Params>): readonly string[] => {
    const { detail: rawDetail, fields: rawFields } = request.query;
    if (compareVersions(request.apiVersion, BIOS_REGISTRY_SINCE) < 0) {
      for (const [name, value] of [['detail', rawDetail], ['fields', rawFields]] as const) {
        if (value !== undefined) throw new InvalidParameter(`${name}: not accepted for BIOS settings before API version ${formatVersion(BIOS_REGISTRY_SINCE)} (this request is ${formatVersion(request.apiVersion)})`);
      }
      return DEFAULT_FIELDS;
    }
    const detail = parseBool('detail', rawDetail);
    const fields = parseFields(rawFields, REGISTRY_VIEW_FIELDS, 'BIOS setting');
    if (fields !== undefined && detail === true) throw new InvalidParameter('fields and detail cannot be used together');
    return fields ?? (detail === true ? REGISTRY_VIEW_FIELDS : DEFAULT_FIELDS);
  };

  /** A setting as Ironic shows it (times, the fields asked for, links); its links name the node as `node` does. */
  const view = (request: FastifyRequest<Params>, node: string, setting: BiosSetting, fields: readonly string[]) => {
    const path = `nodes/${encodeURIComponent(node)}/bios/${encodeURIComponent(setting.name)}`;
    const base = baseUrl(request, config.api.public_endpoint);
    const out: Record<string, unknown> = { created_at: apiTime(setting.created_at), updated_at: apiTime(setting.updated_at) };
    for (const field of fields) out[field] = setting[field as keyof BiosSetting];
    out.links = [
      { href: `${base}/v1/${path}`, rel: 'self' },
      { href: `${base}/${path}`, rel: 'bookmark' },
    ];
    return out;
  };

  app.get<Params>('/v1/nodes/:ident/bios', async (request) => {
    const node = await nodeOf(request);
    const fields = listFields(request);
    return { bios: (await listBiosSettings(store, node.id)).map((s) => view(request, request.params.ident, s, fields)) };
  });

  app.get<Params>('/v1/nodes/:ident/bios/:name', async (request) => {
    const node = await nodeOf(request);
    const name = request.params.name ?? '';
    const fields = compareVersions(request.apiVersion, BIOS_REGISTRY_SINCE) >= 0 ? REGISTRY_VIEW_FIELDS : DEFAULT_FIELDS;
    return { [name]: view(request, node.uuid, await getBiosSetting(store, node, name), fields) };
  });
}
