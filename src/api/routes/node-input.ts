/**
 * Validating node input (create bodies) against the node field table, so that bad requests get a
 * 400 naming the field, fields newer than the request's microversion a 406, and nothing reaches the
 * database unchecked.
 */
import type { NewNode } from '../../nodes/node-store.js';
import { NODE_FIELDS } from '../../nodes/node-fields.js';
import { checkJsonField } from '../json-fields.js';
import type { JsonFieldLimits } from '../json-fields.js';
import type { Microversion } from '../microversions.js';

export type NodeCreateInput = Omit<NewNode, 'provision_state'> & { driver: string };

/** Validates a `POST /v1/nodes` body; returns the values to insert (JSON columns as text). */
export function validateNewNode(body: unknown, version: Microversion, limits: JsonFieldLimits): NodeCreateInput {
  const values = NODE_FIELDS.create(body, version);
  for (const field of NODE_FIELDS.jsonFields()) {
    if (values[field] === undefined) continue;
    checkJsonField(field, values[field], limits);
    values[field] = JSON.stringify(values[field]);
  }
  return values as NodeCreateInput;
}
