/**
 * `npm run test:conformance`: Ironic's own API conformance suite — the `ironic_tempest_plugin.tests.api`
 * tests of Debian's `ironic-tempest-plugin` on `tempest` — against a fresh `ironring up` (auth off,
 * SQLite, fake-hardware), tempest getting its token and catalog from a Keystone stand-in
 * (fake-keystone.ts). tempest's `max_microversion` is ironring's maximum (`GET /v1`), so a test of a
 * newer microversion skips as it would against an older Ironic.
 *
 * Prints a table per module and `N passed, N failed, N skipped`, and checks the result against
 * conformance/expected-passes.txt: a test listed there that did not pass is a regression, and the
 * run fails (exit 1). `--update` adds this run's passes to the list (it only grows). Every listed
 * test counts, including those of a class whose set-up failed (tempest reports the class once).
 *
 * Options: `--update`; `--results DIR` (keep tempest's workspace, log and the JSON report there;
 * default a temporary directory, removed unless the run failed); `--filter REGEX` (a subset, for
 * working on one module: regressions outside it are not checked). Without tempest installed it
 * says what to install and exits 0 — except under CI=true, where that is a failure.
 * Writes `.conformance-report.json` (counts, regressions) for .ci/closing-line.mjs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startFakeKeystone } from './fake-keystone.js';
import { accountsYaml, tempestConf } from './tempest-conf.js';
import { classify, expectedPasses, moduleTable, parseSubunitCsv, testIdOf } from './results.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EXPECTED = path.join(ROOT, 'conformance', 'expected-passes.txt');
const REPORT = path.join(ROOT, '.conformance-report.json');
const SUITE = '^ironic_tempest_plugin\\.tests\\.api';
const EXPECTED_HEADER =
  "# Tests of Ironic's tempest API suite (ironic_tempest_plugin.tests.api) that pass against ironring: a\n" +
  '# listed test that fails is a regression and fails CI. Grows with `npm run test:conformance -- --update`.\n';

const { values: opts } = parseArgs({
  options: { update: { type: 'boolean', default: false }, results: { type: 'string' }, filter: { type: 'string' } },
});

const say = (line: string) => process.stdout.write(`conformance: ${line}\n`);

function fail(message: string): never {
  say(message);
  writeFileSync(REPORT, JSON.stringify({ passed: 0, failed: 0, skipped: 0, regressions: [], error: message }));
  process.exit(1);
}

/** What is missing to run tempest here, or null. */
function missingTempest(): string | null {
  if (spawnSync('tempest', ['--version'], { stdio: 'ignore' }).error) return 'tempest is not installed';
  if (spawnSync('/usr/bin/python3', ['-c', 'import ironic_tempest_plugin'], { stdio: 'ignore' }).status !== 0) return 'ironic-tempest-plugin is not installed';
  if (spawnSync('subunit2csv', ['--help'], { stdio: 'ignore' }).error) return 'subunit2csv (python3-subunit) is not installed';
  return null;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function waitFor(what: string, check: () => Promise<boolean>, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  fail(`timed out after ${seconds} s waiting for ${what}`);
}

function run(command: string, args: string[], cwd: string): string {
  const res = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (res.error || res.status !== 0) fail(`${command} ${args.join(' ')} failed: ${res.error?.message ?? res.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return res.stdout;
}

const missing = missingTempest();
if (missing !== null) {
  const line = `${missing} (apt-get install tempest ironic-tempest-plugin)`;
  if (process.env.CI === 'true') fail(`required under CI: ${line}`);
  say(`skipping: ${line}`);
  process.exit(0);
}

const keep = opts.results !== undefined;
const work = keep ? path.resolve(opts.results!) : mkdtempSync(path.join(tmpdir(), 'ironring-conformance-'));
mkdirSync(work, { recursive: true });
const dataDir = path.join(work, 'ironring');
rmSync(dataDir, { recursive: true, force: true });
const [api, rpc, tftp, http] = [await freePort(), await freePort(), await freePort(), await freePort()];
const apiUrl = `http://127.0.0.1:${api}`;
const ironringLog = path.join(work, 'ironring.log');
writeFileSync(ironringLog, '');
const ironring = spawn(
  process.execPath,
  [path.join(ROOT, 'bin', 'ironring'), 'up', '--data-dir', dataDir, '--api-address', `127.0.0.1:${api}`, '--rpc-address', `127.0.0.1:${rpc}`, '--tftp-address', `127.0.0.1:${tftp}`, '--http-address', `127.0.0.1:${http}`, '--host', '127.0.0.1'],
  { cwd: work, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } },
);
const logChunks: Buffer[] = [];
ironring.stdout.on('data', (c: Buffer) => logChunks.push(c));
ironring.stderr.on('data', (c: Buffer) => logChunks.push(c));
let stopped = false;
ironring.on('exit', (code) => {
  if (!stopped) fail(`ironring up exited (${code}) before the run ended:\n${Buffer.concat(logChunks).toString().split('\n').slice(-15).join('\n')}`);
});
process.on('exit', () => {
  if (!stopped) ironring.kill('SIGKILL');
});

const started = Date.now();
await waitFor('ironring up to answer /healthz', async () => (await fetch(`${apiUrl}/healthz`)).ok, 90);
await waitFor('a conductor with fake-hardware', async () => JSON.stringify(await (await fetch(`${apiUrl}/v1/drivers`)).json()).includes('"fake-hardware"'), 60);
const root = (await (await fetch(`${apiUrl}/v1`)).json()) as { version?: { version?: string } };
const maxVersion = root.version?.version ?? fail('GET /v1 names no maximum microversion');

const keystone = await startFakeKeystone(apiUrl);
const ws = path.join(work, 'workspace');
if (!existsSync(path.join(ws, '.stestr.conf'))) run('tempest', ['init', '--workspace-path', path.join(work, 'workspaces.yaml'), '--name', `ironring-${process.pid}`, ws], work);
writeFileSync(path.join(ws, 'accounts.yaml'), accountsYaml());
writeFileSync(path.join(ws, 'etc', 'tempest.conf'), tempestConf({ workspace: ws, keystoneUrl: keystone.url, maxMicroversion: maxVersion, accountsFile: path.join(ws, 'accounts.yaml') }));
const regex = opts.filter ?? SUITE;
const listed = run('tempest', ['run', '--regex', regex, '--list-tests'], ws)
  .split('\n')
  .filter((l) => l.startsWith('ironic_tempest_plugin.'))
  .map(testIdOf);
say(`ironring ${maxVersion} at ${apiUrl}; ${listed.length} tests of ${regex}; tempest running (serial)`);
const tempestLog = path.join(work, 'tempest-run.log');
// Asynchronously: the Keystone stand-in answers tempest from this process's event loop.
await new Promise<void>((resolve) => {
  const tempest = spawn('tempest', ['run', '--regex', regex, '--serial'], { cwd: ws, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  tempest.stdout.on('data', (c: Buffer) => out.push(c));
  tempest.stderr.on('data', (c: Buffer) => out.push(c));
  const timer = setTimeout(() => tempest.kill('SIGKILL'), 40 * 60_000);
  tempest.on('close', () => {
    clearTimeout(timer);
    writeFileSync(tempestLog, Buffer.concat(out));
    resolve();
  });
});
const csv = spawnSync('/bin/sh', ['-c', 'stestr last --subunit | subunit2csv'], { cwd: ws, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
stopped = true;
ironring.kill('SIGTERM');
await keystone.close();
writeFileSync(ironringLog, Buffer.concat(logChunks));

const outcomes = classify(listed, parseSubunitCsv(csv.stdout));
const counts = { passed: 0, failed: 0, skipped: 0 };
for (const o of outcomes.values()) counts[o.status]++;
process.stdout.write(moduleTable(outcomes));
const expected = expectedPasses(existsSync(EXPECTED) ? readFileSync(EXPECTED, 'utf8') : '');
const inScope = new Set(listed);
const regressions = [...expected].filter((t) => inScope.has(t) && outcomes.get(t)?.status !== 'passed').sort();
const fresh = [...outcomes].filter(([t, o]) => o.status === 'passed' && !expected.has(t)).map(([t]) => t);
if (opts.update) {
  const all = [...new Set([...expected, ...fresh])].sort();
  writeFileSync(EXPECTED, `${EXPECTED_HEADER}${all.join('\n')}\n`);
  say(`expected-passes.txt: ${all.length} tests (${fresh.length} added)`);
} else if (fresh.length > 0) {
  say(`${fresh.length} tests pass that expected-passes.txt does not list: record them with npm run test:conformance -- --update`);
}
for (const t of regressions) say(`REGRESSION: ${t} ${outcomes.get(t)?.status ?? 'did not run'}${outcomes.get(t)?.reason ? ` (${outcomes.get(t)!.reason})` : ''}`);
if (keystone.unexpected.length > 0) say(`the Keystone stand-in had no answer for: ${[...new Set(keystone.unexpected)].slice(0, 5).join(', ')}`);
writeFileSync(REPORT, JSON.stringify({ ...counts, regressions, maxVersion, seconds: Math.round((Date.now() - started) / 1000) }));
say(`${Math.round((Date.now() - started) / 1000)} s; logs (kept when the run fails, or with --results): ${tempestLog}, ${ironringLog}`);
const ok = regressions.length === 0 && listed.length > 0;
if (ok && !keep) rmSync(work, { recursive: true, force: true });
console.log(`${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
process.exit(ok ? 0 : 1);
