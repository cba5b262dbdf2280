import { describe, expect, it } from 'vitest';
import { timeTicks } from '../../src/web/svg.js';

const at = (iso: string) => Date.parse(iso);

describe('timeTicks', () => {
  it('puts ticks on whole multiples of a round step, at most six, inside the span', () => {
    // 5.6 s: a step of 1 s, ticks on whole seconds.
    const span5 = timeTicks(at('2026-12-06T23:48:12.300Z'), at('2026-12-06T23:48:17.900Z'));
    expect(span5.map((t) => new Date(t).toISOString().slice(17, 23))).toEqual(['13.000', '14.000', '15.000', '16.000', '17.000']);
    // 10 minutes: a step of 2 min (5 at most 6), on whole minutes.
    const span10m = timeTicks(at('2026-12-06T10:00:30Z'), at('2026-12-06T10:10:30Z'));
    expect(span10m.map((t) => new Date(t).toISOString().slice(11, 19))).toEqual(['10:02:00', '10:04:00', '10:06:00', '10:08:00', '10:10:00']);
  });

  it('keeps to six ticks over spans from a second to days', () => {
    const t0 = at('2026-12-06T00:00:00.250Z');
    for (const span of [1000, 7000, 61_000, 3_600_000, 90_000_000, 10 * 86_400_000]) {
      const ticks = timeTicks(t0, t0 + span);
      expect(ticks.length).toBeLessThanOrEqual(6);
      expect(ticks.every((t) => t >= t0 && t <= t0 + span && t % 1000 === 0)).toBe(true);
      const steps = new Set(ticks.slice(1).map((t, i) => t - ticks[i]!));
      expect(steps.size).toBeLessThanOrEqual(1);
    }
  });
});
