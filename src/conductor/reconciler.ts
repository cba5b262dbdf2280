/**
 * The reconciler ("sync local state", DESIGN §1 invariants 2, 3, 5 and §5; docs/takeover.md): keeps
 * this conductor's local boot state in line with the ring. The **owner** of a node takes it over
 * when it boots from the network and resumes (or fails) working states a departed conductor left
 * unlocked; a **replica** pre-caches its kernels and ramdisks; **anyone else** removes its files once
 * the new owner has taken over, so a node is never without a conductor serving its config.
 *
 * This module owns when passes run: triggers (ring changes, start, node changes by NOTIFY and a
 * change-stamp poll, retries, the periodic safety net), one pass at a time, asks coalesced. A pass
 * reads (`reconcile-inputs.ts`), decides with a pure plan (`reconcile-plan.ts`, which holds the
 * rules), carries the plan out (`reconcile-executor.ts`, `take-over.ts`) and reports. What is
 * remembered per node between passes lives in one `NodeMemory` (`reconcile-memory.ts`), so a pass
 * over unchanged nodes touches no file; the start pass and the periodic pass verify instead of
 * trusting it.
 */
import type { Logger } from '../common/logger.js';
import { SerialWork } from '../common/serial-work.js';
import type { RunCause } from '../common/serial-work.js';
import { NODES_CHANNEL } from '../cluster/task.js';
import { executePlan } from './reconcile-executor.js';
import { fingerprint, readPassInputs } from './reconcile-inputs.js';
import type { Port } from './reconcile-inputs.js';
import { NodeMemory } from './reconcile-memory.js';
import { PassLog } from './pass-log.js';
import type { ReconcilerOptions } from './reconcile-options.js';
import { planPass } from './reconcile-plan.js';
import { emptyReport, phaseClock } from './reconcile-report.js';
import type { PassReport } from './reconcile-report.js';

export { NODES_CHANNEL } from '../cluster/task.js';
export type { ReconcilerOptions } from './reconcile-options.js';
export type { PassReport } from './reconcile-report.js';

/**
 * Verify sweeps cut short in a row (each gave way to a waiting pass) before one runs to its end
 * regardless: a stream of node changes must not put the safety net off for good.
 */
const MAX_SWEEP_CUTS = 5;

export class Reconciler {
  /** What this process remembers per node between passes (shared with the take-over). */
  private readonly memory = new NodeMemory();
  /** Runs the passes: one at a time, asks coalesced, the periodic pass, retries with back-off. */
  private work: SerialWork | null = null;
  private pendingTrigger: { reason: string; verify: boolean } | null = null;
  /** The last verify pass's sweep gave way to another pass: the next pass sweeps. */
  private sweepOwed = false;
  /** Sweeps cut short in a row; after `MAX_SWEEP_CUTS` one runs to its end whatever waits. */
  private sweepCuts = 0;
  private stopped = true;
  private pollTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private listener: { close(): Promise<void> } | null = null;
  private changeStamp = '';
  private readonly log: Logger;
  /** Passes worth a place on the take-over timeline, written as ring events. */
  private readonly passLog: PassLog;
  /** The last pass's report. */
  last: PassReport | null = null;
  /** Resolvers waiting for the next pass to end. */
  private waiters: Array<(report: PassReport) => void> = [];

  constructor(private readonly options: ReconcilerOptions) {
    this.log = options.logger.child({ component: 'reconciler' });
    this.passLog = new PassLog({ store: options.store, hostname: options.hostname, group: options.group, logger: this.log });
  }

  /** Subscribes to the triggers and runs the start pass (files checked, nothing trusted). */
  async start(): Promise<void> {
    this.stopped = false;
    const { view, store, intervalSeconds, metrics } = this.options;
    this.work = new SerialWork({
      name: 'reconcile pass',
      run: (cause) => this.runPass(cause),
      logger: this.log,
      intervalMs: intervalSeconds > 0 ? intervalSeconds * 1000 : 0,
      backoff: { initialMs: 2000, maxMs: 60_000 },
      unref: true,
      onFailure: () => metrics.passFailures.inc(),
    });
    this.unsubscribe = view.subscribe((change) => {
      if (change.group === this.options.group) this.trigger(`ring change to version ${change.version}`);
    });
    this.listener = await store.listen(NODES_CHANNEL, {
      onMessage: (payload) => {
        if (payload === this.options.group || payload === '') this.trigger('node change');
      },
      onReconnect: () => this.trigger('notifications resumed'),
      onError: () => undefined,
    });
    // The change poll's baseline is taken before the start pass reads the nodes: a write another
    // conductor makes after that read (a take-over decided on a ring that did not have this
    // conductor yet, say) then shows as a change and brings another pass. A baseline taken after
    // the read would absorb such a write, and without notifications (SQLite) nothing else would
    // bring this conductor back to those nodes before the periodic pass.
    await this.pollChanges();
    this.pollTimer = setInterval(() => void this.pollChanges(), this.options.changePollMs ?? 1000);
    this.pollTimer.unref();
    this.work.start();
    this.trigger('start', { verify: true });
  }

  /** Stops the triggers and waits for a running pass (which stops between nodes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    const passing = this.work?.stop();
    this.unsubscribe?.();
    await this.listener?.close();
    this.listener = null;
    await passing;
  }

  /** Asks for a pass; passes never overlap, and asks during one coalesce into one more pass. */
  trigger(reason: string, options: { verify?: boolean } = {}): void {
    if (this.stopped) return;
    this.addTrigger(reason, options.verify ?? false);
    void this.work?.request();
  }

  /** Adds a reason (and verify) to the next pass's trigger. */
  private addTrigger(reason: string, verify: boolean): void {
    const before = this.pendingTrigger;
    const reasons = before && !before.reason.split(', ').includes(reason) ? `${before.reason}, ${reason}` : (before?.reason ?? reason);
    this.pendingTrigger = { reason: reasons, verify: verify || (before?.verify ?? false) };
  }

  /**
   * Records that this conductor's own node work left `uuid` booting from files made here, as of the
   * release that set its affinity (`stamp`) with these ports: the next pass finds it current and
   * leaves it alone instead of taking over its own node again.
   */
  bootStateMade(uuid: string, stamp: string, ports: readonly Port[]): void {
    this.memory.markCurrent(uuid, fingerprint(stamp, ports));
    this.memory.clearFailure(uuid);
  }

  /** Resolves with the report of the next pass to finish (triggering one if none is due). */
  nextPass(options: { verify?: boolean } = {}): Promise<PassReport> {
    const done = new Promise<PassReport>((resolve) => this.waiters.push(resolve));
    this.trigger('requested', options);
    return done;
  }

  /** One run of the serial work: the pass the coalesced triggers (and the period or a retry) ask for. */
  private async runPass(cause: RunCause): Promise<void> {
    if (cause.periodic) this.addTrigger('periodic', true);
    if (cause.retry) this.addTrigger('retry', false);
    const pending = this.pendingTrigger;
    this.pendingTrigger = null;
    if (!pending || this.stopped) return;
    // A failure rejects: SerialWork logs it, counts it and retries after a back-off.
    const report = await this.pass(pending.reason, pending.verify);
    this.last = report;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake(report);
    if (report.pending > 0 || report.awaitingNewOwner > 0) this.scheduleRetry(this.options.retryMs ?? 500);
    else if (report.backingOff > 0) this.scheduleRetry(Math.max(100, (this.memory.nextRetryAt() ?? Infinity) - Date.now()));
  }

  private scheduleRetry(ms: number): void {
    if (this.stopped) return;
    this.work?.later(ms);
  }

  /** Triggers a pass when the group's nodes or ports changed since the last look (one small query). */
  private async pollChanges(): Promise<void> {
    if (this.stopped) return;
    try {
      const { store, group } = this.options;
      const row = await store.db
        .selectFrom('nodes')
        .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('updated_at').as('u')])
        .where('conductor_group', '=', group)
        .executeTakeFirst();
      const ports = await store.db
        .selectFrom('ports')
        .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('updated_at').as('u')])
        .executeTakeFirst();
      const stamp = JSON.stringify([row?.n, String(row?.u), ports?.n, String(ports?.u)]);
      if (this.changeStamp !== '' && stamp !== this.changeStamp) this.trigger('node change');
      this.changeStamp = stamp;
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'could not poll for node changes');
    }
  }

  /** One pass: read, plan, carry the plan out, report. */
  async pass(trigger: string, verify: boolean): Promise<PassReport> {
    const started = performance.now();
    const { store, group, view, replicas } = this.options;
    const me = this.options.conductorId();
    const ring = view.ring(group);
    const report = emptyReport(trigger, verify, view.version);
    const clock = phaseClock(report);
    const { boot } = this.options;
    const reads = await readPassInputs(store, group, boot);
    report.nodes = reads.nodes.length;
    const plan = planPass({
      hostname: this.options.hostname,
      conductorId: me,
      hostsOf: (uuid) => (ring ? ring.lookup(uuid, { replicas }) : []),
      nodes: reads.nodes,
      ports: reads.ports,
      onDisk: reads.onDisk,
      verify,
      hasBoot: boot !== undefined,
      memory: this.memory,
      now: Date.now(),
      orphanGraceMs: this.options.orphanGraceMs ?? 60_000,
    });
    Object.assign(report, plan.counts);
    clock.lap('read');
    const context = { options: this.options, log: this.log, memory: this.memory, stopped: () => this.stopped, passWaiting: () => this.sweepCuts < MAX_SWEEP_CUTS && this.pendingTrigger !== null };
    ({ sweepOwed: this.sweepOwed } = await executePlan(context, plan, { me, ports: reads.ports, verify, sweepOwed: this.sweepOwed, report, lap: clock.lap }));
    this.sweepCuts = this.sweepOwed ? this.sweepCuts + 1 : 0;
    clock.round();
    report.durationMs = performance.now() - started;
    this.record(report);
    return report;
  }

  /** Exports a pass's report as metrics and logs it (at info when it did something). */
  private record(report: PassReport): void {
    const { metrics } = this.options;
    metrics.nodesOwned.set(report.owned);
    metrics.nodesReplicated.set(report.replicated);
    metrics.nodesPendingTakeover.set(report.pending + report.backingOff);
    metrics.lastPassSeconds.set(report.durationMs / 1000);
    metrics.passSeconds.observe({ trigger: report.trigger.split(' ')[0] }, report.durationMs / 1000);
    metrics.ringVersion.set(report.ringVersion);
    this.passLog.record(report);
    const worked = report.takenOver + report.cleanedUp + report.resumed + report.strandedFailed + report.precached + report.failed;
    (worked > 0 ? this.log.info.bind(this.log) : this.log.debug.bind(this.log))(
      { ...report, durationMs: Math.round(report.durationMs) },
      'reconcile pass',
    );
  }
}
