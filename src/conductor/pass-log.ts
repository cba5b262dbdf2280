/**
 * Which reconcile passes go into the ring events (`cluster/ring-events.ts`) for the take-over
 * timeline: passes a ring change or the start brought, passes that did something (took over,
 * cleaned up, resumed, failed), and the passes after one that left nodes pending, up to the one that
 * converged. A quiet periodic pass over unchanged nodes is not an event. Writes go out one at a
 * time, in pass order, and never fail the reconciler.
 */
import type { Logger } from '../common/logger.js';
import { recordRingEvent } from '../cluster/ring-events.js';
import type { Store } from '../db/connect.js';
import type { PassReport } from './reconcile-report.js';

export class PassLog {
  /** The last recorded pass left nodes not current here: record until one converges. */
  private unsettled = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly options: { store: Store; hostname: string; group: string; logger: Logger }) {}

  /** Records `report` when it belongs on the timeline. */
  record(report: PassReport): void {
    const worked = report.takenOver + report.cleanedUp + report.resumed + report.strandedFailed + report.failed > 0;
    const brought = /ring change|start|dead locks/.test(report.trigger);
    const unsettled = report.pending + report.backingOff + report.awaitingNewOwner > 0;
    if (!worked && !brought && !this.unsettled && !unsettled) return;
    this.unsettled = unsettled;
    const { store, hostname, group, logger } = this.options;
    const event = {
      kind: 'pass' as const,
      conductorGroup: group,
      hostname,
      nodesMoved: report.takenOver,
      pending: report.pending + report.backingOff + report.awaitingNewOwner,
      durationMs: report.durationMs,
      detail: {
        trigger: report.trigger.slice(0, 200),
        ring_version: report.ringVersion,
        owned: report.owned,
        cleaned_up: report.cleanedUp,
        resumed: report.resumed,
        failed: report.failed,
      },
    };
    this.writing = this.writing.then(() =>
      recordRingEvent(store, event).then(
        () => undefined,
        (err: unknown) => logger.debug({ err: (err as Error).message }, 'could not record the reconcile pass as a ring event'),
      ),
    );
  }

  /** Resolves once the writes asked for so far are done. */
  flushed(): Promise<void> {
    return this.writing;
  }
}
