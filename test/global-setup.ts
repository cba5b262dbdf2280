/**
 * Vitest global set-up: never test a stale dist/. Tests that spawn `bin/ironring` run dist/, the
 * others import src/, so `npx vitest run FILE` right after an edit would test the edit in-process
 * and the old code through every real process. Before any test runs, dist/ is rebuilt (tsc
 * incrementally, tsconfig.build.json) when a source is newer than its output or the output is
 * missing; a build that fails stops the run with tsc's errors. Under `npm test`, which builds
 * first, this is one stat per source file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A source whose output in dist/ is missing or older than it. */
export interface StaleOutput {
  /** The source, relative to the project root (`src/ring/hash-ring.ts`). */
  readonly source: string;
  /** Its compiled output (`dist/ring/hash-ring.js`). */
  readonly output: string;
  readonly missing: boolean;
}

const CONFIG = 'tsconfig.build.json';
// Where tsconfig.build.json keeps its incremental state: inside dist/, so that removing dist/
// also forgets it (tsc would otherwise believe the removed outputs were still there).
const BUILD_INFO = 'dist/.tsbuildinfo';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(file);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [file] : [];
  });
}

/** The sources under `root`/src whose dist/ output is missing or older than them; [] when dist/ is current. */
export function staleOutputs(root: string): StaleOutput[] {
  const src = path.join(root, 'src');
  const configTime = Math.max(...['tsconfig.json', CONFIG].map((f) => statSync(path.join(root, f), { throwIfNoEntry: false })?.mtimeMs ?? 0));
  return sources(src).flatMap((file) => {
    const rel = path.relative(src, file);
    const output = path.join(root, 'dist', rel.replace(/\.ts$/, '.js'));
    const out = statSync(output, { throwIfNoEntry: false });
    if (out !== undefined && out.mtimeMs >= Math.max(statSync(file).mtimeMs, configTime)) return [];
    return [{ source: path.relative(root, file), output: path.relative(root, output), missing: out === undefined }];
  });
}

function tsc(root: string): void {
  const bin = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
  const res = spawnSync(process.execPath, [bin, '-p', CONFIG], { cwd: root, encoding: 'utf8' });
  if (res.status !== 0) {
    throw new Error(`dist/ is stale and \`tsc -p ${CONFIG}\` failed, so the tests that run bin/ironring would test old code; fix the build first:\n${res.stdout}${res.stderr}${res.error?.message ?? ''}`);
  }
}

/**
 * Rebuilds dist/ under `root` when stale. Returns what was stale ([] when nothing was built).
 * Throws, with tsc's output, when the build fails.
 */
export function ensureFreshDist(root: string, log: (line: string) => void = console.log): StaleOutput[] {
  const stale = staleOutputs(root);
  if (stale.length === 0) return stale;
  const shown = stale.slice(0, 3).map((s) => s.source).join(', ') + (stale.length > 3 ? ` and ${stale.length - 3} more` : '');
  log(`dist/ is older than ${shown}: rebuilding it (tsc -p ${CONFIG})`);
  tsc(root);
  let left = staleOutputs(root);
  if (left.some((s) => s.missing) && existsSync(path.join(root, BUILD_INFO))) {
    // Outputs removed by hand behind tsc's back: its incremental state says they exist.
    rmSync(path.join(root, BUILD_INFO));
    tsc(root);
    left = staleOutputs(root);
  }
  const missing = left.filter((s) => s.missing);
  if (missing.length > 0) throw new Error(`tsc -p ${CONFIG} succeeded but wrote no ${missing.map((s) => s.output).join(', ')}`);
  // Sources saved without a change: tsc rightly leaves their outputs alone; mark them current so
  // that the next run does not build again.
  for (const s of left) {
    // Rounded up: file times have sub-millisecond digits that a Date drops.
    const t = new Date(Math.ceil(Math.max(Date.now(), statSync(path.join(root, s.source)).mtimeMs)));
    utimesSync(path.join(root, s.output), t, t);
  }
  return stale;
}

/** Vitest's entry point (vitest.config.ts `globalSetup`). */
export default function setup(): void {
  ensureFreshDist(fileURLToPath(new URL('..', import.meta.url)));
}
