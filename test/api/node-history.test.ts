/**
 * `GET /v1/nodes/{node}/history[/{event}]` (Ironic's API 1.78): the events conductors recorded for a
 * node, oldest first, in Ironic's shapes — the summary by default (long events cut to 255
 * characters), every field with `detail` (or at `/history/detail`), paging with `limit`, `marker`
 * and `next`; one event by uuid, only through its own node; 404 below 1.78.
 */
import { describe, expect, it } from 'vitest';
import { writeHistory } from '../../src/cluster/reservations.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { useInProcessApi } from '../helpers/api-test.js';

const engines = await testEngines();
const V = (v: string) => ({ 'x-openstack-ironic-api-version': v });
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
type Event = Record<string, unknown> & { uuid: string; event: string; links: Array<{ href: string; rel: string }> };

describe.each(engines)('node history on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db);

  const get = (url: string, version = 'latest') => api.app().inject({ method: 'GET', url, headers: V(version) });
  async function node(name: string): Promise<{ id: number; uuid: string }> {
    const res = await api.app().inject({ method: 'POST', url: '/v1/nodes', headers: V('latest'), payload: { name, driver: 'fake-hardware' } });
    expect(res.statusCode, res.body).toBe(201);
    return db.store.db.selectFrom('nodes').select(['id', 'uuid']).where('name', '=', name).executeTakeFirstOrThrow();
  }

  it('lists a node\'s events oldest first, summarised unless detail is asked for', async () => {
    const n = await node('h1');
    const other = await node('h2');
    const long = `x${'y'.repeat(300)}`;
    await writeHistory(db.store, [
      { nodeId: n.id, conductor: 'c1', eventType: 'provisioning', severity: 'INFO', event: 'manage: enroll → verifying' },
      { nodeId: n.id, conductor: 'c2', eventType: 'power', severity: 'ERROR', event: long, user: 'admin' },
      { nodeId: other.id, conductor: 'c1', eventType: 'power', severity: 'INFO', event: 'not h1' },
    ]);
    const res = await get('/v1/nodes/h1/history');
    expect(res.statusCode, res.body).toBe(200);
    const { history } = res.json() as { history: Event[] };
    expect(history.map((e) => e.event)).toEqual(['manage: enroll → verifying', `${long.slice(0, 251)}...`]);
    expect(history[1]!.event).toHaveLength(254);
    expect(Object.keys(history[0]!).sort()).toEqual(['created_at', 'event', 'links', 'severity', 'uuid']);
    expect(history[0]).toMatchObject({ severity: 'INFO', uuid: expect.stringMatching(UUID_RE), created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/) });
    expect(history[0]!.links).toEqual([{ href: `http://localhost:80/v1/nodes/${n.uuid}/history/${history[0]!.uuid}`, rel: 'self' }]);

    for (const url of ['/v1/nodes/h1/history?detail=true', `/v1/nodes/${n.uuid}/history/detail`]) {
      const detail = (await get(url)).json() as { history: Event[] };
      expect(detail.history[1], url).toMatchObject({ event: long, event_type: 'power', conductor: 'c2', user: 'admin', severity: 'ERROR' });
      expect(Object.keys(detail.history[0]!).sort()).toEqual(['conductor', 'created_at', 'event', 'event_type', 'links', 'severity', 'user', 'uuid']);
    }

    // One event, in full, through its node only.
    const one = await get(`/v1/nodes/h1/history/${history[1]!.uuid}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ uuid: history[1]!.uuid, event: long, event_type: 'power', conductor: 'c2', user: 'admin' });
    expect((await get(`/v1/nodes/h2/history/${history[1]!.uuid}`)).statusCode).toBe(404);
    expect((await get('/v1/nodes/h1/history/not-an-event')).statusCode).toBe(404);
    expect((await get('/v1/nodes/nope/history')).statusCode).toBe(404);
  });

  it('pages with limit, marker and next', async () => {
    const n = await node('p1');
    await writeHistory(db.store, Array.from({ length: 5 }, (_, i) => ({ nodeId: n.id, conductor: 'c1', eventType: 'power', severity: 'INFO' as const, event: `e${i}` })));
    const first = (await get('/v1/nodes/p1/history?limit=2')).json() as { history: Event[]; next: string };
    expect(first.history.map((e) => e.event)).toEqual(['e0', 'e1']);
    expect(first.next).toContain(`marker=${first.history[1]!.uuid}`);
    const second = (await get(first.next.replace('http://localhost:80', ''))).json() as { history: Event[]; next?: string };
    expect(second.history.map((e) => e.event)).toEqual(['e2', 'e3']);
    const last = (await get(`/v1/nodes/p1/history?limit=2&marker=${second.history[1]!.uuid}`)).json() as { history: Event[]; next?: string };
    expect(last.history.map((e) => e.event)).toEqual(['e4']);
    expect(last.next).toBeUndefined();
    expect((await get('/v1/nodes/p1/history?marker=nope')).statusCode).toBe(400);
    expect((await get(`/v1/nodes/p1/history?marker=${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`)).statusCode).toBe(400);
    expect((await get('/v1/nodes/p1/history?limit=-1')).statusCode).toBe(400);
  });

  it('records what the conductor does, and does not exist below 1.78', async () => {
    await node('c1');
    await api.app().inject({ method: 'PUT', url: '/v1/nodes/c1/states/power', headers: V('latest'), payload: { target: 'power on' } });
    await Promise.allSettled([...api.ops().running]);
    const { history } = (await get('/v1/nodes/c1/history?detail=true')).json() as { history: Event[] };
    expect(history.some((e) => e.event_type === 'power' && e.conductor === 'aio' && /power on/.test(e.event))).toBe(true);
    expect((await get('/v1/nodes/c1/history', '1.77')).statusCode).toBe(404);
    expect((await get(`/v1/nodes/c1/history/${history[0]!.uuid}`, '1.77')).statusCode).toBe(404);
  });
});
