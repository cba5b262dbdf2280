import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { requirePeer } from '../helpers/peers.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';

const engines = await testEngines();

let dir: string;
let running: CliProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-up-'));
  running = [];
});
afterEach(async () => {
  for (const p of running) {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function startUp(args: string[], env?: Record<string, string>): Promise<{ proc: CliProcess; base: string }> {
  const proc = startCli(
    ['up', '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio', ...args],
    { cwd: dir, ...(env ? { env } : {}) },
  );
  running.push(proc);
  const m = await proc.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/);
  return { proc, base: m[1]! };
}

describe('ironring up', () => {
  // TFTP is checked with a real client, curl.
  it.skipIf(!requirePeer('curl', 'curl'))('creates its data directory, serves /v1 and /healthz, and exits 0 on SIGTERM', async () => {
    const dataDir = path.join(dir, 'state');
    // The ProxyDHCP responder on free ports of 127.0.0.1 (67 and 4011 need root, and tests run side by side).
    const { proc, base } = await startUp(['--data-dir', dataDir], { IRONRING_DHCP_PROXY_ENABLED: 'true', IRONRING_DHCP_PROXY_ADDRESS: '127.0.0.1', IRONRING_DHCP_PROXY_PORT: '0', IRONRING_DHCP_PROXY_PXE_PORT: '0' });
    expect(proc.stdout()).toContain(`data directory: ${dataDir}`);
    expect(proc.stdout()).toMatch(/boot: +TFTP 127\.0\.0\.1:\d+, HTTP http:\/\/127\.0\.0\.1:\d+, ProxyDHCP 127\.0\.0\.1:[1-9]\d*\+[1-9]\d*\n/);
    expect(proc.stdout()).toContain(`database:       sqlite://${dataDir}/ironring.db`);
    expect(existsSync(path.join(dataDir, 'ironring.db'))).toBe(true);

    expect(proc.stdout()).toMatch(/conductor: +aio \(RPC http:\/\/127\.0\.0\.1:\d+, signed with \S+rpc-secret\)/);

    // The conductor's boot servers serve its data directory: TFTP with a real client, HTTP with fetch.
    const boot = /boot: +TFTP 127\.0\.0\.1:(\d+), HTTP (http:\/\/127\.0\.0\.1:\d+)/.exec(proc.stdout())!;
    writeFileSync(path.join(dataDir, 'tftpboot', 'hello.txt'), 'hello over tftp\n');
    writeFileSync(path.join(dataDir, 'httpboot', 'boot.txt'), 'hello over http\n');
    const tftp = spawnSync('curl', ['-sS', '--max-time', '10', `tftp://127.0.0.1:${boot[1]}/hello.txt`], { encoding: 'utf8' });
    expect(tftp.stdout).toBe('hello over tftp\n');
    expect(await (await fetch(`${boot[2]}/boot.txt`)).text()).toBe('hello over http\n');

    const v1 = await fetch(`${base}/v1`);
    expect(v1.status).toBe(200);
    expect(((await v1.json()) as { id: string }).id).toBe('v1');
    const health = await fetch(`${base}/healthz`);
    expect(((await health.json()) as { status: string }).status).toBe('ok');
    const conductors = await fetch(`${base}/v1/conductors`, { headers: { 'X-OpenStack-Ironic-API-Version': 'latest' } });
    expect(((await conductors.json()) as { conductors: Array<{ hostname: string; alive: boolean }> }).conductors).toMatchObject([{ hostname: 'aio', alive: true }]);

    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    expect(proc.stderr()).toContain('conductor stopped');
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it('creates an RPC secret (mode 0600) on first start: its RPC port refuses unsigned calls, its own API\'s calls work', async () => {
    const { proc, base } = await startUp(['--data-dir', dir]);
    const rpc = /conductor: +aio \(RPC (http:\/\/127\.0\.0\.1:\d+), signed with (\S+)\)/.exec(proc.stdout())!;
    expect(rpc[2]).toBe(path.join(dir, 'rpc-secret'));
    expect(statSync(rpc[2]!).mode & 0o777).toBe(0o600);
    const secret = readFileSync(rpc[2]!, 'utf8');
    const H = { 'X-OpenStack-Ironic-API-Version': 'latest', 'content-type': 'application/json' };
    const created = await fetch(`${base}/v1/nodes`, { method: 'POST', headers: H, body: JSON.stringify({ driver: 'fake-hardware', driver_info: { ipmi_password: 'up-secret-pw' } }) });
    const { uuid } = (await created.json()) as { uuid: string };
    for (const action of ['destroy', 'maintenance', 'power', 'provision']) {
      const res = await fetch(`${rpc[1]}/v1/rpc/nodes/${uuid}/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ maintenance: true, target: 'manage' }) });
      expect(res.status, action).toBe(401);
    }
    expect((await fetch(`${base}/v1/nodes/${uuid}/maintenance`, { method: 'PUT', headers: H, body: JSON.stringify({ reason: 'ok' }) })).status).toBe(202);
    const node = (await (await fetch(`${base}/v1/nodes/${uuid}`, { headers: H })).json()) as { maintenance: boolean };
    expect(node.maintenance).toBe(true);
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    // The next start keeps the secret (conductors and APIs that copied it stay valid).
    const again = await startUp(['--data-dir', dir]);
    expect(readFileSync(rpc[2]!, 'utf8')).toBe(secret);
    again.proc.child.kill('SIGTERM');
    expect(await again.proc.exited).toBe(0);
  });

  it('exits 0 on SIGINT and keeps its database for the next start', async () => {
    const first = await startUp(['--data-dir', dir]);
    expect(first.proc.stderr()).toContain('database schema migrated');
    first.proc.child.kill('SIGINT');
    expect(await first.proc.exited).toBe(0);

    const second = await startUp(['--data-dir', dir]);
    expect(second.proc.stderr()).not.toContain('database schema migrated');
    second.proc.child.kill('SIGTERM');
    expect(await second.proc.exited).toBe(0);
  });

  it('refuses an occupied port with one line naming it, exit code 1', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const res = runCli(['up', '--data-dir', dir, '--api-address', `127.0.0.1:${port}`], { cwd: dir });
      expect(res.code).toBe(1);
      expect(res.stderr.trim().split('\n').at(-1)).toBe(
        `ironring: cannot listen for the API on 127.0.0.1:${port}: address already in use (change it with --api-address or [api] address)`,
      );
      expect(res.stderr).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
  });

  it('comes up without the TFTP server, with a warning, when its default port 69 cannot be bound', async () => {
    // Hold port 69 (as root), or find it not permitted (as an ordinary user): either way it is unusable.
    const blocker = createSocket('udp4');
    await new Promise<void>((resolve) => {
      blocker.once('error', () => resolve());
      blocker.bind(69, '0.0.0.0', () => resolve());
    });
    try {
      const proc = startCli(['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'], { cwd: dir });
      running.push(proc);
      await proc.waitForOutput(/boot: +TFTP off, HTTP http:/);
      expect(proc.stderr()).toMatch(/cannot listen for the TFTP server on 0\.0\.0\.0:69: (address already in use|permission denied)[^"]*; continuing without it/);
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
    } finally {
      blocker.close();
    }
    // An address the operator chose must bind, or nothing starts.
    const taken = createSocket('udp4');
    await new Promise<void>((resolve) => taken.bind(0, '127.0.0.1', resolve));
    const res = runCli(['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--tftp-address', `127.0.0.1:${taken.address().port}`], { cwd: dir });
    taken.close();
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n').at(-1)).toMatch(/^ironring: cannot listen for the TFTP server on 127\.0\.0\.1:\d+: address already in use \(change it with --tftp-address or \[pxe\] tftp_address\)$/);
  });

  it('refuses a malformed --api-address with exit code 2', () => {
    const res = runCli(['up', '--data-dir', dir, '--api-address', 'localhost'], { cwd: dir });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('ironring: command line: [api] address: expected an address host:port (port 0–65535), got "localhost"\n');
  });

  it('refuses an unreachable database with exit code 1 and starts nothing', () => {
    const res = runCli(['up', '--data-dir', dir, '--database', 'postgres://ironring:pw@127.0.0.1:1/ironring'], { cwd: dir });
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n').at(-1)).toBe(
      'ironring: cannot connect to database postgres://ironring:***@127.0.0.1:1/ironring: connection refused (is the server running and listening there?)',
    );
    expect(res.stdout).toBe('');
  });

  if (engines.includes('postgres')) {
    it('runs on PostgreSQL given --database', async () => {
      const target = await createTestDatabase('postgres');
      try {
        const { proc, base } = await startUp(['--data-dir', dir, '--database', target.url]);
        const health = (await (await fetch(`${base}/healthz`)).json()) as { engine: string };
        expect(health.engine).toBe('postgres');
        expect(existsSync(path.join(dir, 'ironring.db'))).toBe(false);
        proc.child.kill('SIGTERM');
        expect(await proc.exited).toBe(0);
      } finally {
        await target.drop();
      }
    });
  }
});
