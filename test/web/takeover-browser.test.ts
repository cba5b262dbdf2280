/**
 * The proof for the ring and the timeline, in a real browser against real processes:
 * `ironring up` (API, dashboard, conductor `aio`) and a second `ironring conductor` on the same
 * database. With the ring and timeline pages open, the second conductor is stopped: both pages show
 * it within 2 s, without a reload (their fragments refetched on the event stream). No console
 * errors; an axe scan of each of these pages finds nothing serious or critical. Screenshots of the
 * pages go to docs/dashboard/.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeScan, consoleErrors, launchBrowser } from '../helpers/browser.js';
import type { Browser, Page } from '../helpers/browser.js';
import { REPO_ROOT, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { startConductor, waitUntil } from '../helpers/conductors.js';
import { seedDeployedNodes, writeTestImages } from '../helpers/takeover.js';
import { openDatabase } from '../../src/db/connect.js';
import type { RunningConductor } from '../helpers/conductors.js';

const browser: Browser | null = await launchBrowser();
const SHOTS = path.join(REPO_ROOT, 'docs', 'dashboard');
const NODES = 24;

describe.skipIf(browser === null)('the ring and the timeline during a take-over, in a browser', () => {
  let dir: string;
  let up: CliProcess;
  let second: RunningConductor | null = null;
  let base = '';

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-takeover-ui-'));
    const env = { IRONRING_CONDUCTOR_HEARTBEAT_INTERVAL: '1', IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: '6', IRONRING_DHCP_PROXY_ENABLED: 'false', IRONRING_LOG_LEVEL: 'warn' };
    up = startCli(['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'], { cwd: dir, env });
    base = (await up.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
    const database = (await up.waitForOutput(/database: +(\S+)/))[1]!;
    // Deployed nodes (active, booting from the network): each conductor change moves boot state.
    const store = await openDatabase(database);
    try {
      await seedDeployedNodes(store, NODES, writeTestImages(path.join(dir, 'images')));
    } finally {
      await store.close();
    }
    // The same RPC secret as `up` (the API reads the second conductor's counters with it), and the
    // images where `up` finds them (under its data directory).
    const { IRONRING_LOG_LEVEL: _level, ...conductorEnv } = env;
    second = await startConductor(database, 'c2', {
      env: { ...conductorEnv, IRONRING_JSON_RPC_SECRET_FILE: path.join(dir, 'rpc-secret'), IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: path.join(dir, 'images') },
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    for (const p of [second?.proc, up]) {
      if (p && p.child.exitCode === null) p.child.kill('SIGKILL');
      await p?.exited;
    }
    if (process.env.KEEP_DIR) console.log('KEPT', dir); else rmSync(dir, { recursive: true, force: true });
  });

  /** Opens `url` and waits until its event stream is connected. */
  async function open(page: Page, url: string): Promise<void> {
    const stream = page.waitForResponse((res) => res.url().endsWith('/ui/events'));
    await page.goto(`${base}${url}`);
    await stream;
  }

  const rowOf = (page: Page, selector: string, host: string) => page.locator(`${selector} tr`).filter({ has: page.locator(`th:text-is("${host}")`) }).first();

  it('shows the stopped conductor on the ring and the timeline within 2 s, without a reload', async () => {
    const context = await browser!.newContext();
    const ring = await context.newPage();
    const timeline = await context.newPage();
    const errors = [...[ring, timeline].map((p) => consoleErrors(p))];
    // Every answer the pages got, so that a console "Failed to load resource" can be traced to its URL.
    const refused: string[] = [];
    for (const p of [ring, timeline]) p.on('response', (r) => void (r.status() >= 400 && refused.push(`${r.status()} ${new URL(r.url()).pathname}`)));
    await open(ring, '/ui/ring');
    await open(timeline, '/ui/timeline');
    // Both conductors on the ring, sharing the nodes.
    await waitUntil(async () => (await rowOf(ring, '#rings', 'c2').textContent())?.includes('alive') ?? false, 10_000, 'c2 alive on the ring page');
    expect(await rowOf(ring, '#rings', 'aio').textContent()).toContain('alive');
    await ring.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 1));
    await timeline.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 1));
    await ring.screenshot({ path: await shot('ring-two-conductors.png'), fullPage: true });
    // The what-if panel while both run: a bookmarkable question and its answer.
    const whatIf = await context.newPage();
    errors.push(consoleErrors(whatIf));
    expect((await whatIf.goto(`${base}/ui/ring?group=&add=c3&remove=c2`))?.status()).toBe(200);
    expect(await whatIf.locator('#whatif-answer').textContent()).toMatch(/\d+ of 24 nodes would change owner/);
    await whatIf.screenshot({ path: await shot('ring-what-if.png'), fullPage: true });
    await whatIf.close();

    second!.proc.child.kill('SIGTERM');
    const stopped = Date.now();
    const onRing = waitUntil(async () => (await rowOf(ring, '#rings', 'c2').textContent())?.includes('stopped') ?? false, 5_000, 'c2 stopped on the ring page');
    const onTimeline = waitUntil(async () => (await timeline.locator('#timeline tbody tr').first().textContent())?.includes('left') ?? false, 5_000, 'c2 left on the timeline');
    await Promise.all([onRing, onTimeline]);
    const elapsed = Date.now() - stopped;
    expect(elapsed).toBeLessThan(2000);
    expect(await timeline.locator('#timeline tbody tr').first().textContent()).toContain('c2');
    // The survivor owns every node now, and neither page was reloaded.
    await waitUntil(async () => (await rowOf(ring, '#rings', 'aio').textContent())?.includes(`${NODES}100.0 %`) ?? false, 5_000, 'aio owning every node');
    for (const p of [ring, timeline]) expect(await p.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(1);
    expect(await second!.proc.exited).toBe(0);

    // The passes after it reach the timeline too.
    // The survivor takes over c2's nodes: the timeline shows the passes after c2 left, the nodes they
    // took over (c2's share) and the time to converge.
    await waitUntil(async () => /c2\s*left\s*[1-9]\d*\s*[1-9]\d*\s*\d+(\.\d)? s/.test((await timeline.locator('#timeline tbody tr').first().textContent()) ?? ''), 10_000, 'passes after c2 left that took over its nodes and converged');
    await ring.screenshot({ path: await shot('ring.png'), fullPage: true });
    await timeline.screenshot({ path: await shot('timeline.png'), fullPage: true });
    await context.close();
    // Chromium asks for /favicon.ico by itself and the layout declares no icon yet (reported). That
    // request is not one of the page's (Playwright reports no event for it): with no refused request
    // of the page's own, the one "404" console line is it. Any other error fails.
    expect(refused).toEqual([]);
    const favicon = 'console: Failed to load resource: the server responded with a status of 404 (Not Found)';
    expect(errors.flat().filter((e) => e !== favicon).join('\n')).toBe('');
  }, 60_000);

  it('loads each of these pages without console errors or serious accessibility violations', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    const errors = consoleErrors(page);
    // axe runs as an inline script, which the pages' Content-Security-Policy (rightly) refuses.
    const scanContext = await browser!.newContext({ bypassCSP: true });
    const scanPage = await scanContext.newPage();
    const pages: Array<[string, string]> = [
      ['/ui/ring', 'ring.png'],
      ['/ui/ring?group=&add=c3%2C+c4&remove=aio', 'ring-what-if.png'],
      ['/ui/conductors', 'conductors.png'],
      ['/ui/timeline', 'timeline.png'],
      ['/ui/compute', 'compute.png'],
    ];
    for (const [url, file] of pages) {
      const res = await page.goto(`${base}${url}`);
      expect(res?.status(), url).toBe(200);
      if (file !== 'ring.png' && file !== 'timeline.png' && file !== 'ring-what-if.png') await page.screenshot({ path: await shot(file), fullPage: true });
      await scanPage.goto(`${base}${url}`);
      expect(await axeScan(scanPage), url).toEqual([]);
    }
    // Keyboard: the skip link comes first and leads to the content.
    await page.goto(`${base}/ui/ring`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string | null } | null } }).document.activeElement?.textContent)).toBe('Skip to content');
    const whatIf = await page.goto(`${base}/ui/ring?add=${encodeURIComponent('<b>')}`);
    expect(whatIf?.status()).toBe(400);
    await context.close();
    await scanContext.close();
    // The 400 page's document is an error by design; nothing else may be.
    expect(errors.filter((e) => !e.includes('400'))).toEqual([]);
  }, 60_000);
});

async function shot(file: string): Promise<string> {
  mkdirSync(SHOTS, { recursive: true });
  return path.join(SHOTS, file);
}
