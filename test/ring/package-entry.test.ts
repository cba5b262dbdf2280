import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RING_SRC = join(ROOT, 'src/ring');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/**
 * `import { HashRing } from 'ironring/ring'` from the built package. The ring is compiled on its
 * own into a scratch copy of the package (package.json + dist/ring), so this neither depends on nor
 * disturbs the shared dist/ — and compiling src/ring with rootDir=src/ring fails if the ring ever
 * imports another part of ironring.
 */
describe('the ironring/ring entry point', () => {
  let pkg: string;

  beforeAll(() => {
    pkg = mkdtempSync(join(tmpdir(), 'ironring-ring-'));
    cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
    const files = readdirSync(RING_SRC).filter((f) => f.endsWith('.ts'));
    const common = ['--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2023', '--strict'];
    execFileSync(process.execPath, [
      TSC,
      ...common,
      '--declaration',
      '--skipLibCheck',
      '--types',
      'node',
      '--typeRoots',
      join(ROOT, 'node_modules/@types'),
      '--rootDir',
      RING_SRC,
      '--outDir',
      join(pkg, 'dist/ring'),
      ...files.map((f) => join(RING_SRC, f)),
    ]);
  }, 60_000);

  afterAll(() => {
    rmSync(pkg, { recursive: true, force: true });
  });

  it('imports nothing of ironring outside src/ring', () => {
    for (const file of readdirSync(RING_SRC).filter((f) => f.endsWith('.ts'))) {
      const source = readFileSync(join(RING_SRC, file), 'utf8');
      const specifiers = [...source.matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
      for (const s of specifiers) expect(s.startsWith('./') || s.startsWith('node:'), `${file} imports ${s}`).toBe(true);
    }
  });

  it('resolves through package.json exports and places keys', () => {
    const script = [
      "import { HashRing, NoHostsError } from 'ironring/ring';",
      "const ring = new HashRing(['c1', 'c2', 'c3'], { mode: 'tooz' });",
      "let empty = '';",
      'try { new HashRing([]); } catch (e) { empty = e instanceof NoHostsError ? String(e.httpStatus) : "wrong"; }',
      "console.log(JSON.stringify({ owner: ring.lookup('4ba71ab7-ac05-04a5-6cc6-be1805fdf179', { replicas: 3 }).length, empty }));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: pkg, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ owner: 3, empty: '503' });
  });

  it('ships types that a TypeScript consumer compiles against', () => {
    const consumer = join(pkg, 'consumer.ts');
    writeFileSync(
      consumer,
      [
        "import { HashRing, type RingChange, RingManager } from 'ironring/ring';",
        "const owner: string[] = new HashRing([{ name: 'c1', weight: 2 }]).lookup('k', { replicas: 1 });",
        'const manager = new RingManager();',
        'manager.subscribe((c: RingChange) => void c.version);',
        'export { owner };',
      ].join('\n'),
    );
    const compile = () =>
      execFileSync(process.execPath, [TSC, '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--strict', '--skipLibCheck', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types'), consumer], { cwd: pkg, encoding: 'utf8' });
    expect(compile).not.toThrow();
    writeFileSync(consumer, "import { HashRing } from 'ironring/ring';\nconst n: number = new HashRing(['c1']).lookup('k');\nexport { n };\n");
    expect(compile).toThrow();
  }, 60_000);
});
