/**
 * The ring events record (`cluster/ring-events.ts`) and the take-over timeline page on both
 * engines: a death reported by two survivors is one event, the record keeps the last 1000, and the
 * page shows each ring event with the passes after it (nodes taken over, time to converge) as a
 * chart and a table; its `timeline` watcher changes when an event is written.
 */
import { describe, expect, it } from 'vitest';
import { registerConductor } from '../../src/cluster/membership.js';
import { RING_EVENTS_KEPT, listRingEvents, recordDepartures, recordRingEvent } from '../../src/cluster/ring-events.js';
import type { RingEvent } from '../../src/cluster/ring-events.js';
import { episodes } from '../../src/web/pages/timeline.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { textOf, usePagesApp } from './pages-app.js';

const engines = await testEngines();

const at = (s: number): Date => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
function ev(id: number, kind: RingEvent['kind'], hostname: string, s: number, extra: Partial<RingEvent> = {}): RingEvent {
  return { id, kind, conductorGroup: '', hostname, at: at(s), nodesMoved: null, pending: null, durationMs: null, detail: {}, ...extra };
}

describe('episodes', () => {
  it('counts the nodes the passes after a ring event took over and when every conductor converged', () => {
    const list = episodes([
      ev(1, 'pass', 'c1', 0, { nodesMoved: 9, pending: 0 }),
      ev(2, 'died', 'c2', 10),
      ev(3, 'pass', 'c1', 11, { nodesMoved: 40, pending: 3 }),
      ev(4, 'pass', 'c3', 12, { nodesMoved: 50, pending: 0 }),
      ev(5, 'pass', 'c2', 12, { nodesMoved: 7, pending: 0 }),
      ev(6, 'pass', 'c1', 14, { nodesMoved: 3, pending: 0 }),
    ]);
    expect(list).toHaveLength(1);
    // The dead conductor's own late pass is not part of the take-over.
    expect(list[0]!.passes.map((p) => p.id)).toEqual([3, 4, 6]);
    expect(list[0]!.nodesMoved).toBe(93);
    expect(list[0]!.convergedAfter).toBe(4);
  });

  it('has not converged while a conductor still has nodes pending', () => {
    const list = episodes([ev(1, 'left', 'c2', 0), ev(2, 'pass', 'c1', 1, { nodesMoved: 5, pending: 2 }), ev(3, 'pass', 'c3', 1, { nodesMoved: 5, pending: 0 })]);
    expect(list[0]!.convergedAfter).toBeNull();
  });

  it('ends an episode at the next ring event of its group only', () => {
    const list = episodes([
      ev(1, 'joined', 'c2', 0),
      ev(2, 'joined', 'g1', 1, { conductorGroup: 'rack' }),
      ev(3, 'pass', 'c1', 2, { nodesMoved: 4, pending: 0 }),
    ]);
    expect(list.map((e) => e.passes.length)).toEqual([1, 0]);
  });
});

describe.each(engines)('ring events and the timeline on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const pages = usePagesApp(db);

  it('records a death once however many survivors see it, and not a graceful stop', async () => {
    await registerConductor(db.store, { hostname: 'c2', group: '', drivers: [] }, 60);
    await registerConductor(db.store, { hostname: 'c3', group: '', drivers: [] }, 60);
    await db.store.db.updateTable('conductors').set({ online: false }).where('hostname', '=', 'c3').execute();
    await recordDepartures(db.store, { group: '', removed: ['c2', 'c3'] }, 'c1');
    await recordDepartures(db.store, { group: '', removed: ['c2'] }, 'c4');
    const events = await listRingEvents(db.store, { limit: 10 });
    expect(events.map((e) => [e.kind, e.hostname, e.detail.observer])).toEqual([['died', 'c2', 'c1']]);
  });

  it(`keeps the last ${RING_EVENTS_KEPT} events`, async () => {
    const rows = Array.from({ length: RING_EVENTS_KEPT + 4 }, (_, i) => ({ kind: 'pass', hostname: `c${i}`, detail: '{}' }));
    for (let i = 0; i < rows.length; i += 200) await db.store.db.insertInto('ring_events').values(rows.slice(i, i + 200)).execute();
    await recordRingEvent(db.store, { kind: 'joined', conductorGroup: '', hostname: 'last' });
    const n = await db.store.db.selectFrom('ring_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(n.n)).toBe(RING_EVENTS_KEPT);
    const newest = await listRingEvents(db.store, { limit: 2 });
    expect(newest.map((e) => e.hostname)).toEqual([`c${RING_EVENTS_KEPT + 3}`, 'last']);
  });

  it('shows a ring event with the passes that followed, as a chart and a table', async () => {
    await recordRingEvent(db.store, { kind: 'joined', conductorGroup: '', hostname: 'c1' });
    await recordRingEvent(db.store, { kind: 'joined', conductorGroup: '', hostname: 'c2' });
    await recordRingEvent(db.store, { kind: 'left', conductorGroup: '', hostname: 'c2' });
    await recordRingEvent(db.store, { kind: 'pass', conductorGroup: '', hostname: 'c1', nodesMoved: 120, pending: 4, durationMs: 80, detail: { trigger: 'ring change to version 3' } });
    await recordRingEvent(db.store, { kind: 'pass', conductorGroup: '', hostname: 'c1', nodesMoved: 4, pending: 0, durationMs: 20, detail: { trigger: 'retry' } });
    const res = await pages.get('/ui/timeline');
    expect(res.status).toBe(200);
    const text = textOf(res.body);
    expect(text).toContain('3 ring event(s), 2 pass(es)');
    // Newest first: c2 left, 2 passes after it, 124 nodes taken over, converged.
    expect(text).toMatch(/\(default\) c2 left 2 124 \d+(\.\d)? s/);
    expect(text).toMatch(/\(default\) c2 joined 0 0 no pass yet/);
    expect(res.body).toMatch(/<svg class="timeline-chart"[^>]*role="img"/);
    expect(res.body).toContain('− c2 left');
    expect(res.body).toContain('c1: pass of 80 ms');
    expect(text).toContain('c1 ring change to version 3 120 4 80 ms');
    expect(res.body).toMatch(/hx-get="\/ui\/timeline\/fragment" hx-trigger="sse:timeline"/);
  });

  it('filters by group, keeps the filter in the live URL, and escapes what it shows', async () => {
    await recordRingEvent(db.store, { kind: 'died', conductorGroup: 'rack<1>', hostname: '<b>x</b>', detail: { observer: '<i>y</i>' } });
    await recordRingEvent(db.store, { kind: 'joined', conductorGroup: '', hostname: 'elsewhere-c9' });
    const res = await pages.get('/ui/timeline?group=rack%3C1%3E&limit=20');
    expect(res.status).toBe(200);
    expect(res.body).not.toContain('<b>x</b>');
    expect(res.body).not.toContain('<i>y</i>');
    expect(res.body).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(res.body).not.toContain('elsewhere-c9');
    expect(res.body).toContain('hx-get="/ui/timeline/fragment?group=rack%3C1%3E&amp;limit=20"');
  });

  it('tells the event stream when an event is written', async () => {
    const fingerprint = pages.watched().get('timeline')!;
    const before = await fingerprint();
    expect(await fingerprint()).toBe(before);
    await recordRingEvent(db.store, { kind: 'joined', conductorGroup: '', hostname: 'c1' });
    expect(await fingerprint()).not.toBe(before);
  });

  it.each([
    ['/ui/timeline?limit=5', 'limit'],
    ['/ui/timeline?limit=abc', 'limit'],
    [`/ui/timeline?group=${'g'.repeat(256)}`, 'group'],
    ['/ui/timeline/fragment?limit=100000', 'limit'],
  ])('answers %s with a 400 naming %s', async (url, parameter) => {
    const res = await pages.get(url);
    expect(res.status).toBe(400);
    expect(res.body).toContain(`Bad query parameter <code>${parameter}</code>`);
  });
});
