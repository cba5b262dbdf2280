/**
 * `/v1/deploy_templates` (Ironic's deploy templates, API 1.55; older versions get 404): list
 * (fields, limit, marker, sort, detail, next links), show, create, JSON Patch and delete. A template
 * is found by uuid or name; a name or uuid in use is 409. The steps a deploy runs from matching
 * templates are checked against the node's interfaces when it is deployed, not here (Ironic's rule).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidParameter } from '../../common/errors.js';
import { jsonDepth } from '../../common/json-safety.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { DEPLOY_TEMPLATE_FIELDS, DEPLOY_TEMPLATE_LIST_FIELDS } from '../../nodes/deploy-template-fields.js';
import type { DeployTemplateFieldContext, DeployTemplateRow, DeployTemplateStep } from '../../nodes/deploy-template-fields.js';
import {
  DEPLOY_TEMPLATE_SORT_KEYS, applyDeployTemplatePatch, createDeployTemplate, deleteDeployTemplate, getDeployTemplate, listDeployTemplates, updateDeployTemplate,
} from '../../nodes/deploy-template-store.js';
import type { DeployTemplateValues } from '../../nodes/deploy-template-store.js';
import { parsePatch } from '../../nodes/field-table.js';
import { NODE_NAME_PATTERN } from '../../nodes/node-fields.js';
import { checkJsonField, jsonFieldLimits } from '../json-fields.js';
import type { JsonFieldLimits } from '../json-fields.js';
import { baseUrl, nextPageLink, resourceLinks } from '../links.js';
import { requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';
import { parseBool, parseChoice, parseFields, parseLimit } from '../query.js';

/** Ironic's `allow_deploy_templates`. */
export const DEPLOY_TEMPLATES_SINCE: Microversion = [1, 55];

type Query = Record<string, string | undefined>;
type One = { Params: { ident: string }; Querystring: Query };

/** Every view has `links`, asked for or not (Ironic's views keep it through any `fields`). */
function withLinks(fields: readonly string[]): readonly string[] {
  return fields.includes('links') ? fields : [...fields, 'links'];
}

/** A template's uuid or name from the path: 400 for anything else, as Ironic's `uuid_or_name`. */
function templateIdent(raw: string): string {
  if (!UUID_PATTERN.test(raw) && !NODE_NAME_PATTERN.test(raw)) throw new InvalidParameter(`deploy_template: expected a name or UUID, got ${JSON.stringify(raw.slice(0, 300))}`);
  return raw;
}

/**
 * `extra` within the `[api]` JSON limits; each step's `args` nested no deeper than they allow,
 * and the whole list no larger than `max_json_field_size`.
 */
export function checkTemplateJson(values: { extra?: unknown; steps?: readonly DeployTemplateStep[] }, limits: JsonFieldLimits, field = 'steps'): void {
  if (values.extra !== undefined) checkJsonField('extra', values.extra, limits);
  if (values.steps === undefined) return;
  values.steps.forEach((s, i) => {
    if (jsonDepth(s.args, limits.maxDepth) > limits.maxDepth) checkJsonField(`${field}[${i}].args`, s.args, limits);
  });
  const bytes = Buffer.byteLength(JSON.stringify(values.steps));
  if (bytes > limits.maxBytes) throw new InvalidParameter(`${field}: ${bytes} bytes of JSON, more than the ${limits.maxBytes} accepted ([api] max_json_field_size)`);
}

export function deployTemplateRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const limits = jsonFieldLimits(config);
  const since = (request: FastifyRequest) => requireVersion(request.apiVersion, DEPLOY_TEMPLATES_SINCE, request.url);
  const context = (request: FastifyRequest): DeployTemplateFieldContext => {
    const base = baseUrl(request, config.api.public_endpoint);
    return { links: (collection, id) => resourceLinks(base, collection, id) };
  };
  const render = (request: FastifyRequest, row: DeployTemplateRow, fields?: readonly string[]) =>
    DEPLOY_TEMPLATE_FIELDS.render(row, context(request), fields ?? DEPLOY_TEMPLATE_FIELDS.fieldsAt(request.apiVersion));

  async function list(request: FastifyRequest<{ Querystring: Query }>, detailPath: boolean) {
    since(request);
    const q = request.query;
    const valid = DEPLOY_TEMPLATE_FIELDS.fieldsAt(request.apiVersion);
    const fields = parseFields(q.fields, valid, 'deploy template');
    const detail = detailPath || (parseBool('detail', q.detail) ?? false);
    if (fields && detail) throw new InvalidParameter('fields and detail cannot be used together');
    const limit = parseLimit(q.limit, config.api.max_limit);
    if (q.marker !== undefined && !UUID_PATTERN.test(q.marker)) throw new InvalidParameter(`marker: expected a deploy template uuid, got ${JSON.stringify(q.marker.slice(0, 300))}`);
    const rows = await listDeployTemplates(store, {
      limit,
      sortKey: parseChoice('sort_key', q.sort_key, DEPLOY_TEMPLATE_SORT_KEYS, 'id'),
      sortDir: parseChoice('sort_dir', q.sort_dir, ['asc', 'desc'] as const, 'asc'),
      ...(q.marker !== undefined ? { marker: q.marker.toLowerCase() } : {}),
    });
    const shown = fields ? withLinks(fields) : detail ? valid : DEPLOY_TEMPLATE_LIST_FIELDS;
    const ctx = context(request);
    const body: Record<string, unknown> = { deploy_templates: rows.map((t) => DEPLOY_TEMPLATE_FIELDS.render(t, ctx, shown)) };
    if (rows.length === limit && rows.length > 0) body.next = nextPageLink(baseUrl(request, config.api.public_endpoint), request, limit, rows[rows.length - 1]!.uuid);
    return body;
  }

  app.get<{ Querystring: Query }>('/v1/deploy_templates', (request) => list(request, false));
  app.get<{ Querystring: Query }>('/v1/deploy_templates/detail', (request) => list(request, true));

  app.get<One>('/v1/deploy_templates/:ident', async (request) => {
    since(request);
    const fields = parseFields(request.query.fields, DEPLOY_TEMPLATE_FIELDS.fieldsAt(request.apiVersion), 'deploy template');
    return render(request, await getDeployTemplate(store, templateIdent(request.params.ident)), fields && withLinks(fields));
  });

  // Documented by the table's schema, checked by the table itself (see the node route).
  app.post('/v1/deploy_templates', { schema: { body: DEPLOY_TEMPLATE_FIELDS.createSchema() }, validatorCompiler: () => () => true }, async (request, reply) => {
    since(request);
    const input = DEPLOY_TEMPLATE_FIELDS.create(request.body, request.apiVersion) as unknown as DeployTemplateValues & { name: string; steps: DeployTemplateStep[]; uuid?: string };
    checkTemplateJson(input, limits);
    const template = await createDeployTemplate(store, input);
    reply.code(201).header('Location', `${baseUrl(request, config.api.public_endpoint)}/v1/deploy_templates/${template.uuid}`);
    return render(request, template);
  });

  app.patch<One>('/v1/deploy_templates/:ident', async (request) => {
    since(request);
    const ops = parsePatch(request.body);
    const template = await getDeployTemplate(store, templateIdent(request.params.ident));
    DEPLOY_TEMPLATE_FIELDS.checkPatchVersion(ops, request.apiVersion, template);
    const changed = applyDeployTemplatePatch(template, ops) as DeployTemplateValues;
    checkTemplateJson(changed, limits);
    return render(request, await updateDeployTemplate(store, template.uuid, changed));
  });

  app.delete<One>('/v1/deploy_templates/:ident', async (request, reply) => {
    since(request);
    const template = await getDeployTemplate(store, templateIdent(request.params.ident));
    await deleteDeployTemplate(store, template.uuid);
    return reply.code(204).send();
  });
}
