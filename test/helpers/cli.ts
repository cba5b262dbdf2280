/** Running the built `ironring` command the way a user does: a real process, real exit codes. */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(REPO_ROOT, 'bin', 'ironring');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment for child processes: ours without IRONRING_* settings that would leak in. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('IRONRING_')) env[k] = v;
  // No ProxyDHCP on the test machine's UDP 67 unless a test asks for it (as root it would bind it).
  return { ...env, IRONRING_DHCP_PROXY_ENABLED: 'false', ...extra };
}

export function runCli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): CliResult {
  const res = spawnSync(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: cleanEnv(options.env),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** A long-running `ironring …` process with its output collected. */
export interface CliProcess {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout matches `pattern` (rejects on exit, or after `timeoutMs`, default 60 s: a start under a loaded CI machine took over 15 s). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
}

/**
 * `prefix` runs the command through another that execs it (`['ip', 'netns', 'exec', 'ns1']`), so the
 * child is still the ironring process itself: signals reach it directly.
 */
export function startCli(args: string[], options: { cwd?: string; env?: Record<string, string>; nodeArgs?: string[]; prefix?: readonly string[] } = {}): CliProcess {
  const argv = [...(options.prefix ?? []), process.execPath, ...(options.nodeArgs ?? []), BIN, ...args];
  const child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd ?? REPO_ROOT, env: cleanEnv(options.env) });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput(pattern, timeoutMs = 60_000) {
      const started = Date.now();
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(out);
          if (m) return resolve(m);
          if (done) return reject(new Error(`process exited before printing ${pattern}; stderr: ${err}`));
          if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${pattern}; stderr: ${err}`));
          setTimeout(check, 25);
        };
        check();
      });
    },
  };
}
