/**
 * The global set-up that keeps dist/ current (test/global-setup.ts): on a small project of its own
 * (src/, tsconfig.build.json, the repository's TypeScript), and on this repository, whose dist/ it
 * has already checked before this file runs.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import config from '../vitest.config.js';
import { ensureFreshDist, staleOutputs } from './global-setup.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('the vitest global set-up', () => {
  it('is the suite\'s, and left this repository\'s dist/ current before any test ran', () => {
    expect(config.test?.globalSetup).toContain('test/global-setup.ts');
    expect(staleOutputs(ROOT)).toEqual([]);
  });
});

describe('ensureFreshDist on a project of its own', () => {
  let dir: string;
  const lines: string[] = [];
  const log = (line: string) => lines.push(line);
  const write = (rel: string, text: string, ageSeconds = 0) => {
    const file = path.join(dir, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    // Explicit times: a source written in the same millisecond as a build is not "newer" by mtime.
    const t = new Date(Date.now() - ageSeconds * 1000);
    utimesSync(file, t, t);
  };
  const later = (rel: string) => {
    const t = new Date(Date.now() + 5000);
    utimesSync(path.join(dir, rel), t, t);
  };
  const built = (rel: string) => readFileSync(path.join(dir, 'dist', rel), 'utf8');

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-dist-'));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    write('package.json', '{ "type": "module" }', 60);
    write('tsconfig.json', JSON.stringify({ compilerOptions: { target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: [] }, include: ['src'] }), 60);
    write('tsconfig.build.json', JSON.stringify({ extends: './tsconfig.json', compilerOptions: { rootDir: 'src', outDir: 'dist', incremental: true, tsBuildInfoFile: 'dist/.tsbuildinfo' }, include: ['src'] }), 60);
    write('src/a.ts', 'export const answer: number = 41;\n', 60);
    write('src/sub/b.ts', "import { answer } from '../a.js';\nexport const next = answer + 1;\n", 60);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds a missing dist/, then finds it current without building again', () => {
    expect(ensureFreshDist(dir, log).map((s) => [s.source, s.missing])).toEqual([['src/a.ts', true], ['src/sub/b.ts', true]]);
    expect(built('sub/b.js')).toContain('answer + 1');
    lines.length = 0;
    expect(ensureFreshDist(dir, log)).toEqual([]);
    expect(lines).toEqual([]);
  });

  it('rebuilds after an edit, saying which source was newer', () => {
    write('src/a.ts', 'export const answer: number = 42;\n');
    later('src/a.ts');
    expect(ensureFreshDist(dir, log).map((s) => s.source)).toEqual(['src/a.ts']);
    expect(lines.at(-1)).toBe('dist/ is older than src/a.ts: rebuilding it (tsc -p tsconfig.build.json)');
    expect(built('a.js')).toContain('answer = 42');
    expect(staleOutputs(dir)).toEqual([]);
  });

  it('after a save without a change (tsc writes nothing), builds once, not on every run', () => {
    later('src/sub/b.ts');
    expect(ensureFreshDist(dir, log)).toHaveLength(1);
    expect(ensureFreshDist(dir, log)).toEqual([]);
  });

  it('puts back an output removed behind tsc\'s incremental state', () => {
    rmSync(path.join(dir, 'dist/sub/b.js'));
    expect(ensureFreshDist(dir, log).map((s) => [s.output, s.missing])).toEqual([['dist/sub/b.js', true]]);
    expect(built('sub/b.js')).toContain('answer + 1');
  });

  it('refuses to go on when the build fails, with tsc\'s error', () => {
    write('src/a.ts', "export const answer: number = 'forty-two';\n");
    later('src/a.ts');
    expect(() => ensureFreshDist(dir, log)).toThrow(/dist\/ is stale and `tsc -p tsconfig.build.json` failed[^]*src\/a\.ts.*TS2322/);
  });
});
