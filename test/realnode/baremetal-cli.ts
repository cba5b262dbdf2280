/** The stock OpenStack client, `baremetal`, against a lab's API, as the real-node scenarios run it. */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Lab } from './lab.js';

const execFileAsync = promisify(execFile);

/**
 * `baremetal <args>` against `lab`'s API (no Keystone, a HOME of its own, no OS_* or IRONRING_*
 * settings from outside); resolves to its stderr when it fails, else ''. Not spawnSync: the API
 * answering it runs in this process.
 */
export function baremetalCli(lab: Lab): (args: string[]) => Promise<string> {
  return async (args) => {
    const home = path.join(lab.network.slot.dir, 'client-home');
    mkdirSync(home, { recursive: true });
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OS_') && !k.startsWith('IRONRING_')));
    const run = await execFileAsync('baremetal', ['--os-endpoint', lab.apiUrl, '--os-auth-type', 'none', ...args], { env: { ...env, HOME: home }, timeout: 120_000 }).catch((err: { stderr?: string; message: string }) => ({ stdout: '', stderr: err.stderr ?? err.message, failed: true }));
    return 'failed' in run ? run.stderr : '';
  };
}
