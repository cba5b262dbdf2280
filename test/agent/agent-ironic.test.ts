/**
 * `ironring agent` against an API that answers as Ironic's does (a scripted one: Ironic's published
 * shapes, maximum version 1.81): the version it asks for, the token in its heartbeats, the
 * conductor's credential (Ironic's conductor sends the token itself, ironring's the digest), a
 * token already given to another lookup, and IPA's "agent is busy".
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';

const NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';
const TOKEN = 'p2KGrYFlrxHY7vM0XMG6J4Bw3cKnrVGqQ6OA2OAfrBs';
const MAC = '52:54:00:aa:bb:cc';

interface Call {
  method: string;
  url: string;
  version: string | undefined;
  body: unknown;
}

let api: http.Server;
let apiUrl: string;
let calls: Call[];
let lookupToken: string;
let agent: Agent | null;

beforeEach(async () => {
  calls = [];
  lookupToken = TOKEN;
  agent = null;
  api = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      calls.push({ method: req.method ?? '', url: req.url ?? '', version: req.headers['x-openstack-ironic-api-version'] as string | undefined, body: text ? (JSON.parse(text) as unknown) : null });
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json', 'x-openstack-ironic-api-maximum-version': '1.81' }).end(JSON.stringify(body));
      if (req.url === '/v1') return json(200, { id: 'v1', version: { id: 'v1', status: 'CURRENT', min_version: '1.1', version: '1.81' } });
      if (req.url?.startsWith('/v1/lookup')) {
        return json(200, { node: { uuid: NODE, properties: {}, instance_info: {}, driver_internal_info: {} }, config: { heartbeat_timeout: 300, agent_token: lookupToken, agent_token_required: true } });
      }
      if (req.url === `/v1/heartbeat/${NODE}`) return res.writeHead(202).end();
      return json(404, { error_message: '{"faultstring": "not found"}' });
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
});

afterEach(async () => {
  await agent?.stop();
  await new Promise<void>((r) => api.close(() => r()));
});

async function startAgent(roots: { sysRoot: string; devRoot: string } = { sysRoot: '/nonexistent', devRoot: '/nonexistent' }): Promise<Agent> {
  agent = new Agent({ apiUrl, macs: [MAC], listenHost: '127.0.0.1', listenPort: 0, advertiseHost: '127.0.0.1', lookupIntervalMs: 30, heartbeatIntervalMs: 60_000, ...roots });
  void agent.start().catch(() => undefined);
  const end = Date.now() + 10_000;
  while (agent.heartbeats === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return agent;
}

const post = (a: Agent, token: string, name = 'standby.sync', params: Record<string, unknown> = {}) =>
  fetch(`${a.url}/v1/commands/?wait=false&agent_token=${encodeURIComponent(token)}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, params }) });

describe('ironring agent speaking to an Ironic-shaped API', () => {
  it('asks for 1.62 (tokens in heartbeats) when the API serves more, and heartbeats with the token', async () => {
    const a = await startAgent();
    expect(a.heartbeats).toBe(1);
    const lookup = calls.find((c) => c.url.startsWith('/v1/lookup'))!;
    expect(lookup.url).toBe(`/v1/lookup?addresses=${encodeURIComponent(MAC)}`);
    expect(lookup.version).toBe('1.62');
    const heartbeat = calls.find((c) => c.url === `/v1/heartbeat/${NODE}`)!;
    expect(heartbeat.version).toBe('1.62');
    expect(heartbeat.body).toEqual({ callback_url: a.url, agent_version: expect.any(String), agent_token: TOKEN });
  });

  it('takes commands with the token (Ironic\'s conductor) or its digest (ironring\'s), refuses anything else', async () => {
    const a = await startAgent();
    expect((await post(a, TOKEN)).status).toBe(200);
    expect((await post(a, createHash('sha256').update(TOKEN).digest('hex'))).status).toBe(200);
    const wrong = await post(a, `${TOKEN}x`);
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ message: 'Token invalid.' });
    // Reading results needs no token, as on IPA (Ironic's conductor polls without one), but shows
    // no parameters and no collected logs then; with the token, everything.
    await post(a, TOKEN, 'log.collect_system_logs');
    const anonymous = await fetch(`${a.url}/v1/commands/`);
    expect(anonymous.status).toBe(200);
    const seen = ((await anonymous.json()) as { commands: Array<Record<string, unknown>> }).commands;
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (const c of seen) expect(c.command_params).toEqual({});
    expect(seen.at(-1)).toMatchObject({ command_name: 'collect_system_logs', command_status: 'SUCCEEDED', command_result: null });
    const full = ((await (await fetch(`${a.url}/v1/commands/?agent_token=${encodeURIComponent(TOKEN)}`)).json()) as { commands: Array<Record<string, unknown>> }).commands;
    expect(full.at(-1)!.command_result).toEqual({ system_logs: expect.stringMatching(/^H4sI/) });
    expect((await fetch(`${a.url}/v1/commands/${String(full.at(-1)!.id)}`)).status).toBe(200);
    // Status needs no token, as IPA's.
    expect(await (await fetch(`${a.url}/v1/status`)).json()).toMatchObject({ version: expect.any(String) });
  });

  it('answers 409 while an asynchronous command runs, and 404/400 for unknown extensions and commands', async () => {
    // An image server that never answers: prepare_image stays RUNNING.
    const stall = http.createServer(() => undefined);
    await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
    // A machine with one disk (a file standing for /dev/vda), so the command gets as far as the download.
    const root = mkdtempSync(path.join(tmpdir(), 'ironring-busy-'));
    mkdirSync(path.join(root, 'sys', 'block', 'vda'), { recursive: true });
    writeFileSync(path.join(root, 'sys', 'block', 'vda', 'size'), '16384\n');
    mkdirSync(path.join(root, 'dev'));
    writeFileSync(path.join(root, 'dev', 'vda'), Buffer.alloc(8 * 1024 * 1024));
    try {
      const a = await startAgent({ sysRoot: path.join(root, 'sys'), devRoot: path.join(root, 'dev') });
      const image = { id: 'x', urls: [`http://127.0.0.1:${(stall.address() as { port: number }).port}/x.raw`], os_hash_algo: 'sha256', os_hash_value: 'ab'.repeat(32), root_device: { name: 'vda' } };
      const first = await post(a, TOKEN, 'standby.prepare_image', { image_info: image, configdrive: null });
      expect(first.status).toBe(200);
      expect(await first.json()).toMatchObject({ command_name: 'prepare_image', command_status: 'RUNNING', command_error: null, command_params: { configdrive: null } });
      const busy = await post(a, TOKEN, 'standby.sync');
      expect(busy.status).toBe(409);
      expect(await busy.json()).toMatchObject({ type: 'AgentIsBusy' });
      expect((await post(a, TOKEN, 'nosuch.thing')).status).toBe(404);
      expect((await post(a, TOKEN, 'standby.nosuch')).status).toBe(400);
    } finally {
      await agent?.stop();
      agent = null;
      stall.closeAllConnections();
      await new Promise<void>((r) => stall.close(() => r()));
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('does not heartbeat with a token another lookup was given (******): it keeps looking', async () => {
    lookupToken = '******';
    agent = new Agent({ apiUrl, macs: [MAC], listenHost: '127.0.0.1', listenPort: 0, advertiseHost: '127.0.0.1', lookupIntervalMs: 30, heartbeatIntervalMs: 60_000 });
    void agent.start().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 500));
    expect(calls.filter((c) => c.url.startsWith('/v1/lookup')).length).toBeGreaterThan(2);
    expect(calls.some((c) => c.url.startsWith('/v1/heartbeat'))).toBe(false);
  });
});
