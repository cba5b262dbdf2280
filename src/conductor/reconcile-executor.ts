/**
 * Carries out a reconcile pass's plan (`reconcile-plan.ts`), in order: the memory changes, the
 * take-overs (`take-over.ts`), the resumption of stranded work (`stranded-work.ts` through the
 * options' `resume`), the replica pre-caching (`reconcile-precache.ts`), the clean-ups, and on a
 * verify pass (start, periodic) the boot environment's sweep of what crashes left outside node
 * directories (stale temp files, dangling links, this conductor's DHCP entries of nodes without
 * files here). Each step stops between nodes once the reconciler stops; the report counts what was
 * done.
 */
import type { Port } from './reconcile-inputs.js';
import type { PassPlan } from './reconcile-plan.js';
import { precacheNodes } from './reconcile-precache.js';
import type { Phase, PassReport } from './reconcile-report.js';
import { takeOverNodes } from './take-over.js';
import type { TakeOverState } from './take-over.js';
import { pool } from './work-pool.js';

/** The reconciler's options, logger and node memory, and whether it is stopping: what a take-over works with too. */
export type ExecutorContext = TakeOverState & {
  /** True when another pass is already asked for (a ring or node change): the sweep gives way to it. */
  passWaiting: () => boolean;
};

/** Carries `plan` out, counting into the pass's report and timing its phases. */
export async function executePlan(
  ctx: ExecutorContext,
  plan: PassPlan,
  pass: {
    me: number;
    ports: ReadonlyMap<number, Port[]>;
    verify: boolean;
    /** Run the sweep even though this is not a verify pass: the last one was cut short. */
    sweepOwed: boolean;
    report: PassReport;
    lap: (phase: Phase) => void;
  },
): Promise<{ sweepOwed: boolean }> {
  const { report, lap } = pass;
  ctx.memory.apply(plan.memory);
  if (plan.takeOver.length > 0) {
    const fingerprints = new Map(plan.takeOver.map((t) => [t.node.id, t.fp]));
    await takeOverNodes(ctx, plan.takeOver.map((t) => t.node), fingerprints, pass.ports, pass.me, report);
  }
  await resumeStranded(ctx, plan.resume.map((n) => n.uuid), report);
  lap('takeOver');
  let sweepOwed = pass.sweepOwed;
  if (ctx.options.boot) {
    await precacheNodes(ctx, plan.precache, pass.verify, report);
    lap('precache');
    await cleanUp(ctx, plan.cleanUp, report);
    if ((pass.verify || pass.sweepOwed) && !ctx.stopped()) sweepOwed = !(await sweepLeftovers(ctx));
  }
  lap('cleanUp');
  return { sweepOwed };
}

/**
 * The boot environment's sweep; returns whether it finished. It gives way to a waiting pass (a ring
 * change's take-over must not wait seconds for a safety net) and to a stop; the reconciler then owes
 * it and the next pass carries on. A failure is logged, and the next verify pass sweeps again.
 */
async function sweepLeftovers(ctx: ExecutorContext): Promise<boolean> {
  try {
    const report = await ctx.options.boot?.sweep({ shouldStop: () => ctx.stopped() || ctx.passWaiting() });
    if (report && !report.complete) ctx.log.debug('boot leftovers sweep gave way to a waiting pass; the next pass goes on with it');
    return report?.complete ?? true;
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'could not sweep boot leftovers');
    return true;
  }
}

/** Resumes (or fails) the work departed conductors left, one node at a time. */
async function resumeStranded(ctx: ExecutorContext, uuids: readonly string[], report: PassReport): Promise<void> {
  const { metrics } = ctx.options;
  for (const uuid of uuids) {
    if (ctx.stopped()) break;
    try {
      const outcome = await ctx.options.resume(uuid);
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
      ctx.log.warn({ node: uuid, err: (err as Error).message }, 'could not resume the work of a departed conductor');
    }
  }
}

/** Removes local boot state; counts only clean-ups that removed or rewrote something. */
async function cleanUp(ctx: ExecutorContext, uuids: readonly string[], report: PassReport): Promise<void> {
  const { options, memory } = ctx;
  const { boot } = options;
  if (!boot) return;
  await pool(uuids, options.workers, async (uuid) => {
    if (ctx.stopped()) return;
    try {
      const changes = await boot.cleanUp({ uuid });
      memory.cleanedUp(uuid);
      if (changes.removed.length + changes.written.length > 0) {
        report.cleanedUp += 1;
        options.metrics.cleanups.inc();
      }
    } catch (err) {
      report.failed += 1;
      options.metrics.failures.inc();
      ctx.log.warn({ node: uuid, err: (err as Error).message }, 'could not remove local boot state');
    }
  });
}
