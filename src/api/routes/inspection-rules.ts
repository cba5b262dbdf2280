/**
 * `/v1/inspection_rules` (Ironic's 1.96 resource; served at every version here until ironring's
 * maximum reaches it): list, show, create, delete one or all. What a rule may say is
 * src/nodes/inspection-rules.ts; a sensitive rule's conditions and actions are never shown.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Conflict, NotFound } from '../../common/errors.js';
import { checkJsonDocument } from '../../common/json-safety.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { uniqueViolation } from '../../db/errors.js';
import { parseInspectionRule } from '../../nodes/inspection-rules.js';
import { baseUrl, resourceLinks } from '../links.js';

/** Most rules kept: each inspection reads them all. */
export const MAX_INSPECTION_RULES = 1000;

type RuleRow = { uuid: string; description: string | null; priority: number; phase: string; sensitive: boolean; conditions: unknown; actions: unknown; created_at: Date; updated_at: Date };

function view(rule: RuleRow, base: string): Record<string, unknown> {
  return {
    uuid: rule.uuid,
    description: rule.description,
    priority: rule.priority,
    phase: rule.phase,
    sensitive: rule.sensitive,
    // Ironic hides a sensitive rule's conditions and actions: they may hold credentials.
    conditions: rule.sensitive ? null : rule.conditions,
    actions: rule.sensitive ? null : rule.actions,
    created_at: rule.created_at,
    updated_at: rule.updated_at,
    links: resourceLinks(base, 'inspection_rules', rule.uuid),
  };
}

export function inspectionRuleRoutes(app: FastifyInstance, options: { store: Store; config: Config }): void {
  const { store, config } = options;
  const base = (request: FastifyRequest) => baseUrl(request, config.api.public_endpoint);
  const select = () => store.db.selectFrom('inspection_rules').select(['uuid', 'description', 'priority', 'phase', 'sensitive', 'conditions', 'actions', 'created_at', 'updated_at']);
  const one = async (uuid: string) => {
    const row = await select().where('uuid', '=', uuid.toLowerCase()).executeTakeFirst();
    if (row === undefined) throw new NotFound(`Inspection rule ${uuid} could not be found.`);
    return row;
  };

  app.get('/v1/inspection_rules', async (request) => {
    const rows = await select().orderBy('priority', 'desc').orderBy('id').execute();
    return { inspection_rules: rows.map((r) => view(r, base(request))) };
  });

  app.get<{ Params: { uuid: string } }>('/v1/inspection_rules/:uuid', async (request) => view(await one(request.params.uuid), base(request)));

  app.post('/v1/inspection_rules', async (request, reply) => {
    checkJsonDocument(request.body, { maxDepth: config.api.max_json_depth, source: '[api] max_json_depth' });
    const rule = parseInspectionRule(request.body);
    const count = await store.db.selectFrom('inspection_rules').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_INSPECTION_RULES) throw new Conflict(`at most ${MAX_INSPECTION_RULES} inspection rules may exist; delete some first`);
    const uuid = rule.uuid ?? randomUUID();
    try {
      await store.db
        .insertInto('inspection_rules')
        .values({ uuid, description: rule.description, priority: rule.priority, phase: rule.phase, sensitive: rule.sensitive, conditions: JSON.stringify(rule.conditions), actions: JSON.stringify(rule.actions), created_at: store.sqlNow(), updated_at: store.sqlNow() })
        .execute();
    } catch (err) {
      if (uniqueViolation(err) !== null) throw new Conflict(`an inspection rule with uuid ${uuid} already exists`);
      throw err;
    }
    return reply.code(201).send(view(await one(uuid), base(request)));
  });

  app.delete<{ Params: { uuid: string } }>('/v1/inspection_rules/:uuid', async (request, reply) => {
    await one(request.params.uuid);
    await store.db.deleteFrom('inspection_rules').where('uuid', '=', request.params.uuid.toLowerCase()).execute();
    return reply.code(204).send();
  });

  app.delete('/v1/inspection_rules', async (_request, reply) => {
    await store.db.deleteFrom('inspection_rules').execute();
    return reply.code(204).send();
  });
}
