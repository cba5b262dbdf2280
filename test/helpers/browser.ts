/**
 * A real browser for the dashboard's tests: Debian's chromium driven by playwright-core (no browser
 * download), an accessibility scan with axe-core, and a collector of console errors.
 *
 *   const browser = await launchBrowser();          // null (one printed line) when chromium is missing
 *   it.skipIf(browser === null)('…', async () => { const page = await browser!.newPage(); … });
 *
 * Under `CI=true` a missing chromium fails instead of skipping, as every peer does
 * (test/helpers/peers.ts).
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { findCommand, requirePeer } from './peers.js';

export type { Browser, Page };

/**
 * Launches headless chromium (`/usr/bin/chromium`, Debian's `chromium` package), or resolves to null
 * after printing one line saying why when it is missing outside CI. Close it in `afterAll`.
 */
export async function launchBrowser(): Promise<Browser | null> {
  if (!requirePeer('chromium', 'chromium')) return null;
  const executablePath = findCommand('chromium')!;
  // No sandbox: tests run as root in CI, where chromium's sandbox refuses to start.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
}

/**
 * Collects what `page` reports as errors from now on: `console.error` messages, uncaught page
 * exceptions and failed requests (a 404 script, an SSE stream that broke). Read the array at the
 * end of a test: `expect(errors).toEqual([])`.
 */
export function consoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const where = msg.location().url;
    errors.push(`console: ${msg.text()}${where ? ` (${where})` : ''}`);
  });
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('requestfailed', (req) => {
    const failure = req.failure()?.errorText ?? 'failed';
    // A stream or fetch cut short because the page navigated away is not an error of the page.
    if (failure.includes('ERR_ABORTED')) return;
    errors.push(`request failed: ${req.method()} ${req.url()}: ${failure}`);
  });
  return errors;
}

/** One accessibility problem axe-core found, with the elements it found it on. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  description: string;
  help: string;
  targets: string[];
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

/**
 * Runs axe-core (WCAG 2.x A and AA rules) on the page as it is now and returns the violations of
 * impact `serious` or `critical` (an empty array when there are none). Each carries the CSS
 * selectors of the offending elements so that a failed assertion says where to look.
 */
export async function axeScan(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  // Evaluated through the DevTools protocol rather than added as a <script>: the dashboard's
  // Content-Security-Policy (rightly) refuses inline scripts, and the scan must not weaken it.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    interface AxeResultNode { target: unknown[] }
    interface AxeResult { id: string; impact?: string | null; description: string; help: string; nodes: AxeResultNode[] }
    const axe = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: AxeResult[] }> } }).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      description: v.description,
      help: v.help,
      targets: v.nodes.map((n) => n.target.map(String).join(' ')),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
