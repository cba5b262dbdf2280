/**
 * The agent's lookup and heartbeat through the API and the node's owner (in-process, as `ironring
 * up` runs them): tokens issued once and kept only as digests, heartbeats checked and recorded on
 * the owner, the session wiped when the node leaves the agent states, Ironic's version gating, and
 * the bounds of two routes that answer callers without user credentials.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import bcrypt from 'bcryptjs';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };
const MAC = '52:54:00:12:34:56';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const faultstring = (body: string) => (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;

interface Lookup {
  node: Record<string, unknown> & { uuid: string };
  config: { heartbeat_timeout: number; agent_token: string; agent_token_required: boolean; agent_md5_checksum_enable: boolean };
}

describe.each(engines)('agent lookup and heartbeat on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let dir: string;
  let calls: string[] = [];
  const logs: string[] = [];

  beforeEach(async () => {
    logs.length = 0;
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-agent-'));
    const htpasswd = path.join(dir, 'htpasswd');
    writeFileSync(htpasswd, `admin:${bcrypt.hashSync('s3cret', 4)}\n`);
    // Everything logged at debug, so that a token or its digest in any line would be seen.
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => { logs.push(chunk.toString()); done(); } });
    const logger = createLogger({ level: 'debug', pretty: false, destination: sink });
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth', IRONRING_AUTH_STRATEGY: 'http_basic', IRONRING_HTTP_BASIC_AUTH_USER_FILE: htpasswd } }).config;
    ({ app, ops, calls } = await startInProcessApi(db.store, config, logger));
  });
  afterEach(async () => {
    await Promise.allSettled([...ops.running]);
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const admin = { ...LATEST, authorization: `Basic ${Buffer.from('admin:s3cret').toString('base64')}` };

  /** A fake node with one port, put in `state` (as its conductor would have left it). */
  async function nodeIn(state: string, target: string | null, name = 'n1', mac = MAC): Promise<string> {
    const created = await app.inject({ method: 'POST', url: '/v1/nodes', headers: admin, payload: { name, driver: 'fake-hardware', instance_info: { image_source: 'http://x/img', configdrive: 'H4sIsecret' }, properties: { cpus: 2 } } });
    expect(created.statusCode, created.body).toBe(201);
    const uuid = (created.json() as { uuid: string }).uuid;
    const port = await app.inject({ method: 'POST', url: '/v1/ports', headers: admin, payload: { address: mac, node_uuid: uuid } });
    expect(port.statusCode, port.body).toBe(201);
    await db.store.db.updateTable('nodes').set({ provision_state: state, target_provision_state: target }).where('uuid', '=', uuid).execute();
    return uuid;
  }
  const lookup = (query: string, headers: Record<string, string> = LATEST) => app.inject({ url: `/v1/lookup?${query}`, headers });
  const heartbeat = (node: string, payload: unknown, headers: Record<string, string> = LATEST) =>
    app.inject({ method: 'POST', url: `/v1/heartbeat/${node}`, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
  const row = (uuid: string) => db.store.db.selectFrom('nodes').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();

  it('issues the token once, at the first lookup, and keeps only its digest', async () => {
    const uuid = await nodeIn('wait call-back', 'active');
    const first = await lookup(`addresses=${MAC.toUpperCase()},not-a-mac`);
    expect(first.statusCode, first.body).toBe(200);
    const answer = first.json() as Lookup;
    expect(Object.keys(answer.node).sort()).toEqual(['driver_internal_info', 'instance_info', 'links', 'properties', 'uuid']);
    expect(answer.node).toMatchObject({ uuid, properties: { cpus: 2 }, instance_info: { image_source: 'http://x/img', configdrive: '******' } });
    expect(answer.config).toEqual({ heartbeat_timeout: 300, agent_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), agent_token_required: true, agent_md5_checksum_enable: false });
    const token = answer.config.agent_token;
    const stored = await row(uuid);
    expect(stored.agent_token_hash).toBe(sha256(token));
    expect(JSON.stringify(stored)).not.toContain(token);

    // Later lookups take no lock: one answers while another conductor holds the node.
    await db.store.db.updateTable('nodes').set({ reservation: 'other' }).where('uuid', '=', uuid).execute();
    const second = await lookup(`node_uuid=${uuid}`);
    expect(second.statusCode, second.body).toBe(200);
    expect((second.json() as Lookup).config.agent_token).toBe('******');
    expect((await row(uuid)).agent_token_hash).toBe(sha256(token));
    expect(calls).toEqual(['POST agent_token', 'POST agent_token']);
  });

  it('issues one token when lookups race', async () => {
    const uuid = await nodeIn('clean wait', 'available');
    const answers = await Promise.all(Array.from({ length: 4 }, () => lookup(`addresses=${MAC}`)));
    const tokens = answers.map((a) => (a.statusCode === 200 ? (a.json() as Lookup).config.agent_token : `status ${a.statusCode}`));
    const issued = tokens.filter((t) => /^[A-Za-z0-9_-]{43}$/.test(t));
    expect(issued, tokens.join(' ')).toHaveLength(1);
    // The others answered ****** or, when they met the issuing lock, 409 for the agent to retry.
    for (const t of tokens) expect(issued.includes(t) || t === '******' || t === 'status 409').toBe(true);
    expect((await row(uuid)).agent_token_hash).toBe(sha256(issued[0]!));
  });

  it('answers 404 alike for unknown MACs, MACs of two nodes and a node that expects no agent', async () => {
    await nodeIn('available', null, 'idle', '52:54:00:00:00:01');
    await nodeIn('clean wait', 'available', 'c1', '52:54:00:00:00:02');
    await nodeIn('clean wait', 'available', 'c2', '52:54:00:00:00:03');
    const refusals = [
      await lookup('addresses=52:54:00:ff:ff:ff'),
      await lookup('addresses=52:54:00:00:00:01'),
      await lookup('addresses=52:54:00:00:00:02,52:54:00:00:00:03'),
    ];
    for (const r of refusals) {
      expect(r.statusCode, r.body).toBe(404);
      expect(faultstring(r.body)).toBe('no node that expects an agent matches the lookup');
    }
    expect((await lookup('addresses=52-54-00-00-00-02')).statusCode).toBe(200);
    expect(calls).toEqual(['POST agent_token']);
  });

  it('records a heartbeat with the right token on the owner, and refuses a missing or wrong one without taking the lock', async () => {
    const uuid = await nodeIn('wait call-back', 'active');
    const token = ((await lookup(`addresses=${MAC}`)).json() as Lookup).config.agent_token;
    const body = { callback_url: 'http://192.0.2.10:9999', agent_version: '10.1.0' };

    const missing = await heartbeat('n1', body);
    expect(missing.statusCode, missing.body).toBe(400);
    expect(faultstring(missing.body)).toMatch(/^agent_token: required/);
    const wrong = await heartbeat('n1', { ...body, agent_token: `${token.slice(0, -1)}x` });
    expect(wrong.statusCode, wrong.body).toBe(400);
    expect(faultstring(wrong.body)).toBe('Invalid or missing agent token received.');
    // A wrong token is refused from a read: a node locked by another conductor still answers 400, not 409.
    await db.store.db.updateTable('nodes').set({ reservation: 'other' }).where('uuid', '=', uuid).execute();
    expect((await heartbeat('n1', { ...body, agent_token: 'guess' })).statusCode).toBe(400);
    expect((await heartbeat('n1', { ...body, agent_token: token })).statusCode).toBe(409);
    await db.store.db.updateTable('nodes').set({ reservation: null }).where('uuid', '=', uuid).execute();
    expect((await row(uuid)).driver_internal_info).toEqual({});

    const before = await db.store.now();
    const ok = await heartbeat(uuid, { ...body, agent_token: token });
    expect(ok.statusCode, ok.body).toBe(202);
    expect(ok.body).toBe('');
    const after = await row(uuid);
    const internal = after.driver_internal_info as { agent_url: string; agent_version: string; agent_last_heartbeat: string };
    expect(internal).toMatchObject({ agent_url: 'http://192.0.2.10:9999', agent_version: '10.1.0' });
    expect(Date.parse(internal.agent_last_heartbeat)).toBeGreaterThanOrEqual(before.getTime() - 1000);
    // No deploy step is pretended: the node stays where it was, unlocked.
    expect(after).toMatchObject({ provision_state: 'wait call-back', target_provision_state: 'active', reservation: null });
    expect(calls.filter((c) => c === 'POST heartbeat')).toHaveLength(4);

    const moved = await heartbeat(uuid, { ...body, callback_url: 'http://192.0.2.99:9999', agent_token: token });
    expect(moved.statusCode, moved.body).toBe(400);
    expect(faultstring(moved.body)).toMatch(/^callback_url: differs from the one this agent gave before/);
    // An agent without agent_version is recorded as Ironic records it.
    expect((await heartbeat(uuid, { callback_url: 'http://192.0.2.10:9999', agent_token: token })).statusCode).toBe(202);
    expect((await row(uuid)).driver_internal_info).toMatchObject({ agent_version: '3.0.0' });
  });

  it('wipes the token and agent URL when the node leaves the agent states, and shows neither in views or logs', async () => {
    const uuid = await nodeIn('wait call-back', 'active');
    const token = ((await lookup(`addresses=${MAC}`)).json() as Lookup).config.agent_token;
    expect((await heartbeat(uuid, { callback_url: 'http://192.0.2.10:9999', agent_token: token })).statusCode).toBe(202);

    for (const url of [`/v1/nodes/${uuid}`, '/v1/nodes/detail', `/v1/nodes/${uuid}/states`]) {
      const view = await app.inject({ url, headers: admin });
      expect(view.statusCode, view.body).toBe(200);
      expect(view.body).not.toContain(token);
      expect(view.body).not.toContain(sha256(token));
    }
    const fields = await app.inject({ url: `/v1/nodes/${uuid}?fields=agent_token_hash`, headers: admin });
    expect(fields.statusCode).toBe(400);

    // wait call-back → deleting → cleaning → available: the session ends with the agent states.
    const undeploy = await app.inject({ method: 'PUT', url: `/v1/nodes/${uuid}/states/provision`, headers: admin, payload: { target: 'deleted' } });
    expect(undeploy.statusCode, undeploy.body).toBe(202);
    await Promise.allSettled([...ops.running]);
    const after = await row(uuid);
    expect(after.provision_state).toBe('available');
    expect(after.agent_token_hash).toBeNull();
    expect(after.driver_internal_info).not.toHaveProperty('agent_url');
    expect(after.driver_internal_info).toHaveProperty('agent_last_heartbeat');
    const late = await heartbeat(uuid, { callback_url: 'http://192.0.2.10:9999', agent_token: token });
    expect(late.statusCode).toBe(400);
    expect(faultstring(late.body)).toBe('Invalid or missing agent token received.');

    // Back in an agent state, the next lookup gets a new token.
    await db.store.db.updateTable('nodes').set({ provision_state: 'clean wait', target_provision_state: 'available' }).where('uuid', '=', uuid).execute();
    const again = (await lookup(`addresses=${MAC}`)).json() as Lookup;
    expect(again.config.agent_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(again.config.agent_token).not.toBe(token);

    const logged = logs.join('');
    expect(logged.length).toBeGreaterThan(0);
    for (const secret of [token, sha256(token), again.config.agent_token, sha256(again.config.agent_token)]) expect(logged).not.toContain(secret);
  });

  it('lets exactly the three agent requests through without user credentials', async () => {
    const uuid = await nodeIn('inspect wait', 'manageable');
    const token = ((await lookup(`addresses=${MAC}`, LATEST)).json() as Lookup).config.agent_token;
    expect((await heartbeat(uuid, { callback_url: 'https://[2001:db8::1]:9999', agent_token: token }, LATEST)).statusCode).toBe(202);
    // The inventory passes authentication; the node's token is what it is checked against.
    const report = { inventory: { interfaces: [{ name: 'eth0', mac_address: MAC }] } };
    const inventory = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/continue_inspection', headers: { ...LATEST, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
    const refused = await inventory(report);
    expect(refused.statusCode).toBe(400);
    expect(faultstring(refused.body)).toBe('Invalid or missing agent token received.');
    const guarded: Array<[string, string]> = [
      ['GET', '/v1/nodes'],
      ['GET', `/v1/nodes/${uuid}`],
      ['GET', '/v1/lookup/x'],
      ['GET', '/v1/lookup/'],
      ['POST', '/v1/lookup'],
      ['GET', `/v1/heartbeat/${uuid}`],
      ['POST', `/v1/heartbeat/${uuid}/x`],
      ['POST', '/v1/heartbeat/'],
      ['PUT', `/v1/heartbeat/${uuid}`],
      ['GET', '/v1/continue_inspection'],
      ['POST', '/v1/continue_inspection/x'],
      ['GET', `/v1/nodes/${uuid}/inventory`],
      ['GET', '/v1/openapi.json'],
    ];
    for (const [method, url] of guarded) {
      const res = await app.inject({ method: method as 'GET', url, headers: LATEST });
      expect(res.statusCode, `${method} ${url}`).toBe(401);
    }
  });

  it('gates the endpoints and their fields by microversion, and refuses what is beyond the range served', async () => {
    const uuid = await nodeIn('deploying', 'active');
    const old = await lookup(`addresses=${MAC}`, { 'x-openstack-ironic-api-version': '1.21' });
    expect(old.statusCode).toBe(404);
    expect(faultstring(old.body)).toMatch(/needs API version 1\.22 or later/);
    expect((await lookup(`addresses=${MAC}`, {})).statusCode).toBe(404);
    expect((await heartbeat(uuid, { callback_url: 'http://h:1', agent_token: 't' }, { 'x-openstack-ironic-api-version': '1.21' })).statusCode).toBe(404);
    expect((await lookup(`addresses=${MAC}`, { 'x-openstack-ironic-api-version': '1.83' })).statusCode).toBe(406);

    const token = ((await lookup(`addresses=${MAC}`, { 'x-openstack-ironic-api-version': '1.22' })).json() as Lookup).config.agent_token;
    const v = (minor: number) => ({ 'x-openstack-ironic-api-version': `1.${minor}` });
    const tooEarly = await heartbeat(uuid, { callback_url: 'http://h:1', agent_token: token, agent_version: '9' }, v(35));
    expect(tooEarly.statusCode).toBe(400);
    expect(faultstring(tooEarly.body)).toBe('agent_version: not recognised at API version 1.35; it needs 1.36 or later');
    for (const [field, since, before] of [['agent_verify_ca', '1.68', 67], ['agent_status', '1.72', 71], ['agent_status_message', '1.72', 71]] as const) {
      const early = await heartbeat(uuid, { callback_url: 'http://h:1', agent_token: token, [field]: 'start' }, v(before));
      expect(early.statusCode).toBe(400);
      expect(faultstring(early.body)).toBe(`${field}: not recognised at API version 1.${before}; it needs ${since} or later`);
    }
    expect((await heartbeat(uuid, { callback_url: 'http://h:1', agent_token: token, agent_status: 'start', agent_status_message: 'booted' }, LATEST)).statusCode).toBe(202);
    expect((await heartbeat(uuid, { callback_url: 'http://h:1', agent_token: token, agent_version: '9' }, v(36))).statusCode).toBe(202);
    expect((await heartbeat(uuid, { callback_url: 'http://h:1', agent_token: token }, v(22))).statusCode).toBe(202);
  });

  it('refuses oversize and malformed input naming the field, and keeps prototype keys inert', async () => {
    const uuid = await nodeIn('rescue wait', 'rescue');
    const macs = (n: number) => Array.from({ length: n }, (_, i) => `52:54:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`).join(',');
    const cases: Array<[string, RegExp]> = [
      [`addresses=${macs(65)}`, /^addresses: at most 64 addresses/],
      [`addresses=${'a'.repeat(65)}`, /^addresses: an entry is longer than 64 characters/],
      ['addresses=zz,yy', /^addresses: at least one valid MAC address or node_uuid is required/],
      ['', /^addresses: at least one valid MAC address or node_uuid is required/],
      ['node_uuid=nope', /^node_uuid: expected a UUID/],
      [`addresses=${MAC}&addresses=${MAC}`, /^addresses: query parameter given 2 times/],
    ];
    for (const [query, message] of cases) {
      const res = await lookup(query);
      expect(res.statusCode, query).toBe(400);
      expect(faultstring(res.body)).toMatch(message);
    }
    expect((await lookup(`addresses=${macs(63)},${MAC}`)).statusCode).toBe(200);

    const token = 'x'.repeat(43);
    const bodies: Array<[unknown, RegExp]> = [
      [{ callback_url: 'ftp://h/x', agent_token: token }, /^callback_url: expected an http:\/\/ or https:\/\/ URL/],
      [{ callback_url: 'http://user:pw@h:1', agent_token: token }, /^callback_url: must not carry a user name or password/],
      [{ callback_url: 'http://h:1/?q=1', agent_token: token }, /^callback_url: must not carry a query/],
      [{ callback_url: `http://h/${'a'.repeat(2048)}`, agent_token: token }, /^callback_url: longer than 2048 characters/],
      [{ callback_url: 'not a url', agent_token: token }, /^callback_url: not a valid URL/],
      [{ agent_token: token }, /^callback_url: required/],
      [{ callback_url: 'http://h:1', agent_token: 7 }, /^agent_token: expected a string/],
      [{ callback_url: 'http://h:1', agent_token: 'y'.repeat(257) }, /^agent_token: longer than 256 characters/],
      [{ callback_url: 'http://h:1', agent_token: token, agent_version: 'v'.repeat(1025) }, /^agent_version: longer than 1024 characters/],
      [{ callback_url: 'http://h:1', agent_token: token, extra: 1 }, /^"extra": not a heartbeat field/],
      [[1, 2], /^request body: expected a JSON object/],
    ];
    for (const [body, message] of bodies) {
      const res = await heartbeat(uuid, body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(faultstring(res.body)).toMatch(message);
    }
    const huge = await heartbeat(uuid, { callback_url: 'http://h:1', agent_token: token, agent_version: 'v'.repeat(17 * 1024) });
    expect(huge.statusCode).toBe(413);
    const polluting = await app.inject({ method: 'POST', url: `/v1/heartbeat/${uuid}`, headers: { ...LATEST, 'content-type': 'application/json' }, payload: '{"callback_url":"http://h:1","agent_token":"t","__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}' });
    expect(polluting.statusCode).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await row(uuid)).driver_internal_info).toEqual({});
    // No refused heartbeat reached the conductor.
    expect(calls).toEqual(['POST agent_token']);
  });
});
