/**
 * The stock OpenStack `baremetal` client (Debian `python3-ironicclient`, or `TEST_BAREMETAL_BIN`)
 * against a real `ironring up` started for a test file: `useStockClient()` registers the
 * `beforeAll`/`afterAll` that start and stop it and returns how to run the client. Each command is the
 * real binary with `--os-endpoint … --os-auth-type none`, in an environment with none of the
 * caller's `OS_*` settings or clouds.yaml and its caches in the test's own HOME.
 *
 * Without the binary, `stockClientAvailable` is false (and the suite is skipped with one line naming
 * the package, or fails under `CI=true`: test/helpers/peers.ts).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { startCli } from './cli.js';
import type { CliProcess } from './cli.js';
import { requirePeer } from './peers.js';

const BAREMETAL = process.env.TEST_BAREMETAL_BIN ?? 'baremetal';

/** Whether the client can run here (TEST_BAREMETAL_BIN is taken as is: a venv's client, say). */
export const stockClientAvailable = process.env.TEST_BAREMETAL_BIN !== undefined || requirePeer('baremetal', 'python3-ironicclient');

export interface ClientRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface StockClient {
  /** Runs `baremetal <args>`; asynchronous, so independent commands run side by side (each spends a second starting Python). */
  baremetal(...args: string[]): Promise<ClientRun>;
  /** Runs a command that must succeed; returns its stdout. */
  ok(...args: string[]): Promise<string>;
  /** Runs a command with `-f json` that must succeed; returns the parsed output. */
  json<T = Record<string, unknown>>(...args: string[]): Promise<T>;
  /** The API's base URL (without /v1), once started. */
  endpoint(): string;
  /** The test's scratch directory (HOME of the client; `data/` is ironring's). */
  dir(): string;
}

/** Environment for the client: no OS_* settings or clouds.yaml of the caller, caches in `home`. */
function clientEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OS_') && !k.startsWith('IRONRING_')) env[k] = v;
  return { ...env, HOME: home, XDG_CACHE_HOME: path.join(home, '.cache'), XDG_CONFIG_HOME: path.join(home, '.config') };
}

/** Starts `ironring up` for the file's tests (call inside the describe block) and returns the client. */
export function useStockClient(name: string): StockClient {
  let dir = '';
  let up: CliProcess | undefined;
  let endpoint = '';

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), `ironring-${name}-`));
    // python-ironicclient creates its cache directory without tolerating one that appears meanwhile:
    // two clients started at once in a fresh HOME (tests run some in parallel) race for it.
    mkdirSync(path.join(dir, '.cache', 'python-ironicclient'), { recursive: true });
    up = startCli(
      ['up', '--data-dir', path.join(dir, 'data'), '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'],
      { cwd: dir },
    );
    endpoint = (await up.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
  });

  afterAll(async () => {
    if (up !== undefined) {
      if (up.child.exitCode === null) up.child.kill('SIGTERM');
      await up.exited;
    }
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  function baremetal(...args: string[]): Promise<ClientRun> {
    return new Promise((resolve, reject) => {
      const child = spawn(BAREMETAL, ['--os-endpoint', endpoint, '--os-auth-type', 'none', ...args], { env: clientEnv(dir) });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  async function ok(...args: string[]): Promise<string> {
    const res = await baremetal(...args);
    expect(res.code, `baremetal ${args.join(' ')}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`).toBe(0);
    return res.stdout;
  }

  async function json<T = Record<string, unknown>>(...args: string[]): Promise<T> {
    return JSON.parse(await ok(...args, '-f', 'json')) as T;
  }

  return { baremetal, ok, json, endpoint: () => endpoint, dir: () => dir };
}
