/**
 * Choosing a node for a server — pure: given what the scheduler found about each free node of the
 * requested resource class, the nodes it may use (best first) or the reason it may use none.
 *
 * A node is usable when a compute service exposes it (a `compute_nodes` row), that service is live
 * and not disabled, its host is mapped to the service's cell, and no instance holds the node yet. A
 * node on an unmapped host is never selected: the build could not reach it (Nova selects it and
 * then buries the instance in cell0 with "Host 'X' is not mapped to any cell").
 */
import { IronringError } from '../common/errors.js';

/** Thrown when no node can take a server; the message says why and what to do. */
export class NoValidHost extends IronringError {
  override readonly httpStatus = 409;
}

/** A free node of the requested resource class and what the scheduler knows about it. */
export interface Candidate {
  node: string;
  /** Host of the compute service exposing it; null when no compute service exposes it (yet). */
  host: string | null;
  cellUuid: string | null;
  cellName: string | null;
  /** The host is mapped to this cell (host_mappings). */
  mapped: boolean;
  /** The host's compute service is live by the database clock. */
  live: boolean;
  disabled: boolean;
  /** An instance already holds the node in the cell database. */
  claimed: boolean;
}

/** The command that maps every compute service (the fix for an unmapped host). */
export const DISCOVER_FIX = 'ironring manage cell discover-hosts --by-service';

const list = (items: readonly string[], max = 5) => [...new Set(items)].slice(0, max).join(', ') + (new Set(items).size > max ? ', …' : '');

/**
 * The usable candidates in the order to try them (rotated by `start` so that concurrent requests
 * spread over the nodes instead of all racing for the first); throws `NoValidHost` with the reason
 * when there are none.
 */
export function usableCandidates(resourceClass: string, candidates: readonly Candidate[], start = 0): Candidate[] {
  const usable = candidates.filter((c) => c.host !== null && c.mapped && c.live && !c.disabled && !c.claimed);
  if (usable.length > 0) {
    const offset = ((start % usable.length) + usable.length) % usable.length;
    return [...usable.slice(offset), ...usable.slice(0, offset)];
  }
  const free = candidates.filter((c) => !c.claimed);
  if (free.length === 0) {
    throw new NoValidHost(
      `no valid host: no available node of resource class ${JSON.stringify(resourceClass)} ` +
        '(provision state available, not in maintenance, no instance)' +
        (candidates.length > 0 ? `; ${candidates.length} such node(s) are held by servers being built` : ''),
    );
  }
  const unmapped = free.filter((c) => c.host !== null && !c.mapped && c.live && !c.disabled);
  if (unmapped.length > 0) {
    const hosts = [...new Set(unmapped.map((c) => c.host!))];
    const cells = [...new Set(unmapped.map((c) => c.cellName ?? '?'))];
    throw new NoValidHost(
      `no valid host for resource class ${JSON.stringify(resourceClass)}: ` +
        `${hosts.length === 1 ? `host ${hosts[0]} is` : `hosts ${list(hosts)} are`} not mapped to any cell ` +
        `(node${unmapped.length === 1 ? '' : 's'} ${list(unmapped.map((c) => c.node))} in cell ${list(cells)}); ` +
        `run \`${DISCOVER_FIX}\`, or let the scheduler map services periodically ([scheduler] discover_hosts_interval > 0 with discover_hosts_by_service = true)`,
    );
  }
  const disabled = free.filter((c) => c.host !== null && c.live && c.disabled);
  const dead = free.filter((c) => c.host !== null && !c.live);
  const unexposed = free.filter((c) => c.host === null);
  const reasons: string[] = [];
  if (dead.length > 0) reasons.push(`compute service ${list(dead.map((c) => c.host!))} holding ${list(dead.map((c) => c.node))} is down (its nodes move to a live service once it is past service_down_time)`);
  if (disabled.length > 0) reasons.push(`compute service ${list(disabled.map((c) => c.host!))} is disabled`);
  if (unexposed.length > 0) {
    reasons.push(
      `node${unexposed.length === 1 ? '' : 's'} ${list(unexposed.map((c) => c.node))} not yet exposed by any compute service ` +
        '(each lists the nodes every [compute] update_resources_interval; is an `ironring compute` running?)',
    );
  }
  throw new NoValidHost(`no valid host for resource class ${JSON.stringify(resourceClass)}: ${reasons.join('; ')}`);
}
