/**
 * Reading and writing chassis (Ironic's `/v1/chassis`): a uuid, a description, `extra`, and the
 * nodes that name it (`nodes.chassis_id`). The reference is a foreign key, so a chassis with nodes
 * is never deleted and a node never names a deleted chassis, however two requests interleave;
 * this module turns the engines' violations into Ironic's errors.
 */
import { randomUUID } from 'node:crypto';
import { Conflict, InvalidParameter, NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { isForeignKeyViolation, isUniqueViolation } from '../db/errors.js';
import { keysetPage } from '../db/keyset.js';
import type { ChassisRow } from '../db/schema.js';
import { CHASSIS_FIELDS } from './chassis-fields.js';

export type { ChassisRow };

/** Thrown for a chassis uuid that names no chassis (404, Ironic's `ChassisNotFound`). */
export class ChassisNotFound extends NotFound {
  constructor(readonly chassis: string) {
    super(`chassis ${chassis} could not be found`);
  }
}

/** Thrown when deleting a chassis that nodes still belong to (400, Ironic's `ChassisNotEmpty`). */
export class ChassisNotEmpty extends InvalidParameter {
  constructor(readonly chassis: string) {
    super(`cannot complete the requested action because chassis ${chassis} contains nodes`);
  }
}

/**
 * The 400 for a node that names a chassis that is not there: Ironic answers its `ChassisNotFound`
 * with 400 on node requests, since the node, not the chassis, is the resource asked for.
 */
export function unknownChassisOfNode(uuid: string): InvalidParameter {
  return new InvalidParameter(`chassis_uuid: chassis ${uuid} could not be found`);
}

/** Columns a chassis list may be sorted by: `id` (creation order, the default) and every plain field. */
export const CHASSIS_SORT_KEYS = ['id', ...CHASSIS_FIELDS.sortKeys()] as readonly string[];

export interface ChassisListQuery {
  limit: number;
  /** Uuid of the last chassis of the previous page. */
  marker?: string;
  /** One of `CHASSIS_SORT_KEYS`. */
  sortKey: string;
  sortDir: 'asc' | 'desc';
}

/** One page of chassis, in order (keyset pagination on (sort key, id), as ports). */
export async function listChassis(store: Store, query: ChassisListQuery): Promise<ChassisRow[]> {
  if (!CHASSIS_SORT_KEYS.includes(query.sortKey)) throw new InvalidParameter(`sort_key: expected one of ${CHASSIS_SORT_KEYS.join(', ')}, got ${JSON.stringify(query.sortKey)}`);
  const page = await keysetPage(store, {
    table: 'chassis',
    sortKey: query.sortKey,
    sortDir: query.sortDir,
    noun: 'chassis',
    ...(query.marker !== undefined ? { marker: query.marker } : {}),
    // No description sorts lowest.
    ...(query.sortKey === 'description' ? { nullAs: '' } : {}),
  });
  let q = store.db.selectFrom('chassis').selectAll();
  if (page.after) q = q.where(page.after);
  return q.orderBy(page.sortExpr, query.sortDir).orderBy('chassis.id', query.sortDir).limit(query.limit).execute();
}

/** The chassis with this uuid; `ChassisNotFound` otherwise. */
export async function getChassis(store: Store, uuid: string): Promise<ChassisRow> {
  const row = await store.db.selectFrom('chassis').selectAll().where('uuid', '=', uuid.toLowerCase()).executeTakeFirst();
  if (!row) throw new ChassisNotFound(uuid);
  return row;
}

/**
 * The row id of the chassis a node is to name (null for none); `unknownChassisOfNode` (400) when
 * there is no such chassis. The write that follows still meets the foreign key, should the chassis
 * go meanwhile (see `isForeignKeyViolation`).
 */
export async function chassisIdForNode(store: Store, uuid: string | null): Promise<number | null> {
  if (uuid === null) return null;
  const row = await store.db.selectFrom('chassis').select('id').where('uuid', '=', uuid.toLowerCase()).executeTakeFirst();
  if (!row) throw unknownChassisOfNode(uuid);
  return row.id;
}

export interface ChassisValues {
  description?: string | null;
  extra?: Record<string, unknown>;
}

/** Inserts a chassis (a fresh uuid unless given); a uuid in use → `Conflict`. */
export async function createChassis(store: Store, values: ChassisValues & { uuid?: string }): Promise<ChassisRow> {
  const uuid = (values.uuid ?? randomUUID()).toLowerCase();
  try {
    return await store.db
      .insertInto('chassis')
      .values({
        uuid,
        description: values.description ?? null,
        extra: JSON.stringify(values.extra ?? {}),
        created_at: store.sqlNow(),
        updated_at: store.sqlNow(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
    // The uuid is the chassis's one unique column.
    if (isUniqueViolation(err)) throw new Conflict(`a chassis with uuid ${uuid} already exists`);
    throw err;
  }
}

/** Changes a chassis's description and extra; `ChassisNotFound` if it went meanwhile. */
export async function updateChassis(store: Store, uuid: string, changes: ChassisValues): Promise<ChassisRow> {
  const row = await store.db
    .updateTable('chassis')
    .set({
      updated_at: store.sqlNow(),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.extra !== undefined ? { extra: JSON.stringify(changes.extra) } : {}),
    })
    .where('uuid', '=', uuid)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new ChassisNotFound(uuid);
  return row;
}

/** Deletes a chassis; `ChassisNotFound`, or `ChassisNotEmpty` while nodes belong to it. */
export async function deleteChassis(store: Store, uuid: string): Promise<void> {
  let deleted: bigint;
  try {
    deleted = (await store.db.deleteFrom('chassis').where('uuid', '=', uuid).executeTakeFirst()).numDeletedRows;
  } catch (err) {
    if (isForeignKeyViolation(err)) throw new ChassisNotEmpty(uuid);
    throw err;
  }
  if (deleted === 0n) throw new ChassisNotFound(uuid);
}
