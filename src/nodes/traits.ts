/**
 * Node traits (Ironic's, API 1.37): names a flavor's required traits are matched against, set by the
 * operator (`/v1/nodes/{node}/traits`) or by inspection rules (`add-trait`, `remove-trait`).
 *
 * A trait is a custom one — `CUSTOM_` then A–Z, 0–9 and `_` — or a standard one; ironring does not
 * carry os-traits' list, so it takes as standard any name of the same characters in one of its
 * namespaces (`COMPUTE_`, `HW_`, `MISC_`, `OWNER_`, `STORAGE_`). At most 255 characters, at most
 * 50 traits on a node (Ironic's limits). Stored sorted, as a JSON list on the node's row (`nodes.traits`).
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
  const row = await store.db.selectFrom('nodes').select('traits').where('id', '=', nodeId).executeTakeFirst();
  return row?.traits ?? [];
}

/**
 * Changes the node's traits under a row lock (`FOR UPDATE` on PostgreSQL; SQLite serializes
 * writers): `change` gets the current traits and returns the new ones, or throws to change nothing.
 */
async function changeTraits(store: Store, nodeId: number, change: (current: string[]) => string[]): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    let query = trx.selectFrom('nodes').select('traits').where('id', '=', nodeId);
    if (store.engine === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    if (row === undefined) return;
    const next = [...new Set(change(row.traits))].sort();
    if (next.length > MAX_TRAITS_PER_NODE) throw tooMany(next.length);
    if (JSON.stringify(next) === JSON.stringify(row.traits)) return;
    await trx.updateTable('nodes').set({ traits: JSON.stringify(next), updated_at: store.sqlNow() }).where('id', '=', nodeId).execute();
  });
}

/** Replaces the node's traits with `traits` (checked by `parseTraitList`). */
export function setTraits(store: Store, nodeId: number, traits: readonly string[]): Promise<void> {
  return changeTraits(store, nodeId, () => [...traits]);
}

/** Adds traits the node does not have yet (400 past the limit); the ones it has stay. */
export function addTraits(store: Store, nodeId: number, traits: readonly string[]): Promise<void> {
  return changeTraits(store, nodeId, (current) => [...current, ...traits]);
}

/** Removes one trait; 404 when the node does not have it. */
export function removeTrait(store: Store, nodeId: number, nodeUuid: string, trait: string): Promise<void> {
  return changeTraits(store, nodeId, (current) => {
    if (!current.includes(trait)) throw new NotFound(`Node ${nodeUuid} doesn't have a trait ${trait}`);
    return current.filter((t) => t !== trait);
  });
}

/** Removes the given traits where present (inspection rules' `remove-trait`). */
export function dropTraits(store: Store, nodeId: number, traits: readonly string[]): Promise<void> {
  if (traits.length === 0) return Promise.resolve();
  return changeTraits(store, nodeId, (current) => current.filter((t) => !traits.includes(t)));
}
