/**
 * The API's JSON shape of a node, as the Ironic API shows it at a given microversion: the node
 * field table (`nodes/node-fields.ts`) says which fields a version shows and how each is read —
 * fields that appeared later are hidden from older clients, secrets in `driver_info` and
 * `instance_info` are masked — and this adds the links to the node, its ports and its states.
 */
import { MASKED, maskSecrets } from '../../common/mask.js';
import type { NodeRow } from '../../db/schema.js';
import { NODE_FIELDS, NODE_LIST_FIELDS } from '../../nodes/node-fields.js';
import type { NodeFieldContext } from '../../nodes/node-fields.js';
import { resourceLinks } from '../links.js';
import type { Microversion } from '../microversions.js';

/** Re-exported: the masking rules live with the other secret-hiding code. */
export { MASKED, maskSecrets };
export { NODE_FIELDS, NODE_LIST_FIELDS };

export interface NodeViewContext extends NodeFieldContext {
  base: string;
  version: Microversion;
}

/** The node fields a microversion shows (one array per version). */
export function fieldsAt(version: Microversion): string[] {
  return NODE_FIELDS.fieldsAt(version);
}

/** The columns needed to render `fields` (the uuid always, for links). */
export function columnsFor(fields: readonly string[]): Array<keyof NodeRow & string> {
  return NODE_FIELDS.columnsFor(fields, ['uuid']);
}

/** Renders a node with the given fields (all fields of the version when omitted). */
export function renderNode(node: NodeRow, ctx: NodeViewContext, fields?: readonly string[], withResourceLinks = true): Record<string, unknown> {
  const out = NODE_FIELDS.render(node, ctx, fields ?? fieldsAt(ctx.version));
  out.links = resourceLinks(ctx.base, 'nodes', node.uuid);
  if (withResourceLinks && fields === undefined) {
    out.ports = resourceLinks(ctx.base, `nodes/${node.uuid}`, 'ports');
    out.states = resourceLinks(ctx.base, `nodes/${node.uuid}`, 'states');
  }
  return out;
}
