/**
 * A real IPMI BMC for tests: `fixtures/bmc-sim.py` on Debian's python3-pyghmi, spoken to by the real
 * `ipmitool`. Needs the Debian packages `ipmitool` and `python3-pyghmi` and the system python
 * (`/usr/bin/python3`; a pyenv python on PATH lacks Debian's modules).
 *
 * Like every test with a Debian peer (test/helpers/peers.ts): when either is missing the tests fail
 * under CI (`CI=true`) and are skipped elsewhere with one line naming the package.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { requirePeer } from '../helpers/peers.js';

export const SYSTEM_PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('./fixtures/bmc-sim.py', import.meta.url));

/**
 * Whether the real-BMC tests run here: both peers are checked (each missing one prints its own
 * skip line naming its package); throws under CI when either is missing.
 */
export function bmcSimulatorAvailable(): Promise<boolean> {
  const ipmitool = requirePeer('ipmitool', 'ipmitool');
  const pyghmi = requirePeer(SYSTEM_PYTHON, 'python3-pyghmi');
  return Promise.resolve(ipmitool && pyghmi);
}

/** A running simulator. */
export interface BmcSimulator {
  port: number;
  user: string;
  password: string;
  /** What reached the BMC, one line per change: `POWER on`, `BOOTDEV network persistent`, `VM started <pid>`… */
  readonly events: string[];
  /** Stops the process and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
}

/** Where a simulator listens and what it powers. */
export interface BmcSimulatorOptions {
  /** IPv4 address to listen on; default 127.0.0.1. */
  address?: string;
  /**
   * A machine behind the BMC (argv, e.g. a qemu command): power on starts it, power off kills it,
   * and the power state reads whether it still runs. Without it the power state is only a flag.
   */
  machine?: readonly string[];
}

/** Starts a simulator on a free UDP port (127.0.0.1 unless told) and waits until it listens. */
export async function startBmcSimulator(user = 'admin', password = 'password', options: BmcSimulatorOptions = {}): Promise<BmcSimulator> {
  const args = ['-u', SCRIPT, '--port', '0', '--address', options.address ?? '127.0.0.1', '--user', user, '--password', password];
  if (options.machine !== undefined) args.push('--vm-command', JSON.stringify(options.machine));
  const child: ChildProcess = spawn(SYSTEM_PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const events: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`BMC simulator did not start within 15 s: ${stderr}`)), 15_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`BMC simulator exited with ${code}: ${stderr}`));
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        const listening = /^LISTENING (\d+)$/.exec(line);
        if (listening) {
          clearTimeout(timer);
          resolve(Number(listening[1]));
        } else if (line !== '') events.push(line);
      }
    });
  });
  let stopped = false;
  return {
    port,
    user,
    password,
    events,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
