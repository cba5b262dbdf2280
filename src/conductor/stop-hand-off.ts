/**
 * The last act of a graceful stop in dnsmasq files mode (docs/boot.md): the stopping conductor
 * retires its DHCP entries of each node **right after** that node's new owner has written its own —
 * the new owner sets `conductor_affinity` only once its files (DHCP entries included) are on disk, so
 * affinity moving away is the signal. Retiring earlier would leave the node without an answer;
 * never retiring would leave a dnsmasq per conductor offering the stopped conductor (issue #16).
 * Meanwhile the stopping conductor's boot servers still run, so both answers lead to a working boot.
 *
 * Nodes nobody takes over (no conductor left in the group, or the wait ran out) keep their entries:
 * pointing at a stopped conductor is no worse than no answer, and the conductor's next start (or the
 * new owner in a shared directory) deals with them.
 */
import type { BootEnvironment } from '../boot/index.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import { CONDUCTOR_BOOT_STATES } from '../nodes/state-machine.js';

export interface HandOffOptions {
  store: Store;
  boot: BootEnvironment;
  /** The stopping conductor's host name (as in `reservation`) and row id (as in `conductor_affinity`). */
  hostname: string;
  conductorId: number;
  group: string;
  view: ConductorRings;
  /** When to give up waiting (ms since the epoch); asked on every round, so it may move. */
  deadline: () => number;
  log: Logger;
  /** How often the nodes' rows are read again (ms). */
  pollMs: number;
}

/** What the hand-off did. */
export interface HandOffReport {
  retired: number;
  /** Nodes whose entries were kept: nobody took them over in time. */
  kept: number;
}

const CHUNK = 500;

/** Waits for the new owners and retires this conductor's DHCP entries of each node they took. */
export async function retireHandedOff(options: HandOffOptions): Promise<HandOffReport> {
  const { store, boot, hostname, conductorId, log } = options;
  const left = new Set(await boot.listPrepared());
  let retired = 0;
  for (;;) {
    const uuids = [...left];
    for (let i = 0; i < uuids.length; i += CHUNK) {
      const chunk = uuids.slice(i, i + CHUNK);
      const rows = await store.db
        .selectFrom('nodes')
        .select(['uuid', 'provision_state', 'reservation', 'conductor_affinity'])
        .where('uuid', 'in', chunk)
        .execute();
      const byUuid = new Map(rows.map((r) => [r.uuid, r]));
      for (const uuid of chunk) {
        const row = byUuid.get(uuid);
        // Our own task still works on it; once its lock is released the new owner takes it over.
        if (row?.reservation === hostname) continue;
        const handedOff =
          row === undefined ||
          !CONDUCTOR_BOOT_STATES.has(row.provision_state) ||
          (row.conductor_affinity !== null && row.conductor_affinity !== conductorId);
        if (!handedOff) continue;
        try {
          const changes = await boot.retireDhcp({ uuid });
          if (changes.written.length + changes.removed.length > 0) retired += 1;
        } catch (err) {
          log.warn({ node: uuid, err: (err as Error).message }, 'could not retire the DHCP entries of a node handed off');
        }
        left.delete(uuid);
      }
    }
    if (left.size === 0) break;
    const nobody = (options.view.ring(options.group)?.hosts.length ?? 0) === 0;
    if (nobody || Date.now() >= options.deadline()) {
      log.warn(
        { nodes: left.size, sample: [...left].slice(0, 10), reason: nobody ? 'no conductor left in the group' : 'the wait ran out' },
        'keeping the DHCP entries of nodes no other conductor took over',
      );
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
  if (retired > 0) log.info({ nodes: retired }, 'retired the DHCP entries of nodes their new owners took over');
  return { retired, kept: left.size };
}
