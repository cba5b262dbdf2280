/**
 * `ironring ring show`: where the live cluster places nodes — owner and replicas of each node and
 * nodes per conductor — read from a running API (`GET /v1/ring`).
 */
import { Command, Option } from 'commander';
import { apiGet, clientContext, withClientOptions } from '../client.js';
import { emit, renderTable } from '../output.js';

interface RingResponse {
  mode: string;
  replicas: number;
  groups: Array<{ conductor_group: string; hosts: string[]; node_counts: Record<string, number> }>;
  nodes: Array<{ uuid: string; name: string | null; conductor_group: string; owner: string | null; replicas: string[]; conductor_affinity?: string | null }>;
}

export function ringShowCommand(): Command {
  const show = new Command('show')
    .summary('show where the live cluster places nodes')
    .description(
      'Show the live placement: for each node its owner conductor and replicas (ring order), and for each ' +
        'conductor group its live conductors and how many nodes each owns. Reads a running API (--url).',
    )
    .addOption(new Option('--node <uuid-or-name>', 'show only this node'));
  return withClientOptions(show).action(async (opts: { node?: string }, command: Command) => {
      const { base, format } = clientContext(command);
      const path = opts.node === undefined ? '/v1/ring' : `/v1/ring?node=${encodeURIComponent(opts.node)}`;
      const ring = await apiGet<RingResponse>(base, path);
      emit(format, ring, () => {
        const nodes = renderTable(ring.nodes, [
          { header: 'Node', value: (n) => n.uuid },
          { header: 'Name', value: (n) => n.name },
          { header: 'Group', value: (n) => n.conductor_group },
          { header: 'Owner', value: (n) => n.owner ?? '(no live conductor)' },
          { header: 'Replicas', value: (n) => n.replicas.join(', ') },
          // Where the node's boot files are current; "(pending)" while its owner has not taken it over yet.
          { header: 'Affinity', value: (n) => (n.conductor_affinity ?? '-') + (n.owner !== null && n.conductor_affinity !== n.owner && n.conductor_affinity != null ? ' (pending)' : '') },
        ]);
        if (opts.node !== undefined) return nodes;
        const counts = ring.groups.flatMap((g) =>
          g.hosts.length === 0
            ? [{ group: g.conductor_group, conductor: '(none live)', nodes: ring.nodes.filter((n) => n.conductor_group === g.conductor_group).length }]
            : g.hosts.map((h) => ({ group: g.conductor_group, conductor: h, nodes: g.node_counts[h] ?? 0 })),
        );
        const summary = renderTable(counts, [
          { header: 'Group', value: (r) => r.group },
          { header: 'Conductor', value: (r) => r.conductor },
          { header: 'Nodes owned', value: (r) => r.nodes },
        ]);
        return `${nodes}\n\nMode ${ring.mode}, ${ring.replicas} conductors per node (owner + replicas).\n${summary}`;
      });
    });
}
