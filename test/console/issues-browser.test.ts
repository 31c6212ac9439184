// The console's issues view in real headless Chromium (Debian's /usr/bin/chromium through playwright-core, set up as
// console-browser.test.ts does): 500 events die under one broken handler and 3 under another; the view shows two
// issues with those counts; the operator opens the big one, acknowledges it, the handler is fixed, "replay affected"
// runs, every affected event ends done and the issue shows resolved. axe-core (injected from its npm package) checks
// the view, list and detail, for serious and critical violations. Screenshots go to test-output/.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createPayhooks } from '../../src/payhooks.js';
import { exampleEvent } from '../../src/testing/index.js';
import { putEvents, statuses } from '../helpers/inbox.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'Kc5Khp-5T-08sa41x3vuO2dG9liU0Spms9DJtMqv';
const output = fileURLToPath(new URL('../../test-output/', import.meta.url));
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`CI needs Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does it)`);
if (!available) console.warn(`issues browser test skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

interface AxeResults {
  violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
  passes: unknown[];
}

/**
 * axe-core run on `selector` of the page: the serious and critical violations, described. Injected through the
 * DevTools protocol (page.evaluate), which the page's Content-Security-Policy does not govern, so the page is checked
 * with its own policy on. Fails when axe checked nothing (a missing view would pass vacuously).
 */
async function seriousViolations(page: Page, selector: string): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe'))?.toString().includes('object')) await page.evaluate(AXE_SOURCE);
  const results = (await page.evaluate(
    `window.axe.run(document.querySelector(${JSON.stringify(selector)}), { resultTypes: ['violations', 'passes'] })`,
  )) as AxeResults;
  expect(results.passes.length).toBeGreaterThan(0);
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

describe.skipIf(!available)('the console issues view in headless Chromium', () => {
  it('two issues with their counts; open, acknowledge, fix, replay affected: all done, resolved; axe finds nothing serious', {
    timeout: 240_000,
  }, async () => {
    let fixed = false;
    const hooks = createPayhooks({
      secret: 'issues-browser-secret',
      database: { dataDir: 'memory://' },
      logger: pino({ level: 'silent' }),
      worker: { pollIntervalMs: 50, maxAttempts: 1 },
    });
    hooks.on(
      'INVOICE_PAID',
      () => {
        if (!fixed) throw new RangeError('ledger: amount out of range for account 4410');
      },
      { name: 'ledger' },
    );
    hooks.on(
      'CUSTOMER_CREATED',
      () => {
        throw new TypeError('crm: cannot read properties of undefined');
      },
      { name: 'crm' },
    );
    const store = await hooks.ready();
    await putEvents(store, [
      ...Array.from({ length: 500 }, (_, i) => withOwnResource(exampleEvent('INVOICE_PAID', { eventId: `evt_big_${i}` }), `b${i}`)),
      ...Array.from({ length: 3 }, (_, i) => withOwnResource(exampleEvent('CUSTOMER_CREATED', { eventId: `evt_small_${i}` }), `s${i}`)),
    ]);
    await hooks.start();
    await waitFor(
      async () => {
        const all = Object.values(await statuses(store));
        return all.length === 503 && all.every((s) => s === 'dead');
      },
      'all 503 events dead',
      120_000,
    );
    const admin = hooks.admin({ token: TOKEN }).node();
    const server = await listen(createServer((req, res) => void admin(req, res)));
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-background-networking',
        '--disable-gpu',
        '--no-first-run',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(`${server.url}/admin`);
      await page.locator('#token').focus();
      await page.keyboard.type(TOKEN);
      await page.keyboard.press('Enter');

      // The list: two issues, with the counts of their events.
      const rows = page.locator('#issues-rows tr');
      await expect.poll(() => rows.count(), { timeout: 20_000 }).toBe(2);
      const big = page.locator('#issues-rows tr[data-handler="ledger"]');
      const small = page.locator('#issues-rows tr[data-handler="crm"]');
      expect(await big.locator('[data-col="affected"]').textContent()).toBe('500');
      expect(await big.locator('[data-col="failures"]').textContent()).toBe('500');
      expect(await small.locator('[data-col="affected"]').textContent()).toBe('3');
      expect(await big.textContent()).toContain('handler ledger: RangeError on INVOICE_PAID');
      expect(await small.textContent()).toContain('handler crm: TypeError on CUSTOMER_CREATED');
      mkdirSync(output, { recursive: true });
      await page.screenshot({ path: `${output}issues-list.png`, fullPage: true });
      expect(await seriousViolations(page, '#issues')).toEqual([]);

      // The nav link reaches the view from the keyboard.
      await page.locator('#nav a[href="#issues"]').focus();
      await page.keyboard.press('Enter');
      expect(page.url()).toMatch(/#issues$/);

      // Open the big one (keyboard: focus its button, Enter), acknowledge it.
      await big.locator('button.issue-link').focus();
      await page.keyboard.press('Enter');
      const fact = (name: string) => page.locator(`[data-issue-fact="${name}"]`).textContent();
      await expect.poll(() => fact('state')).toBe('open');
      expect(await page.evaluate('document.activeElement.id')).toBe('issue-title');
      expect(await fact('affected events')).toBe('500');
      expect(await page.textContent('#issue-error')).toContain('ledger: amount out of range for account 4410');
      expect(await page.locator('#issue-events tr').count()).toBe(50);
      await page.click('#issue-acknowledge');
      await expect.poll(() => fact('state')).toBe('acknowledged');
      expect(await page.locator('#issue-acknowledge').isDisabled()).toBe(true);
      await page.screenshot({ path: `${output}issues-detail.png`, fullPage: true });
      expect(await seriousViolations(page, '#issues')).toEqual([]);

      // The handler is fixed; "replay affected" (after its confirmation, which names the count) re-queues the 500.
      fixed = true;
      let question = '';
      page.once('dialog', (dialog) => {
        question = dialog.message();
        void dialog.accept();
      });
      await page.click('#issue-replay');
      await expect.poll(() => page.textContent('#issues-notice'), { timeout: 20_000 }).toContain('500 events of issue');
      expect(question).toContain('Replay the 500 affected events');
      await expect.poll(() => fact('not done'), { timeout: 120_000 }).toBe('0');
      expect(await fact('state')).toBe('resolved');
      const after = await statuses(store);
      expect(Array.from({ length: 500 }, (_, i) => after[`evt_big_${i}`]).every((s) => s === 'done')).toBe(true);
      expect(Array.from({ length: 3 }, (_, i) => after[`evt_small_${i}`])).toEqual(['dead', 'dead', 'dead']);
      await page.selectOption('#issues-state', '');
      await page.click('#issues-apply');
      await expect.poll(() => big.getAttribute('data-state')).toBe('resolved');
      expect(await small.getAttribute('data-state')).toBe('open');
      await page.screenshot({ path: `${output}issues-resolved.png`, fullPage: true });
      expect(await seriousViolations(page, '#issues')).toEqual([]);

      expect(requests.every((url) => url.startsWith(server.url))).toBe(true);
    } finally {
      await browser.close();
      await server.close();
      await hooks.stop();
    }
  });
});
