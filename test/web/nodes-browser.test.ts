/**
 * The nodes pages in a real browser (Debian's chromium) against a real `ironring up`: pages load
 * without console errors, a fake-hardware node goes manage → provide → deploy by clicking, each
 * state arriving by SSE without a reload, a refusal shows inline, axe finds nothing serious, and the
 * keyboard reaches the navigation and the actions with a visible focus. With IRONRING_SCREENSHOTS=1
 * it also writes docs/dashboard/*.png.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeScan, consoleErrors, launchBrowser } from '../helpers/browser.js';
import type { Browser, Page } from '../helpers/browser.js';
import { REPO_ROOT, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';

const browser: Browser | null = await launchBrowser();
const SHOTS = process.env.IRONRING_SCREENSHOTS === '1' ? path.join(REPO_ROOT, 'docs', 'dashboard') : null;
const LATEST = { 'x-openstack-ironic-api-version': 'latest', 'content-type': 'application/json' };

describe.skipIf(browser === null)('the nodes pages in a browser', () => {
  let dir: string;
  let up: CliProcess;
  let base: string;
  let uuid: string;

  async function api(method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${base}${url}`, { method, headers: LATEST, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  async function shot(page: Page, name: string): Promise<void> {
    if (SHOTS === null) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-web-'));
    up = startCli(['up', '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio', '--data-dir', dir], { cwd: dir });
    base = (await up.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
    const made = await api('POST', '/v1/nodes', { driver: 'fake-hardware', name: 'web-1', resource_class: 'baremetal' });
    uuid = made.uuid as string;
    await api('POST', '/v1/ports', { address: '52:54:00:12:34:56', node_uuid: uuid });
    // Company for the list (and its screenshot): a few nodes in other states.
    for (let i = 2; i <= 9; i++) {
      const n = await api('POST', '/v1/nodes', { driver: 'fake-hardware', name: `web-${i}`, owner: i % 3 === 0 ? 'project-a' : null });
      if (i % 2 === 0) await api('PUT', `/v1/nodes/${n.uuid as string}/states/provision`, { target: 'manage' });
      if (i === 5) await api('PUT', `/v1/nodes/${n.uuid as string}/maintenance`, { reason: 'fan failure in slot 2' });
    }
  });
  afterAll(async () => {
    await browser?.close();
    if (up?.child.exitCode === null) up.child.kill('SIGTERM');
    await up?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the nodes list with no console error and no serious accessibility violation', async () => {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 720 } });
    const errors = consoleErrors(page);
    await page.goto(`${base}/ui/nodes`);
    await expect.poll(() => page.locator('tbody tr').count()).toBe(9);
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Nodes');
    expect(await axeScan(page)).toEqual([]);
    // Filters go into the URL (bookmarkable).
    await page.selectOption('select[name="provision_state"]', 'manageable');
    await page.click('form.filters button[type="submit"]');
    await page.waitForURL(/provision_state=manageable/);
    expect(await page.locator('tbody tr').count()).toBe(4);
    await page.goto(`${base}/ui/nodes`);
    await shot(page, 'nodes');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('runs a node through manage → provide → deploy from the UI, each state arriving by SSE without a reload', async () => {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = consoleErrors(page);
    const state = page.getByTestId('provision-state');
    // The state alone (`● manageable`), not on its way (`verifying → manageable`).
    const settled = (name: string) => new RegExp(`^\\W*${name}\\s*$`);
    const stateText = async () => ((await state.textContent()) ?? '').trim();
    await page.goto(`${base}/ui/nodes/${uuid}`);
    expect(await state.textContent()).toContain('enroll');
    expect(await axeScan(page)).toEqual([]);
    // A mark on the window: it survives only if the page is never reloaded.
    await page.evaluate(() => ((globalThis as unknown as { mark: number }).mark = 42));
    const marked = () => page.evaluate(() => (globalThis as unknown as { mark?: number }).mark);

    await page.getByRole('button', { name: 'Manage', exact: true }).click();
    await expect.poll(stateText, { timeout: 10_000 }).toMatch(settled('manageable'));
    expect(await page.locator('#action-result').textContent()).toContain('accepted by the API');
    expect(await marked()).toBe(42);

    // Provide asks first (it may clean disks): a confirmation page, then back to the node.
    await page.getByRole('button', { name: 'Provide…' }).click();
    await page.waitForURL(/\/actions\/provide/);
    expect(await page.getByRole('alert').textContent()).toContain('erasing its disks');
    expect(await axeScan(page)).toEqual([]);
    await shot(page, 'confirm');
    await page.getByRole('button', { name: 'Yes, provide' }).click();
    await page.waitForURL(new RegExp(`/ui/nodes/${uuid}\\?done=provide`));
    await expect.poll(stateText, { timeout: 10_000 }).toMatch(settled('available'));

    await page.evaluate(() => ((globalThis as unknown as { mark: number }).mark = 43));
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await expect.poll(stateText, { timeout: 15_000 }).toMatch(settled('active'));
    expect(await marked()).toBe(43);
    await shot(page, 'node');

    // The API refuses managing an active node: its own message, inline, as an alert.
    await page.getByRole('button', { name: 'Manage', exact: true }).click();
    const alert = page.locator('#action-result [role="alert"]');
    await expect.poll(() => alert.textContent(), { timeout: 5000 }).toMatch(/^Manage: .*active/);
    expect(await marked()).toBe(43);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('lets the keyboard reach the navigation and the actions, with a visible focus', async () => {
    const page = await browser!.newPage();
    await page.goto(`${base}/ui/nodes/${uuid}`);
    const focused = () =>
      page.evaluate(() => {
        const doc = (globalThis as unknown as { document: { activeElement: { tagName: string; textContent: string | null; closest(s: string): unknown } | null } }).document;
        const el = doc.activeElement!;
        const style = (globalThis as unknown as { getComputedStyle(e: unknown): { outlineStyle: string; outlineWidth: string } }).getComputedStyle(el);
        return { tag: el.tagName, text: (el.textContent ?? '').trim(), inNav: el.closest('header nav') !== null, outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0 };
      });
    await page.keyboard.press('Tab');
    expect(await focused()).toMatchObject({ text: 'Skip to content', outline: true });
    await page.keyboard.press('Tab');
    expect(await focused()).toMatchObject({ inNav: true, outline: true });
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await page.keyboard.press('Tab');
      const f = await focused();
      if (f.tag === 'BUTTON' && f.text === 'Manage') {
        expect(f.outline).toBe(true);
        reached = true;
      }
    }
    expect(reached).toBe(true);
    await page.close();
  });
});
