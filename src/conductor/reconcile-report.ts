/** What one reconcile pass did, and where its time went. */

export interface PassReport {
  trigger: string;
  verify: boolean;
  ringVersion: number;
  nodes: number;
  owned: number;
  replicated: number;
  takenOver: number;
  precached: number;
  cleanedUp: number;
  resumed: number;
  /** Working states left behind that could not be resumed safely and were failed (with `last_error`). */
  strandedFailed: number;
  /** Owned nodes left not current (locked elsewhere, failed): retried shortly. */
  pending: number;
  /** Of those, nodes whose take-over failed and that wait for their next try (exponential backoff up to 60 s). */
  backingOff: number;
  /** Local state kept for now because the new owner has not taken over yet. */
  awaitingNewOwner: number;
  failed: number;
  durationMs: number;
  /** Where the pass spent its time (ms): reading nodes, ports and the disk; take-overs; pre-caching; clean-up. */
  phasesMs: { read: number; takeOver: number; precache: number; cleanUp: number };
}

export type Phase = keyof PassReport['phasesMs'];

/** The report of a pass that has done nothing yet. */
export function emptyReport(trigger: string, verify: boolean, ringVersion: number): PassReport {
  return {
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
}

/** A stopwatch over the report's phases: `lap(phase)` adds the time since the last lap to `phase`. */
export function phaseClock(report: PassReport): { lap(phase: Phase): void; round(): void } {
  let mark = performance.now();
  return {
    lap(phase) {
      const now = performance.now();
      report.phasesMs[phase] += now - mark;
      mark = now;
    },
    round() {
      for (const phase of Object.keys(report.phasesMs) as Phase[]) report.phasesMs[phase] = Math.round(report.phasesMs[phase]);
    },
  };
}
