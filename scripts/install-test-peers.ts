/**
 * `npm test`'s first step (the `pretest` script): installs the Debian packages of the real peers the
 * tests talk to (test/helpers/peers.ts, TEST_PEERS) that are missing, so that the README's
 * `npm ci && npm test` passes on a fresh Debian machine.
 *
 * It installs only as root with apt-get, and says what it installs in one line first. Where it
 * cannot (not root, no apt-get, no network, IRONRING_TEST_INSTALL_PEERS=0) it says so in one line
 * and exits 0: the tests that need a missing peer then skip, each with a line naming the package,
 * or fail under CI=true — the tests decide, not this step.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { findCommand, missingPeers } from '../test/helpers/peers.js';

/** Gives up on a hung apt-get (a mirror that does not answer) rather than hanging `npm test`. */
const APT_TIMEOUT_MS = 600_000;

function apt(aptGet: string, args: string[]): { ok: boolean; why: string } {
  const res = spawnSync(aptGet, ['-o', 'DPkg::Lock::Timeout=300', '-o', 'Acquire::Retries=1', ...args], {
    encoding: 'utf8',
    timeout: APT_TIMEOUT_MS,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (res.error) return { ok: false, why: res.error.message };
  const lastLine = (text: string): string => text.trim().split('\n').filter((l) => l.trim() !== '').pop() ?? '';
  const last = lastLine(res.stderr) || lastLine(res.stdout);
  return { ok: res.status === 0, why: `exit ${res.status}: ${last.slice(0, 300)}` };
}

function hasPackageLists(): boolean {
  try {
    return readdirSync('/var/lib/apt/lists').some((f) => f.endsWith('_Packages') || f.includes('_Packages.'));
  } catch {
    return false;
  }
}

function main(): void {
  const missing = missingPeers();
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map((m) => m.spec.package))];
  const list = packages.join(' ');
  const cannot = (why: string, what = list): void => {
    console.log(`test peers: not installing ${what} (${why}); the tests that need them skip (fail under CI=true)`);
  };
  if (process.env.IRONRING_TEST_INSTALL_PEERS === '0') return cannot('IRONRING_TEST_INSTALL_PEERS=0');
  if (process.getuid?.() !== 0) return cannot(`not root: run apt-get install -y ${list} as root`);
  const aptGet = findCommand('apt-get');
  if (aptGet === null) return cannot('no apt-get on this machine');

  console.log(`test peers: installing the Debian packages the tests use as real peers: apt-get install -y --no-install-recommends ${list}`);
  const install = ['install', '-y', '-qq', '--no-install-recommends', ...packages];
  // A fresh Debian image ships without package lists: fetch them once, then install.
  if (!hasPackageLists()) {
    const update = apt(aptGet, ['update', '-qq']);
    if (!update.ok) return cannot(`apt-get update failed, ${update.why}`);
  }
  let result = apt(aptGet, install);
  if (!result.ok && /Unable to locate package|404\s+Not Found|has no installation candidate/i.test(result.why)) {
    // Lists too old for the mirror: refresh them once and try again.
    if (apt(aptGet, ['update', '-qq']).ok) result = apt(aptGet, install);
  }
  if (!result.ok) return cannot(`apt-get install failed, ${result.why}`);
  const still = missingPeers();
  if (still.length > 0) cannot(`still unusable after apt-get: ${still.map((m) => m.problem).join('; ')}`, still.map((m) => m.spec.package).join(' '));
}

main();
