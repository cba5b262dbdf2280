/**
 * A Keystone v3 stand-in for running tempest against an API that runs without authentication
 * (`ironring up` with auth off): tempest insists on getting a token and a service catalog first.
 * Any password gets a token whose catalog points the `baremetal` service at the API under test;
 * nothing checks the token afterwards. Answers `GET /` and `/v3` (version documents),
 * `POST /v3/auth/tokens` (201, `X-Subject-Token`), `GET`/`HEAD`/`DELETE /v3/auth/tokens`; anything
 * else is 404 and counted in `unexpected`, so a tempest that asks for more is visible.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeKeystone {
  /** `http://127.0.0.1:<port>/v3`. */
  url: string;
  /** Requests it had no answer for (method and path). */
  unexpected: string[];
  close(): Promise<void>;
}

const DOMAIN = { id: 'default', name: 'Default' };
const MAX_BODY = 64 * 1024;
const id = (...parts: string[]) => createHash('sha256').update(parts.join('/')).digest('hex').slice(0, 32);

function versionDoc(base: string) {
  return {
    id: 'v3.14',
    status: 'stable',
    updated: '2020-04-07T00:00:00Z',
    links: [{ rel: 'self', href: `${base}/v3/` }],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
  };
}

function catalog(base: string, baremetal: string) {
  const service = (type: string, name: string, url: string) => ({
    type,
    name,
    id: id('service', type),
    endpoints: ['public', 'internal', 'admin'].map((iface) => ({ id: id('endpoint', type, iface), interface: iface, region: 'RegionOne', region_id: 'RegionOne', url })),
  });
  return [service('baremetal', 'ironic', baremetal), service('identity', 'keystone', `${base}/v3`)];
}

type Json = Record<string, unknown>;
const object = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});

/** The token body for an auth request: the user it names, scoped as asked (project, domain or system). */
function tokenBody(auth: Json, base: string, baremetal: string) {
  const identity = object(auth.identity);
  const user = object(object(identity.password).user);
  const userName = String(user.name ?? user.id ?? 'admin');
  const now = new Date();
  const token: Json = {
    methods: Array.isArray(identity.methods) ? identity.methods : ['password'],
    user: { id: id('user', userName), name: userName, domain: DOMAIN, password_expires_at: null },
    audit_ids: [randomUUID().replaceAll('-', '').slice(0, 22)],
    issued_at: now.toISOString(),
    expires_at: new Date(now.getTime() + 12 * 3600_000).toISOString(),
    roles: ['admin', 'member', 'reader'].map((name) => ({ id: id('role', name), name })),
    is_domain: false,
    catalog: catalog(base, baremetal),
  };
  const scope = object(auth.scope);
  if ('system' in scope) {
    token.system = { all: true };
  } else if ('domain' in scope) {
    const domain = object(scope.domain);
    token.domain = { id: String(domain.id ?? 'default'), name: String(domain.name ?? 'Default') };
  } else {
    const project = object(scope.project);
    const name = String(project.name ?? project.id ?? 'admin');
    token.project = { id: String(project.id ?? id('project', name)), name, domain: DOMAIN };
  }
  return { token };
}

async function readJson(req: IncomingMessage): Promise<Json> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return {};
    chunks.push(chunk as Buffer);
  }
  try {
    return object(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch {
    return {};
  }
}

/** Starts the stand-in on 127.0.0.1 (a free port); `baremetal` is the API's base URL, without /v1. */
export async function startFakeKeystone(baremetal: string): Promise<FakeKeystone> {
  const tokens = new Map<string, unknown>();
  const unexpected: string[] = [];
  let base = '';
  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const data = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }), 'content-length': Buffer.byteLength(data) });
    res.end(data);
  };
  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
      const method = req.method ?? 'GET';
      if (method === 'GET' && path === '/') return send(res, 300, { versions: { values: [versionDoc(base)] } });
      if (method === 'GET' && path === '/v3') return send(res, 200, { version: versionDoc(base) });
      if (path === '/v3/auth/tokens') {
        const subject = String(req.headers['x-subject-token'] ?? '');
        if (method === 'POST') {
          const token = `fake-${randomUUID()}`;
          const body = tokenBody(object((await readJson(req)).auth), base, baremetal);
          if (tokens.size > 10_000) tokens.clear();
          tokens.set(token, body);
          return send(res, 201, body, { 'x-subject-token': token });
        }
        if (method === 'GET') return send(res, 200, tokens.get(subject) ?? tokenBody({}, base, baremetal), { 'x-subject-token': subject });
        if (method === 'HEAD') return send(res, 200);
        if (method === 'DELETE') return send(res, 204);
      }
      if (unexpected.length < 1000) unexpected.push(`${method} ${path}`);
      return send(res, 404, { error: { code: 404, message: 'not faked', title: 'Not Found' } });
    })().catch(() => send(res, 500));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/v3`,
    unexpected,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
