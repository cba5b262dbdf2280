/**
 * The reconciler ("sync local state", DESIGN §1 invariants 2, 3, 5 and §5; docs/takeover.md): keeps
 * this conductor's local boot state in line with the ring. A pass reads the live ring, the group's
 * nodes (brief columns) and ports, and the node directories on disk, then per node: the **owner**
 * takes over nodes that boot from the network (batch lock, `deploy.prepare` + `deploy.takeOver`,
 * one flush, `conductor_affinity`, history; see `take-over.ts`) — maintenance or not — and resumes (or,
 * where that is not safe, fails) every working state a departed conductor left unlocked, whatever
 * its boot needs (`stranded-work.ts`); a **replica** pre-caches kernels and ramdisks (never the user
 * image); **anyone else** removes its files once the new owner has taken over, so a node is never
 * without a conductor serving its config. "Current" is remembered per node (its `updated_at` and
 * ports), so a pass over unchanged nodes touches no file; the start pass and the periodic safety
 * net re-check every owned node's files instead. Triggers: ring changes, start, node changes
 * (NOTIFY and a change-stamp poll), retries and the periodic pass; passes never overlap.
 */
import { sql } from 'kysely';
import type { Logger } from '../common/logger.js';
import { SerialWork } from '../common/serial-work.js';
import type { RunCause } from '../common/serial-work.js';
import { NODES_CHANNEL } from '../cluster/task.js';
import { BATCH, BOOT_STATE_STATES, bootImages, chunks, fingerprint, pool, stampColumn, WORKING } from './reconcile-parts.js';
import { NodeMemory } from './reconcile-memory.js';
import type { MemoryUpdates } from './reconcile-memory.js';
import { takeOverNodes } from './take-over.js';
import type { NodeBrief, PassReport, Port, ReconcilerOptions } from './reconcile-parts.js';

export { NODES_CHANNEL } from '../cluster/task.js';
export { BOOT_STATE_STATES } from './reconcile-parts.js';
export type { PassReport, ReconcilerOptions } from './reconcile-parts.js';

export class Reconciler {
  /** What this process remembers per node between passes (shared with the take-over). */
  private readonly memory = new NodeMemory();
  /** Runs the passes: one at a time, asks coalesced, the periodic pass, retries with back-off. */
  private work: SerialWork | null = null;
  private pendingTrigger: { reason: string; verify: boolean } | null = null;
  private stopped = true;
  private pollTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private listener: { close(): Promise<void> } | null = null;
  private changeStamp = '';
  private readonly log: Logger;
  /** The last pass's report. */
  last: PassReport | null = null;
  /** Resolvers waiting for the next pass to end. */
  private waiters: Array<(report: PassReport) => void> = [];

  constructor(private readonly options: ReconcilerOptions) {
    this.log = options.logger.child({ component: 'reconciler' });
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

  /** One pass; see the module comment. */
  async pass(trigger: string, verify: boolean): Promise<PassReport> {
    const started = performance.now();
    const { store, group, view, metrics } = this.options;
    const me = this.options.conductorId();
    const ringVersion = view.version;
    const ring = view.rings.tryRing(group);
    const report: PassReport = {
      trigger,
      verify,
      ringVersion,
      nodes: 0,
      owned: 0,
      replicated: 0,
      takenOver: 0,
      precached: 0,
      cleanedUp: 0,
      resumed: 0,
      strandedFailed: 0,
      pending: 0,
      backingOff: 0,
      awaitingNewOwner: 0,
      failed: 0,
      durationMs: 0,
      phasesMs: { read: 0, takeOver: 0, precache: 0, cleanUp: 0 },
    };
    const phases = report.phasesMs;
    let mark = performance.now();
    /** Adds the time since the last mark to a phase. */
    const lap = (phase: keyof PassReport['phasesMs']) => {
      const now = performance.now();
      phases[phase] += now - mark;
      mark = now;
    };
    const boot = this.options.boot();
    const [nodes, portRows, onDisk] = await Promise.all([
      store.db
        .selectFrom('nodes')
        .select(['id', 'uuid', 'provision_state', 'reservation', 'conductor_affinity', 'maintenance', stampColumn])
        .where('conductor_group', '=', group)
        .execute() as Promise<NodeBrief[]>,
      store.db
        .selectFrom('ports')
        .innerJoin('nodes', 'nodes.id', 'ports.node_id')
        .select(['ports.node_id', 'ports.address', 'ports.pxe_enabled'])
        .where('nodes.conductor_group', '=', group)
        .orderBy('ports.id')
        .execute(),
      boot ? boot.listPrepared() : Promise.resolve([] as string[]),
    ]);
    report.nodes = nodes.length;
    lap('read');
    const ports = new Map<number, Port[]>();
    for (const p of portRows) {
      let list = ports.get(p.node_id);
      if (!list) ports.set(p.node_id, (list = []));
      list.push({ address: p.address, pxeEnabled: p.pxe_enabled });
    }
    const disk = new Set(onDisk);
    const known = new Set<string>();

    const takeOver: NodeBrief[] = [];
    const fingerprints = new Map<number, string>();
    const resume: NodeBrief[] = [];
    const precache: NodeBrief[] = [];
    const cleanUp: string[] = [];

    for (const node of nodes) {
      known.add(node.uuid);
      const [owner, ...replicas] = ring ? ring.lookup(node.uuid, { replicas: this.options.replicas }) : [];
      const needs = BOOT_STATE_STATES.has(node.provision_state);
      const nodePorts = ports.get(node.id) ?? [];
      if (owner === this.options.hostname) {
        report.owned += 1;
        if (WORKING.has(node.provision_state)) {
          // Work of a working state runs in the memory of the conductor holding the lock: found
          // unlocked, nobody is doing it (its conductor died or stopped, or this one restarted). It
          // is resumed or failed here whatever the state's boot needs — `deleting` or `verifying`
          // need no boot files, yet must not be left to sit forever. Maintenance or not: `resume`
          // fails instead of resuming where that is not safe.
          if (node.reservation === null) resume.push(node);
          else if (node.reservation !== this.options.hostname) report.pending += 1;
          continue;
        }
        if (!needs) {
          this.memory.forgetCurrent(node.uuid);
          // Left-overs of a node that no longer boots from the network (a crash between steps).
          if (disk.has(node.uuid) && node.reservation === null) cleanUp.push(node.uuid);
          continue;
        }
        if (node.reservation !== null) {
          // Our own operation on it keeps its files current itself; anyone else's: try again soon.
          if (node.reservation !== this.options.hostname || node.conductor_affinity !== me) report.pending += 1;
          continue;
        }
        const fp = fingerprint(node.stamp, nodePorts);
        if (!verify && node.conductor_affinity === me && this.memory.current(node.uuid) === fp) continue;
        fingerprints.set(node.id, fp);
        const failure = this.memory.failure(node.uuid);
        if (failure && failure.fp === fp && Date.now() < failure.until) {
          report.backingOff += 1;
          continue;
        }
        takeOver.push(node);
        continue;
      }
      this.memory.forgetCurrent(node.uuid);
      this.memory.clearFailure(node.uuid);
      const replica = replicas.includes(this.options.hostname);
      if (replica) report.replicated += 1;
      if (replica && needs && boot) {
        if (verify || this.memory.cachedStamp(node.uuid) !== node.stamp) precache.push(node);
      } else {
        this.memory.forgetCached(node.uuid);
      }
      if (disk.has(node.uuid)) {
        // Keep serving until the new owner has taken over; then the files here are stale.
        if (needs && (node.conductor_affinity === me || node.conductor_affinity === null)) report.awaitingNewOwner += 1;
        else cleanUp.push(node.uuid);
      }
    }

    // Directories of nodes not in this group's list: deleted nodes, or nodes moved to another group.
    const now = Date.now();
    const orphans: MemoryUpdates = { forgetCurrent: [], forgetFailures: [], forgetCached: [], orphansSeen: [], forgetOrphans: [] };
    for (const uuid of disk) {
      if (known.has(uuid)) {
        orphans.forgetOrphans.push(uuid);
        continue;
      }
      const since = this.memory.orphanSince(uuid) ?? now;
      if (this.memory.orphanSince(uuid) === undefined) orphans.orphansSeen.push({ uuid, since });
      if (now - since >= (this.options.orphanGraceMs ?? 60_000)) cleanUp.push(uuid);
    }
    for (const uuid of this.memory.orphans()) if (!disk.has(uuid)) orphans.forgetOrphans.push(uuid);
    this.memory.apply(orphans);

    lap('read');
    if (takeOver.length > 0) {
      const state = { options: this.options, log: this.log, stopped: () => this.stopped, memory: this.memory };
      await takeOverNodes(state, takeOver, fingerprints, ports, me, report);
    }
    for (const node of resume) {
      if (this.stopped) break;
      try {
        const outcome = await this.options.resume(node.uuid);
        if (outcome === 'resumed') {
          report.resumed += 1;
          metrics.resumed.inc();
        } else if (outcome === 'failed') {
          report.strandedFailed += 1;
          metrics.strandedFailed.inc();
        } else {
          report.pending += 1;
        }
      } catch (err) {
        report.pending += 1;
        this.log.warn({ node: node.uuid, err: (err as Error).message }, 'could not resume the work of a departed conductor');
      }
    }
    lap('takeOver');
    if (boot) {
      // The image fields as the database stores them (text, not parsed): most stamp changes are
      // take-overs elsewhere, which leave the images alone — those nodes cost a string compare.
      const rows: Array<{ id: number; uuid: string; di: string; ii: string }> = [];
      for (const batch of chunks(precache, BATCH)) {
        if (this.stopped) break;
        rows.push(
          ...(await store.db
            .selectFrom('nodes')
            .select(['id', 'uuid', sql<string>`cast(driver_info as text)`.as('di'), sql<string>`cast(instance_info as text)`.as('ii')])
            .where(
              'id',
              'in',
              batch.map((n) => n.id),
            )
            .execute()),
        );
      }
      const stamps = new Map(precache.map((n) => [n.id, n.stamp]));
      // Nodes of one image set share a key: each set is fetched once, not once per node.
      const done = new Map<string, Promise<void>>();
      await pool(rows, this.options.workers, async (row) => {
        if (this.stopped) return;
        const raw = `${row.di}\n${row.ii}`;
        const stamp = stamps.get(row.id) ?? '';
        if (!verify && this.memory.cachedImages(row.uuid) === raw) {
          this.memory.markCached(row.uuid, stamp);
          return;
        }
        try {
          const images = bootImages({ driver_info: JSON.parse(row.di) as Record<string, unknown>, instance_info: JSON.parse(row.ii) as Record<string, unknown> });
          const key = JSON.stringify(images);
          let fill = done.get(key);
          if (!fill) done.set(key, (fill = boot.precache(images).then(() => undefined)));
          await fill;
          this.memory.markCached(row.uuid, stamp, raw);
          report.precached += 1;
          metrics.precaches.inc();
        } catch (err) {
          report.failed += 1;
          metrics.failures.inc();
          this.log.warn({ node: row.uuid, err: (err as Error).message }, 'could not pre-cache images for a replica node');
        }
      });
      lap('precache');
      await pool(cleanUp, this.options.workers, async (uuid) => {
        if (this.stopped) return;
        try {
          const changes = await boot.cleanUp({ uuid });
          this.memory.cleanedUp(uuid);
          if (changes.removed.length + changes.written.length > 0) {
            report.cleanedUp += 1;
            metrics.cleanups.inc();
          }
        } catch (err) {
          report.failed += 1;
          metrics.failures.inc();
          this.log.warn({ node: uuid, err: (err as Error).message }, 'could not remove local boot state');
        }
      });
    }

    lap('cleanUp');
    for (const phase of Object.keys(phases) as Array<keyof typeof phases>) phases[phase] = Math.round(phases[phase]);
    report.durationMs = performance.now() - started;
    metrics.nodesOwned.set(report.owned);
    metrics.nodesReplicated.set(report.replicated);
    metrics.nodesPendingTakeover.set(report.pending + report.backingOff);
    metrics.lastPassSeconds.set(report.durationMs / 1000);
    metrics.passSeconds.observe({ trigger: trigger.split(' ')[0] }, report.durationMs / 1000);
    metrics.ringVersion.set(ringVersion);
    const worked = report.takenOver + report.cleanedUp + report.resumed + report.strandedFailed + report.precached + report.failed;
    (worked > 0 ? this.log.info.bind(this.log) : this.log.debug.bind(this.log))(
      { ...report, durationMs: Math.round(report.durationMs) },
      'reconcile pass',
    );
    return report;
  }
}
