/**
 * Reading and writing deploy templates (Ironic's `/v1/deploy_templates`): found by uuid or name,
 * listed with keyset pagination, matched by name against the traits an instance asks for when a
 * node is deployed (`templatesNamed`). Names and uuids are unique by constraint: a duplicate is a
 * 409 however two requests interleave. JSON Patch of `steps` (a list) is applied here, with
 * RFC 6902's array rules, then the whole list is checked again, as Ironic does.
 */
import { randomUUID } from 'node:crypto';
import { InvalidParameter, NotFound } from '../common/errors.js';
import { cloneJson, isForbiddenKey } from '../common/json-safety.js';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Store } from '../db/connect.js';
import { keysetPage } from '../db/keyset.js';
import { DEPLOY_TEMPLATE_FIELDS, checkDeploySteps } from './deploy-template-fields.js';
import type { DeployTemplateRow, DeployTemplateStep } from './deploy-template-fields.js';
import type { PatchOperation } from './field-table.js';
import { pathTokens } from './field-table.js';
import { uniqueViolation } from './node-store.js';

export type { DeployTemplateRow, DeployTemplateStep };

/** Thrown for a uuid or name that names no template (404, Ironic's `DeployTemplateNotFound`). */
export class DeployTemplateNotFound extends NotFound {
  constructor(readonly template: string) {
    super(`deploy template ${template} could not be found`);
  }
}

/** Columns a list may be sorted by: `id` (creation order, the default) and the plain fields (not `steps`, `extra`). */
export const DEPLOY_TEMPLATE_SORT_KEYS = ['id', ...DEPLOY_TEMPLATE_FIELDS.sortKeys()] as readonly string[];

export interface DeployTemplateListQuery {
  limit: number;
  /** Uuid of the last template of the previous page. */
  marker?: string;
  sortKey: string;
  sortDir: 'asc' | 'desc';
}

/** One page of templates, in order. */
export async function listDeployTemplates(store: Store, query: DeployTemplateListQuery): Promise<DeployTemplateRow[]> {
  if (!DEPLOY_TEMPLATE_SORT_KEYS.includes(query.sortKey)) {
    throw new InvalidParameter(`sort_key: expected one of ${DEPLOY_TEMPLATE_SORT_KEYS.join(', ')}, got ${JSON.stringify(query.sortKey.slice(0, 100))}`);
  }
  const page = await keysetPage(store, {
    table: 'deploy_templates',
    sortKey: query.sortKey,
    sortDir: query.sortDir,
    noun: 'deploy template',
    ...(query.marker !== undefined ? { marker: query.marker } : {}),
  });
  let q = store.db.selectFrom('deploy_templates').selectAll();
  if (page.after) q = q.where(page.after);
  return q.orderBy(page.sortExpr, query.sortDir).orderBy('deploy_templates.id', query.sortDir).limit(query.limit).execute();
}

/** The template with this uuid (any case) or name; `DeployTemplateNotFound` otherwise. */
export async function getDeployTemplate(store: Store, ident: string): Promise<DeployTemplateRow> {
  const q = store.db.selectFrom('deploy_templates').selectAll();
  const row = await (UUID_PATTERN.test(ident) ? q.where('uuid', '=', ident.toLowerCase()) : q.where('name', '=', ident)).executeTakeFirst();
  if (!row) throw new DeployTemplateNotFound(ident);
  return row;
}

/** The templates whose names are among `names` (an instance's traits), in name order. */
export async function templatesNamed(store: Store, names: readonly string[]): Promise<DeployTemplateRow[]> {
  if (names.length === 0) return [];
  return store.db.selectFrom('deploy_templates').selectAll().where('name', 'in', [...names]).orderBy('name').execute();
}

export interface DeployTemplateValues {
  name?: string;
  steps?: DeployTemplateStep[];
  extra?: Record<string, unknown>;
}

function conflict(err: unknown, values: DeployTemplateValues & { uuid?: string }): unknown {
  return uniqueViolation(err, [
    ['name', `a deploy template with name ${JSON.stringify(values.name)} already exists`],
    ['uuid', `a deploy template with uuid ${String(values.uuid)} already exists`],
  ]);
}

/** Inserts a template (a fresh uuid unless given); a name or uuid in use → `Conflict` (409). */
export async function createDeployTemplate(store: Store, values: Required<Pick<DeployTemplateValues, 'name' | 'steps'>> & DeployTemplateValues & { uuid?: string }): Promise<DeployTemplateRow> {
  const uuid = (values.uuid ?? randomUUID()).toLowerCase();
  try {
    await store.db
      .insertInto('deploy_templates')
      .values({
        uuid,
        name: values.name,
        steps: JSON.stringify(values.steps),
        extra: JSON.stringify(values.extra ?? {}),
        created_at: store.sqlNow(),
        updated_at: store.sqlNow(),
      })
      .execute();
  } catch (err) {
    throw conflict(err, { ...values, uuid });
  }
  return getDeployTemplate(store, uuid);
}

/** Changes a template; `DeployTemplateNotFound` if it went meanwhile, `Conflict` for a name in use. */
export async function updateDeployTemplate(store: Store, uuid: string, changes: DeployTemplateValues): Promise<DeployTemplateRow> {
  let updated: bigint;
  try {
    updated = (
      await store.db
        .updateTable('deploy_templates')
        .set({
          updated_at: store.sqlNow(),
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.steps !== undefined ? { steps: JSON.stringify(changes.steps) } : {}),
          ...(changes.extra !== undefined ? { extra: JSON.stringify(changes.extra) } : {}),
        })
        .where('uuid', '=', uuid)
        .executeTakeFirst()
    ).numUpdatedRows;
  } catch (err) {
    throw conflict(err, changes);
  }
  if (updated === 0n) throw new DeployTemplateNotFound(uuid);
  return getDeployTemplate(store, uuid);
}

/** Deletes a template; `DeployTemplateNotFound` when there is none. */
export async function deleteDeployTemplate(store: Store, uuid: string): Promise<void> {
  const deleted = (await store.db.deleteFrom('deploy_templates').where('uuid', '=', uuid).executeTakeFirst()).numDeletedRows;
  if (deleted === 0n) throw new DeployTemplateNotFound(uuid);
}

/**
 * Applies a template's JSON Patch: `name` and `extra` through the field table, operations on
 * `/steps` (the whole list, one step `/steps/1`, `/steps/-`, or a key of one `/steps/0/priority`)
 * to a copy of the list with RFC 6902's rules; the list that results is checked whole (at least
 * one step, each well-formed, no duplicates). Returns the fields that change.
 */
export function applyDeployTemplatePatch(row: DeployTemplateRow, ops: readonly PatchOperation[]): Record<string, unknown> {
  const stepOps = ops.filter((op) => pathTokens(op.path)[0] === 'steps');
  const changes = DEPLOY_TEMPLATE_FIELDS.applyPatch(row, ops.filter((op) => pathTokens(op.path)[0] !== 'steps'));
  if (stepOps.length === 0) return changes;
  const doc: { steps?: unknown } = { steps: cloneJson(row.steps) };
  for (const op of stepOps) applyOperation(doc as Record<string, unknown>, pathTokens(op.path), op);
  if (doc.steps === undefined) throw new InvalidParameter('steps: required; a deploy template has at least one step');
  changes.steps = checkDeploySteps(doc.steps, 'steps');
  return changes;
}

/** One RFC 6902 operation on a document of objects and arrays (prototype names refused). */
function applyOperation(root: Record<string, unknown>, tokens: string[], op: PatchOperation): void {
  let cursor: unknown = root;
  for (const token of tokens.slice(0, -1)) {
    const next = childOf(cursor, token);
    if (typeof next !== 'object' || next === null) throw new InvalidParameter(`${op.path}: no such location`);
    cursor = next;
  }
  const last = tokens[tokens.length - 1]!;
  if (isForbiddenKey(last)) throw new InvalidParameter(`${op.path}: the key ${JSON.stringify(last)} is not accepted`);
  if (Array.isArray(cursor)) {
    const index = last === '-' && op.op === 'add' ? cursor.length : arrayIndex(last, op.path);
    if (op.op === 'add') {
      if (index > cursor.length) throw new InvalidParameter(`${op.path}: index ${index} is past the end of the list (${cursor.length} items)`);
      cursor.splice(index, 0, cloneJson(op.value));
      return;
    }
    if (index >= cursor.length) throw new InvalidParameter(`${op.path}: no item ${index} to ${op.op} (${cursor.length} items)`);
    if (op.op === 'remove') cursor.splice(index, 1);
    else cursor[index] = cloneJson(op.value);
    return;
  }
  const target = cursor as Record<string, unknown>;
  const present = Object.hasOwn(target, last);
  if (op.op === 'remove') {
    if (!present) throw new InvalidParameter(`${op.path}: no such key to remove`);
    delete target[last];
  } else {
    if (op.op === 'replace' && !present) throw new InvalidParameter(`${op.path}: no such key to replace (use add)`);
    Object.defineProperty(target, last, { value: cloneJson(op.value), enumerable: true, writable: true, configurable: true });
  }
}

function childOf(container: unknown, token: string): unknown {
  if (isForbiddenKey(token)) return undefined;
  if (Array.isArray(container)) return /^(0|[1-9][0-9]*)$/.test(token) ? container[Number(token)] : undefined;
  if (typeof container === 'object' && container !== null && Object.hasOwn(container, token)) return (container as Record<string, unknown>)[token];
  return undefined;
}

function arrayIndex(token: string, path: string): number {
  if (!/^(0|[1-9][0-9]{0,5})$/.test(token)) throw new InvalidParameter(`${path}: ${JSON.stringify(token)} is not a list index`);
  return Number(token);
}
