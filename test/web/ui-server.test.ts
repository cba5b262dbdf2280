import { describe, expect, it } from 'vitest';
import { prefersHtml } from '../../src/api/routes/root.js';
import { useInProcessApi, LATEST } from '../helpers/api-test.js';
import { basic, useBasicAuthApi } from '../helpers/basic-auth-api.js';
import { useMigratedDatabase } from '../helpers/databases.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('the dashboard behind http_basic', () => {
  const api = useBasicAuthApi('ui-auth');
  const admin = { authorization: basic('admin', 's3cret') };

  it.each(['/ui', '/ui/nodes', '/ui/nodes/x', '/ui/events', '/ui/static/style.css', '/ui/static/htmx.min.js', '/ui/nodes/x/actions/manage', '/ui/no-such-page'])('asks a browser for credentials at %s', async (url) => {
    const res = await api.app.inject({ url, headers: { accept: BROWSER_ACCEPT } });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="ironring"');
    expect(res.body).not.toContain('<table');
  });

  it('refuses a POST action without credentials, and with wrong ones', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' };
    expect((await api.app.inject({ method: 'POST', url: '/ui/nodes/x/actions/manage', headers: form, payload: '' })).statusCode).toBe(401);
    expect((await api.app.inject({ method: 'POST', url: '/ui/nodes/x/actions/manage', headers: { ...form, authorization: basic('admin', 'nope') }, payload: '' })).statusCode).toBe(401);
  });

  it('sends a browser at / to the dashboard, which then needs credentials; JSON clients still get the version document', async () => {
    const html = await api.app.inject({ url: '/', headers: { accept: BROWSER_ACCEPT } });
    expect(html.statusCode).toBe(303);
    expect(html.headers.location).toBe('/ui');
    expect(html.body).toBe('');
    const json = await api.app.inject({ url: '/' });
    expect(json.statusCode).toBe(200);
    expect(json.json()).toMatchObject({ name: 'ironring', default_version: { id: 'v1' } });
    expect((await api.app.inject({ url: '/', headers: { accept: 'application/json' } })).json()).toMatchObject({ name: 'ironring' });
    expect((await api.app.inject({ url: '/', headers: { accept: '*/*' } })).statusCode).toBe(200);
  });

  it('serves the pages and the static files with the right credentials', async () => {
    const res = await api.app.inject({ url: '/ui/nodes', headers: { ...admin, accept: BROWSER_ACCEPT } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    const css = await api.app.inject({ url: '/ui/static/style.css', headers: admin });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.headers['cache-control']).toBe('public, max-age=3600');
    expect(css.body).toContain('prefers-color-scheme: dark');
    const again = await api.app.inject({ url: '/ui/static/style.css', headers: { ...admin, 'if-none-match': css.headers.etag as string } });
    expect(again.statusCode).toBe(304);
    for (const name of ['htmx.min.js', 'htmx-ext-sse.js']) {
      const js = await api.app.inject({ url: `/ui/static/${name}`, headers: admin });
      expect(js.statusCode).toBe(200);
      expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(js.body.length).toBeGreaterThan(1000);
    }
    expect((await api.app.inject({ url: '/ui/static/..%2Fpackage.json', headers: admin })).statusCode).toBe(404);
    expect((await api.app.inject({ url: '/ui/static/package.json', headers: admin })).statusCode).toBe(404);
  });

  it('keeps the dashboard out of the OpenAPI document', async () => {
    const doc = (await api.app.inject({ url: '/v1/openapi.json', headers: admin })).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/ui'))).toEqual([]);
  });
});

describe('Accept negotiation of /', () => {
  it('prefers HTML only when text/html outranks JSON', () => {
    expect(prefersHtml(BROWSER_ACCEPT)).toBe(true);
    expect(prefersHtml('text/html')).toBe(true);
    expect(prefersHtml(undefined)).toBe(false);
    expect(prefersHtml('*/*')).toBe(false);
    expect(prefersHtml('application/json')).toBe(false);
    expect(prefersHtml('application/json, text/html;q=0.5')).toBe(false);
    expect(prefersHtml('text/html;q=0.1, application/json;q=0.9')).toBe(false);
  });
});

describe('the nodes pages (in-process API, SQLite)', () => {
  const db = useMigratedDatabase('sqlite');
  const api = useInProcessApi(db);
  const same = { 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' };

  async function nodes(n: number, extra: (i: number) => Record<string, unknown> = () => ({})): Promise<string[]> {
    const uuids: string[] = [];
    for (let i = 0; i < n; i++) uuids.push((await api.made('/v1/nodes', { driver: 'fake-hardware', name: `node-${String(i).padStart(3, '0')}`, ...extra(i) }, LATEST)).uuid as string);
    return uuids;
  }

  it('lists nodes in pages with next and previous links, the filters kept in the links', async () => {
    await nodes(7);
    const first = await api.get('/ui/nodes?limit=3&q=node');
    expect(first.statusCode).toBe(200);
    expect(first.body.match(/<tr>/g)).toHaveLength(4); // header + 3
    expect(first.body).toContain('node-000');
    expect(first.body).not.toContain('node-003');
    const next = /href="(\/ui\/nodes\?[^"]*after=\d+)" rel="next"/.exec(first.body)![1]!.replace(/&amp;/g, '&');
    expect(next).toContain('q=node');
    expect(next).toContain('limit=3');
    const second = await api.get(next);
    expect(second.body).toContain('node-003');
    expect(second.body).not.toContain('node-002');
    const prev = /href="(\/ui\/nodes\?[^"]*before=\d+)" rel="prev"/.exec(second.body)![1]!.replace(/&amp;/g, '&');
    const back = await api.get(prev);
    expect(back.body).toContain('node-000');
    expect(back.body).toContain('node-002');
    expect(back.body).not.toContain('rel="prev"');
  });

  it('filters by provision state, maintenance and name or uuid', async () => {
    const [a, b] = await nodes(2);
    await api.send('PUT', `/v1/nodes/${b}/maintenance`, { reason: 'fan' }, LATEST);
    const maint = await api.get('/ui/nodes?maintenance=true');
    expect(maint.body).toContain(b);
    expect(maint.body).not.toContain(a);
    expect((await api.get(`/ui/nodes?q=${a}`)).body).not.toContain(b);
    expect((await api.get('/ui/nodes?provision_state=active')).body).toContain('No node matches.');
    expect((await api.get('/ui/nodes?provision_state=enroll')).body).toContain(a);
  });

  it('answers bad query input with a 400 page naming the parameter', async () => {
    for (const [url, name] of [['/ui/nodes?limit=0', 'limit'], ['/ui/nodes?limit=1001', 'limit'], ['/ui/nodes?provision_state=bogus', 'provision_state'], ['/ui/nodes?after=x', 'after'], ['/ui/nodes?maintenance=maybe', 'maintenance'], ['/ui/nodes?nope=1', 'nope'], [`/ui/nodes?q=${'x'.repeat(300)}`, 'q']] as const) {
      const res = await api.get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toContain(`role="alert">${name}:`);
    }
  });

  it('escapes what the database holds: a hostile name and last_error stay text', async () => {
    const evil = '<img src=x onerror=alert(1)>';
    const [uuid] = await nodes(1, () => ({ name: 'evil', description: evil, extra: { note: evil } }));
    const list = await api.get('/ui/nodes');
    expect(list.body).not.toContain('<img');
    const page = await api.get(`/ui/nodes/${uuid}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<img src=x');
    expect(page.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('masks secrets on the node page as the API does', async () => {
    const [uuid] = await nodes(1, () => ({ driver_info: { ipmi_address: '10.0.0.9', ipmi_password: 'hunter2-secret' } }));
    const page = await api.get(`/ui/nodes/${uuid}`);
    expect(page.body).toContain('10.0.0.9');
    expect(page.body).not.toContain('hunter2-secret');
    expect(page.body).toContain('******');
  });

  it('runs an action through the API and redirects back; a refusal shows the API\'s message', async () => {
    const [uuid] = await nodes(1);
    const ok = await api.send('POST', `/ui/nodes/${uuid}/actions/manage`, '', same);
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe(`/ui/nodes/${uuid}?done=manage`);
    // Deploying an enroll/manageable node is refused by the state machine: its words, inline.
    const refused = await api.send('POST', `/ui/nodes/${uuid}/actions/deploy`, '', same);
    expect(refused.statusCode).toBeGreaterThanOrEqual(400);
    expect(refused.body).toMatch(/class="alert" role="alert">Deploy: [^<]*(manageable|enroll)/);
    const viaHtmx = await api.send('POST', `/ui/nodes/${uuid}/actions/deploy`, '', { ...same, 'hx-request': 'true' });
    expect(viaHtmx.statusCode).toBe(200);
    expect(viaHtmx.body).toMatch(/^<p class="alert" role="alert">Deploy: /);
    const badImage = await api.send('POST', `/ui/nodes/${uuid}/actions/deploy`, 'image=http://x/os.raw&image_checksum=md5:1', { ...same, 'hx-request': 'true' });
    expect(badImage.body).toContain('image_checksum: required with an image');
  });

  it('asks before a destructive action: a GET confirmation page, and a POST without confirm is refused', async () => {
    const [uuid] = await nodes(1);
    const confirm = await api.get(`/ui/nodes/${uuid}/actions/power-off`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain(`action="/ui/nodes/${uuid}/actions/power-off"`);
    expect(confirm.body).toContain('name="confirm" value="yes"');
    const unconfirmed = await api.send('POST', `/ui/nodes/${uuid}/actions/power-off`, '', same);
    expect(unconfirmed.statusCode).toBe(400);
    expect(unconfirmed.body).toContain('confirm: power off must be confirmed');
    const done = await api.send('POST', `/ui/nodes/${uuid}/actions/power-off`, 'confirm=yes', same);
    expect(done.statusCode).toBe(303);
    expect((await api.get('/ui/nodes/nope/actions/explode')).statusCode).toBe(404);
  });

  it('refuses a POST from another site or without any origin (CSRF)', async () => {
    const [uuid] = await nodes(1);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const headers of [{ ...form }, { ...form, 'sec-fetch-site': 'cross-site' }, { ...form, origin: 'http://evil.example' }, { ...form, origin: 'null' }]) {
      const res = await api.send('POST', `/ui/nodes/${uuid}/actions/manage`, '', headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
    }
    expect((await api.get(`/v1/nodes/${uuid}`)).json()).toMatchObject({ provision_state: 'enroll' });
    const sameOrigin = await api.send('POST', `/ui/nodes/${uuid}/actions/manage`, '', { ...form, origin: 'http://localhost:80', host: 'localhost:80' });
    expect(sameOrigin.statusCode).toBe(303);
  });

  it('shows a 404 page for a node that does not exist', async () => {
    const res = await api.get('/ui/nodes/no-such-node');
    expect(res.statusCode).toBe(404);
    expect(res.body).toContain('role="alert"');
  });

  it('answers a GET of an unknown /ui path with an HTML 404 page naming the path, escaped', async () => {
    for (const url of ['/ui/<script>alert(1)</script>', '/ui/nodes/x/nope?a=<b>', '/ui/a/b/c/d']) {
      const res = await api.get(url);
      expect([url, res.statusCode]).toEqual([url, 404]);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.body).toMatch(/^<!doctype html>/);
      expect(res.body).toContain('<title>Not found · ironring</title>');
      expect(res.body).toContain('<a href="/ui/nodes">');
      expect(res.body).not.toContain('<script>alert');
      expect(res.body).not.toContain('<b>');
    }
    expect((await api.get('/ui/<script>alert(1)</script>')).body).toContain('<code>/ui/&lt;script&gt;alert(1)&lt;/script&gt;</code>');
    expect((await api.get('/ui/nodes/x/nope?a=<b>')).body).toContain('<code>/ui/nodes/x/nope</code>');
    const head = await api.app().inject({ method: 'HEAD', url: '/ui/no-such-page' });
    expect(head.statusCode).toBe(404);
    expect(head.headers['content-type']).toMatch(/^text\/html/);
    expect(head.body).toBe('');
  });

  it('keeps the JSON 404 outside /ui and for other methods under it', async () => {
    const v1 = await api.get('/v1/nope');
    expect(v1.statusCode).toBe(404);
    expect(v1.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(JSON.parse(v1.body).error_message).faultstring).toBe('the resource could not be found: GET /v1/nope');
    for (const url of ['/nope', '/uix/nope', '/v1/ui/nope']) {
      const res = await api.get(url);
      expect([url, res.statusCode, res.headers['content-type']]).toEqual([url, 404, expect.stringMatching(/^application\/json/)]);
    }
    const post = await api.send('POST', '/ui/no-such-page', '', same);
    expect(post.statusCode).toBe(404);
    expect(post.headers['content-type']).toMatch(/^application\/json/);
  });
});
