/**
 * Node traits (Ironic's, API 1.37): names a flavor's required traits are matched against, set by the
 * operator (`/v1/nodes/{node}/traits`) or by inspection rules (`add-trait`, `remove-trait`).
 *
 * A trait is a custom one — `CUSTOM_` then A–Z, 0–9 and `_` — or a standard one; ironring does not
 * carry os-traits' list, so it takes as standard any name of the same characters in one of its
 * namespaces (`COMPUTE_`, `HW_`, `MISC_`, `OWNER_`, `STORAGE_`). At most 255 characters, at most
 * 50 traits on a node (Ironic's limits). Stored one row per trait (`node_traits`), sorted when read.
 */
import { InvalidParameter, NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';

/** Ironic's `MAX_TRAITS_PER_NODE`. */
export const MAX_TRAITS_PER_NODE = 50;
const MAX_TRAIT_LENGTH = 255;
const TRAIT = /^(CUSTOM|COMPUTE|HW|MISC|OWNER|STORAGE)_[A-Z0-9_]+$/;

/** The trait, or a 400 naming `field` and what a valid trait is. */
export function checkTrait(value: unknown, field = 'trait'): string {
  if (typeof value !== 'string' || value.length > MAX_TRAIT_LENGTH || !TRAIT.test(value)) {
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 300)) : JSON.stringify(value) ?? String(value);
    throw new InvalidParameter(
      `${field}: invalid trait ${shown}. A valid trait must be no longer than 255 characters. Standard traits are those of os-traits' namespaces (COMPUTE_, HW_, MISC_, OWNER_, STORAGE_); a custom trait must start with the prefix CUSTOM_ and use only A-Z, 0-9 and _`,
    );
  }
  return value;
}

/** The distinct traits of a `{"traits": [...]}` body, checked. */
export function parseTraitList(body: unknown): string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('body: expected an object {"traits": [...]}');
  const extra = Object.keys(body).filter((k) => k !== 'traits');
  if (extra.length > 0) throw new InvalidParameter(`${extra[0]}: unknown field; the body has "traits" only`);
  const traits = (body as { traits?: unknown }).traits;
  if (!Array.isArray(traits)) throw new InvalidParameter('traits: expected a list of traits');
  if (traits.length > MAX_TRAITS_PER_NODE) throw tooMany(traits.length);
  return [...new Set(traits.map((t, i) => checkTrait(t, `traits[${i}]`)))];
}

function tooMany(count: number): InvalidParameter {
  return new InvalidParameter(`traits: the node would have ${count} traits; at most ${MAX_TRAITS_PER_NODE} are allowed`);
}

/** The node's traits, sorted. */
export async function listTraits(store: Store, nodeId: number): Promise<string[]> {
  const rows = await store.db.selectFrom('node_traits').select('trait').where('node_id', '=', nodeId).orderBy('trait').execute();
  return rows.map((r) => r.trait);
}

/** The traits of several nodes at once (a page of a node list), by node id. */
export async function traitsOfNodes(store: Store, nodeIds: readonly number[]): Promise<Map<number, string[]>> {
  const found = new Map<number, string[]>(nodeIds.map((id) => [id, []]));
  if (nodeIds.length === 0) return found;
  const rows = await store.db.selectFrom('node_traits').select(['node_id', 'trait']).where('node_id', 'in', [...nodeIds]).orderBy('trait').execute();
  for (const row of rows) found.get(row.node_id)?.push(row.trait);
  return found;
}

/** Replaces the node's traits with `traits` (checked by `parseTraitList`). */
export async function setTraits(store: Store, nodeId: number, traits: readonly string[]): Promise<void> {
  if (traits.length > MAX_TRAITS_PER_NODE) throw tooMany(traits.length);
  await store.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('node_traits').where('node_id', '=', nodeId).execute();
    if (traits.length > 0) await trx.insertInto('node_traits').values(traits.map((trait) => ({ node_id: nodeId, trait, created_at: store.sqlNow() }))).execute();
  });
}

/** Adds traits the node does not have yet (400 past the limit); the ones it has stay. */
export async function addTraits(store: Store, nodeId: number, traits: readonly string[]): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const have = new Set((await trx.selectFrom('node_traits').select('trait').where('node_id', '=', nodeId).execute()).map((r) => r.trait));
    const added = [...new Set(traits)].filter((t) => !have.has(t));
    if (added.length === 0) return;
    if (have.size + added.length > MAX_TRAITS_PER_NODE) throw tooMany(have.size + added.length);
    await trx.insertInto('node_traits').values(added.map((trait) => ({ node_id: nodeId, trait, created_at: store.sqlNow() }))).execute();
  });
}

/** Removes one trait; 404 when the node does not have it. */
export async function removeTrait(store: Store, nodeId: number, nodeUuid: string, trait: string): Promise<void> {
  const removed = await store.db.deleteFrom('node_traits').where('node_id', '=', nodeId).where('trait', '=', trait).executeTakeFirst();
  if (Number(removed.numDeletedRows) === 0) throw new NotFound(`Node ${nodeUuid} doesn't have a trait ${trait}`);
}

/** Removes the given traits where present (inspection rules' `remove-trait`). */
export async function dropTraits(store: Store, nodeId: number, traits: readonly string[]): Promise<void> {
  if (traits.length === 0) return;
  await store.db.deleteFrom('node_traits').where('node_id', '=', nodeId).where('trait', 'in', [...traits]).execute();
}
