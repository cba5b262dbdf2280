/**
 * Placing a server: find the free nodes of the requested resource class through the bare-metal API,
 * learn from each cell which compute service exposes them and whether its host is mapped and live,
 * then claim one.
 *
 * The claim is the insert of the instance row into the cell database: `instances.node` is unique,
 * so of two concurrent requests for one node exactly one insert succeeds and the other moves on to
 * the next candidate. The instance mapping in the API database follows; the compute service that
 * hosts the node is woken (NOTIFY on PostgreSQL, its short poll on SQLite) and deploys it.
 */
import { randomUUID } from 'node:crypto';
import { isCell0, listCells } from '../cells/cells.js';
import type { CellMapping } from '../cells/cells.js';
import type { CellStores } from '../cells/cell-stores.js';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import type { BaremetalClient } from '../compute/baremetal-client.js';
import { INSTANCES_CHANNEL } from '../compute/instances.js';
import type { InstanceRow, ServerImage } from '../compute/instances.js';
import { COMPUTE_BINARY, liveExpression } from '../compute/services.js';
import { NoValidHost, usableCandidates } from './candidates.js';
import type { Candidate } from './candidates.js';

export interface ScheduleDeps {
  api: Store;
  cells: CellStores;
  baremetal: BaremetalClient;
  serviceDownTime: number;
  logger?: Logger;
}

export interface ServerRequest {
  name?: string | null;
  resourceClass: string;
  image: ServerImage;
  projectId?: string | null;
}

export interface ScheduledServer {
  instance: InstanceRow;
  cell: CellMapping;
}

const CHUNK = 500;

/** What the cells know about the given free nodes. */
export async function gatherCandidates(deps: ScheduleDeps, nodeUuids: readonly string[]): Promise<Array<Candidate & { cell: CellMapping | null }>> {
  const found = new Map<string, Candidate & { cell: CellMapping | null }>();
  if (nodeUuids.length === 0) return [];
  const cells = (await listCells(deps.api)).filter((c) => !isCell0(c) && !c.disabled);
  for (const cell of cells) {
    const store = await deps.cells.get(cell);
    for (let i = 0; i < nodeUuids.length; i += CHUNK) {
      const batch = nodeUuids.slice(i, i + CHUNK);
      const rows = await store.db
        .selectFrom('compute_nodes')
        .leftJoin('services', (join) => join.onRef('services.host', '=', 'compute_nodes.host').on('services.binary', '=', COMPUTE_BINARY))
        .leftJoin('instances', 'instances.node', 'compute_nodes.uuid')
        .select(['compute_nodes.uuid as node', 'compute_nodes.host as host', 'services.disabled as disabled', 'instances.uuid as instance'])
        .select(store.sqlFlag(liveExpression(store, deps.serviceDownTime)).as('live'))
        .where('compute_nodes.uuid', 'in', batch)
        .execute();
      const hosts = [...new Set(rows.map((r) => r.host))];
      const mapped = new Set<string>();
      for (let j = 0; j < hosts.length; j += CHUNK) {
        const m = await deps.api.db.selectFrom('host_mappings').select('host').where('cell_id', '=', cell.id).where('host', 'in', hosts.slice(j, j + CHUNK)).execute();
        for (const r of m) mapped.add(r.host);
      }
      for (const r of rows) {
        const candidate = {
          node: r.node,
          host: r.host,
          cellUuid: cell.uuid,
          cellName: cell.name,
          cell,
          mapped: mapped.has(r.host),
          live: r.live,
          disabled: Boolean(r.disabled),
          claimed: r.instance !== null,
        };
        const seen = found.get(r.node);
        // A node exposed in two cells (two cells pointed at one bare-metal API): prefer the usable one.
        if (!seen || (!seen.mapped && candidate.mapped)) found.set(r.node, candidate);
      }
    }
  }
  return nodeUuids.map(
    (node) => found.get(node) ?? { node, host: null, cellUuid: null, cellName: null, cell: null, mapped: false, live: false, disabled: false, claimed: false },
  );
}

let rotation = 0;

/** Picks and claims a node for a server; throws `NoValidHost` saying why none fits. */
export async function scheduleServer(deps: ScheduleDeps, request: ServerRequest): Promise<ScheduledServer> {
  const free = await deps.baremetal.listNodes(['uuid', 'resource_class'], {
    provision_state: 'available',
    resource_class: request.resourceClass,
    associated: 'false',
    maintenance: 'false',
  });
  const candidates = await gatherCandidates(
    deps,
    free.map((n) => n.uuid),
  );
  const ordered = usableCandidates(request.resourceClass, candidates, rotation++);
  const uuid = randomUUID();
  for (const candidate of ordered) {
    const cell = (candidate as Candidate & { cell: CellMapping }).cell;
    const store = await deps.cells.get(cell);
    const inserted = await store.db
      .insertInto('instances')
      .values({
        uuid,
        display_name: request.name ?? null,
        project_id: request.projectId ?? null,
        host: candidate.host,
        node: candidate.node,
        resource_class: request.resourceClass,
        vm_state: 'building',
        task_state: 'spawning',
        image: JSON.stringify(request.image),
      })
      .onConflict((oc) => oc.column('node').doNothing())
      .returningAll()
      .executeTakeFirst();
    if (!inserted) {
      deps.logger?.debug({ node: candidate.node }, 'node claimed concurrently; trying the next');
      continue;
    }
    try {
      await deps.api.db.insertInto('instance_mappings').values({ instance_uuid: uuid, cell_id: cell.id, project_id: request.projectId ?? null }).execute();
    } catch (err) {
      await store.db.deleteFrom('instances').where('uuid', '=', uuid).execute();
      throw err;
    }
    await store.notify(INSTANCES_CHANNEL, candidate.host!).catch(() => undefined);
    deps.logger?.info({ instance: uuid, node: candidate.node, host: candidate.host, cell: cell.name }, 'server scheduled');
    return { instance: inserted, cell };
  }
  throw new NoValidHost(`no valid host for resource class ${JSON.stringify(request.resourceClass)}: every usable node was claimed by concurrent requests`);
}
