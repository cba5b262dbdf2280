/** Running real `ironring conductor` processes for cluster tests, and reading their state. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, startCli } from './cli.js';
import type { CliProcess } from './cli.js';

/**
 * Short intervals so that death is detected in seconds. The timeout is six intervals, not three: on
 * a loaded test machine (two CPU hogs beside the suite) a live conductor's event loop can stall for
 * a few seconds, and a live conductor judged dead makes rings flap and tests fail for nothing.
 * How fast death is detected is measured by bench/takeover.ts, not asserted here.
 */
export const TEST_HEARTBEAT_INTERVAL = 1;
export const TEST_HEARTBEAT_TIMEOUT = 6;

/**
 * How long tests wait for something that must happen (a ring change, a lock released): a limit
 * against hanging forever, not a performance bound — the times are logged and benchmarked instead.
 */
export const EVENTUALLY_MS = 60_000;

export interface ConductorStatus {
  hostname: string;
  id: number;
  state: string;
  ring_version: number;
  rings: Record<string, string[]>;
}

export interface RunningConductor {
  host: string;
  proc: CliProcess;
  rpcUrl: string;
  /** The conductor's data directory (tftpboot/, master_images/ … under it). */
  dataDir: string;
  status(): Promise<ConductorStatus>;
}

export interface ConductorOptions {
  group?: string;
  skewMs?: number;
  env?: Record<string, string>;
  /** A data directory owned by the caller (kept after exit); default a temporary one removed on exit. */
  dataDir?: string;
  /** Extra arguments for node itself (`--cpu-prof` …), before the CLI's. */
  nodeArgs?: string[];
  /** Listen addresses (host:port) instead of 127.0.0.1 on free ports. */
  addresses?: { rpc?: string; tftp?: string; http?: string };
  /** A network namespace to run the conductor in (`ip netns exec`); the caller creates it. */
  netns?: string;
}

export async function startConductor(url: string, host: string, options: ConductorOptions = {}): Promise<RunningConductor> {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), `ironring-${host}-`));
  const listen = { rpc: '127.0.0.1:0', tftp: '127.0.0.1:0', http: '127.0.0.1:0', ...options.addresses };
  const args = ['conductor', '--host', host, '--database', url, '--rpc-address', listen.rpc, '--tftp-address', listen.tftp, '--http-address', listen.http, '--data-dir', dataDir];
  if (options.group !== undefined) args.push('--group', options.group);
  const proc = startCli(args, {
    env: {
      IRONRING_CONDUCTOR_HEARTBEAT_INTERVAL: String(TEST_HEARTBEAT_INTERVAL),
      IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: String(TEST_HEARTBEAT_TIMEOUT),
      IRONRING_CONDUCTOR_GRACEFUL_SHUTDOWN_TIMEOUT: '5',
      IRONRING_LOG_LEVEL: 'debug',
      // Port 67 is the host's: a test that wants the ProxyDHCP responder turns it on with its own ports.
      IRONRING_DHCP_PROXY_ENABLED: 'false',
      ...(options.skewMs !== undefined ? { SKEW_CLOCK_MS: String(options.skewMs) } : {}),
      ...options.env,
    },
    nodeArgs: [...(options.nodeArgs ?? []), ...(options.skewMs !== undefined ? ['--import', path.join(REPO_ROOT, 'test/helpers/skew-clock.mjs')] : [])],
    ...(options.netns !== undefined ? { prefix: ['ip', 'netns', 'exec', options.netns] } : {}),
  });
  if (options.dataDir === undefined) void proc.exited.then(() => rmSync(dataDir, { recursive: true, force: true }));
  let m: RegExpMatchArray;
  try {
    // 60 s, waitForOutput's default: a restart beside two real VMs on two loaded cores took over 30 s.
    m = await proc.waitForOutput(/RPC at (http:\/\/\S+)/, 60_000);
  } catch (err) {
    // Nobody holds a conductor whose start failed: without this it ran on after the test.
    proc.child.kill('SIGKILL');
    throw err;
  }
  const rpcUrl = m[1]!;
  return {
    host,
    proc,
    rpcUrl,
    dataDir,
    async status() {
      const res = await fetch(`${rpcUrl}/v1/status`);
      return (await res.json()) as ConductorStatus;
    },
  };
}

/** Polls `check` every 25 ms until it returns true; resolves to the elapsed milliseconds. */
export async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The members of the default group's ring as seen by each conductor. */
export async function ringsSeen(conductors: readonly RunningConductor[]): Promise<string[][]> {
  return Promise.all(conductors.map(async (c) => (await c.status()).rings['']?.slice().sort() ?? []));
}

/** Environment for an in-process conductor in tests: free ports and a temporary data directory. */
export function testConductorEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    IRONRING_DATA_DIR: dataDir,
    IRONRING_CONDUCTOR_RPC_ADDRESS: '127.0.0.1:0',
    IRONRING_PXE_TFTP_ADDRESS: '127.0.0.1:0',
    IRONRING_DEPLOY_HTTP_ADDRESS: '127.0.0.1:0',
    IRONRING_DHCP_PROXY_ENABLED: 'false',
    ...extra,
  };
}
