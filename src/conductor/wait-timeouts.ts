/**
 * Waiting states that never end (Ironic's `_check_deploy_timeouts`, `_check_cleanwait_timeouts`,
 * `_check_inspect_wait_timeouts`, `_check_rescuewait_timeouts`): every `[conductor]
 * check_provision_state_interval` seconds a conductor looks at the nodes it owns on the ring that
 * wait for their agent — `wait call-back`, `clean wait`, `inspect wait`, `rescue wait` — and fails
 * those that have waited longer than the state's timeout (`deploy_callback_timeout`,
 * `clean_callback_timeout`, `inspect_wait_timeout`, `rescue_callback_timeout`; 0: wait for ever)
 * since they entered it or their agent last heartbeated, whichever is later: a machine that never
 * booted its ramdisk, or whose agent died, does not hold its node for ever. The node goes to the
 * state's failure with Ironic's message in `last_error`, powered off, its ramdisk's boot files
 * gone (`NodeOperations.failWaitTimeout`). A node locked at that moment is looked at again on the
 * next pass.
 */
import type { ConductorRings } from '../cluster/conductor-rings.js';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import { PeriodicPass } from './periodic.js';

/** The timeout of each waiting state, in seconds (0: none). */
export interface WaitTimeoutSettings {
  'wait call-back': number;
  'clean wait': number;
  'inspect wait': number;
  'rescue wait': number;
}

export interface WaitTimeoutsOptions {
  store: Store;
  hostname: string;
  group: string;
  view: Pick<ConductorRings, 'ring'>;
  logger: Logger;
  /** `check_provision_state_interval`; 0 disables the timer (`runOnce` still works). */
  intervalSeconds: number;
  timeouts: WaitTimeoutSettings;
  /** Fails one node that waited `seconds` too long; false when it was locked or no longer waiting. */
  fail: (uuid: string, state: keyof WaitTimeoutSettings, seconds: number) => Promise<boolean>;
}

/** When a waiting node last showed life: its state's start or its agent's last heartbeat. */
export function lastSign(node: { provision_updated_at: Date | null; updated_at: Date; driver_internal_info: Readonly<Record<string, unknown>> }): number {
  const entered = (node.provision_updated_at ?? node.updated_at).getTime();
  const beat = typeof node.driver_internal_info.agent_last_heartbeat === 'string' ? Date.parse(node.driver_internal_info.agent_last_heartbeat) : Number.NaN;
  return Number.isNaN(beat) ? entered : Math.max(entered, beat);
}

export class WaitTimeouts {
  private readonly periodic: PeriodicPass<string[]>;
  private readonly log: Logger;

  constructor(private readonly options: WaitTimeoutsOptions) {
    this.log = options.logger.child({ component: 'wait-timeouts' });
    this.periodic = new PeriodicPass(options.intervalSeconds, () => this.pass(), this.log, 'checking waiting nodes');
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One pass now (or the one in flight); resolves with the nodes it failed. */
  runOnce(): Promise<string[]> {
    return this.periodic.runOnce();
  }

  private async pass(): Promise<string[]> {
    const { store, group, hostname, view, timeouts } = this.options;
    const states = (Object.keys(timeouts) as Array<keyof WaitTimeoutSettings>).filter((s) => timeouts[s] > 0);
    const ring = view.ring(group);
    if (states.length === 0 || ring === undefined) return [];
    const rows = await store.db
      .selectFrom('nodes')
      .select(['uuid', 'provision_state', 'provision_updated_at', 'updated_at', 'driver_internal_info'])
      .where('conductor_group', '=', group)
      .where('provision_state', 'in', states)
      .where('reservation', 'is', null)
      .execute();
    const now = (await store.now()).getTime();
    const failed: string[] = [];
    for (const node of rows) {
      // A stopping conductor ends the pass between nodes; the next owner looks at the rest.
      if (this.periodic.halting) break;
      if (ring.owner(node.uuid) !== hostname) continue;
      const state = node.provision_state as keyof WaitTimeoutSettings;
      const limit = timeouts[state] * 1000;
      if (now - lastSign(node) <= limit) continue;
      try {
        if (await this.options.fail(node.uuid, state, timeouts[state])) failed.push(node.uuid);
      } catch (err) {
        this.log.warn({ node: node.uuid, err: (err as Error).message }, 'could not fail a node that waited too long');
      }
    }
    if (failed.length > 0) this.log.warn({ nodes: failed }, 'failed nodes that waited too long for their agent');
    return failed;
  }
}
