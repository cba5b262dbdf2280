/**
 * Helpers for the TFTP benchmark: the reference server (tftpd-hpa) as a foreground process, and
 * timed fetches by the Debian clients (curl, atftp), each a real process as a boot client would be.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { existsSync } from 'node:fs';

/** A client invocation: which program, with which options. */
export interface Fetch {
  client: 'curl' | 'atftp';
  blksize: number;
  windowsize?: number;
}

/** Runs a command to completion; rejects on a non-zero exit or after `timeoutMs`. */
export function run(cmd: string, args: string[], timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code ?? signal}: ${stderr.trim().slice(0, 300)}`)),
    );
  });
}

/** The command line fetching `remote` from `port` into `local`. */
export function fetchCommand(fetch: Fetch, port: number, remote: string, local: string): [string, string[]] {
  if (fetch.client === 'curl') {
    if (fetch.windowsize) throw new Error('curl does not negotiate windowsize');
    return ['curl', ['-sS', '--fail', '--tftp-blksize', String(fetch.blksize), '-o', local, `tftp://127.0.0.1:${port}/${remote}`]];
  }
  const args = ['--get', '-r', remote, '-l', local, '--option', `blksize ${fetch.blksize}`];
  if (fetch.windowsize) args.push('--option', `windowsize ${fetch.windowsize}`);
  return ['atftp', [...args, '127.0.0.1', String(port)]];
}

/** Fetches once and returns the wall time in seconds (process start to exit). */
export async function timedFetch(fetch: Fetch, port: number, remote: string, local: string): Promise<number> {
  const [cmd, args] = fetchCommand(fetch, port, remote, local);
  const t0 = process.hrtime.bigint();
  await run(cmd, args);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** A UDP port free right now on 127.0.0.1 (for the reference server, which cannot pick one itself). */
export function freeUdpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    s.once('error', reject);
    s.bind(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** in.tftpd's location on Debian, or null when tftpd-hpa is not installed. */
export function tftpdHpaPath(): string | null {
  for (const p of ['/usr/sbin/in.tftpd', '/sbin/in.tftpd']) if (existsSync(p)) return p;
  return null;
}

/** tftpd-hpa in the foreground (`-L`) serving `root` on 127.0.0.1:port. */
export interface ReferenceServer {
  port: number;
  stop(): Promise<void>;
}

export async function startTftpdHpa(binary: string, root: string): Promise<ReferenceServer> {
  const port = await freeUdpPort();
  const child: ChildProcess = spawn(binary, ['-L', '-s', root, '-a', `127.0.0.1:${port}`], { stdio: 'ignore' });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`in.tftpd exited with ${code}`)));
    // It binds before reading requests; a short grace period avoids racing the first fetch.
    setTimeout(resolve, 300);
  });
  child.removeAllListeners('exit');
  return {
    port,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
