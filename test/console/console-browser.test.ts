// The console page in real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core): an operator
// gives the token, filters to dead events, opens one, reads its error, replays it once the handler is fixed, and
// sees it done; then opens an event held for review by an effect step and has the step called again. Screenshots of
// the list and of the details go to test-output/.
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createPayhooks } from '../../src/payhooks.js';
import { beginStep } from '../../src/store/effect-steps.js';
import { getEvent } from '../../src/store/inbox.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { effectKey } from '../../src/worker/effects.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { putEvent } from '../helpers/inbox.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'Kc5Khp-5T-08sa41x3vuO2dG9liU0Spms9DJtMqv';
const SECRET = 'browser-secret';
const output = fileURLToPath(new URL('../../test-output/', import.meta.url));
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`CI needs Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does it)`);
if (!available) console.warn(`console browser test skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

describe.skipIf(!available)('the console page in headless Chromium', () => {
  it('token, filter to dead, open, read the error, replay after the fix, see it done; keyboard only for the token', {
    timeout: 120_000,
  }, async () => {
    let fixed = false;
    const hooks = createPayhooks({
      secret: SECRET,
      database: { dataDir: 'memory://' },
      logger: pino({ level: 'silent' }),
      worker: { pollIntervalMs: 50, maxAttempts: 1 },
    });
    hooks.on(
      'INVOICE_PAID',
      () => {
        if (!fixed) throw new DeadLetterError('ledger answered 422: account 4410 is closed');
      },
      { name: 'ledger' },
    );
    hooks.on('CUSTOMER_CREATED', () => undefined, { name: 'crm' });
    let notified = 0;
    hooks.on('INVOICE_CREATED', (_event, ctx) => ctx.effect('notify', () => void notified++, { idempotent: false }), { name: 'sms' });
    // An event whose step `notify` a dead process left started (stored before the worker starts): it is held for review.
    const store = await hooks.ready();
    await putEvent(store, exampleEvent('INVOICE_CREATED', { eventId: 'evt_browser_held' }));
    const receivedAt = (await getEvent(store, 'evt_browser_held'))!.receivedAt;
    const idempotencyKey = effectKey('default', 'evt_browser_held', 'sms', 'notify');
    await beginStep(store, {
      account: 'default',
      eventId: 'evt_browser_held',
      handler: 'sms',
      step: 'notify',
      receivedAt,
      idempotencyKey,
      idempotent: false,
      attempt: 1,
    });
    await hooks.start();
    const admin = hooks.admin({ token: TOKEN }).node();
    const webhooks = hooks.node();
    const server = await listen(createServer((req, res) => void (req.url?.startsWith('/admin') ? admin(req, res) : webhooks(req, res))));
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
      for (const [type, id] of [
        ['INVOICE_PAID', 'evt_browser_dead'],
        ['CUSTOMER_CREATED', 'evt_browser_ok'],
      ] as const) {
        const delivery = signedRequest(exampleEvent(type, { eventId: id }), { secret: SECRET });
        expect((await fetch(`${server.url}/webhooks`, delivery)).status).toBe(200);
      }
      await waitFor(async () => (await getEvent(await hooks.ready(), 'evt_browser_dead'))?.status === 'dead', 'the event dead', 20_000);

      const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(`${server.url}/admin`);
      // The token, typed and submitted with the keyboard.
      await page.locator('#token').focus();
      await page.keyboard.type(TOKEN);
      await page.keyboard.press('Enter');
      await page.locator('#events tr').first().waitFor();

      await page.selectOption('#filter-status', 'dead');
      await page.click('#apply');
      await expect.poll(() => page.locator('#events tr').count()).toBe(1);
      await expect.poll(() => page.locator('#events tr').first().getAttribute('data-event-id')).toBe('evt_browser_dead');
      mkdirSync(output, { recursive: true });
      await page.screenshot({ path: `${output}console-list.png`, fullPage: true });

      await page.click('#events tr button.link');
      await expect.poll(() => page.textContent('#detail-error')).toContain('ledger answered 422: account 4410 is closed');
      expect(await page.textContent('[data-fact="state"]')).toBe('dead');
      expect(await page.textContent('#detail-body')).toContain('"eventId": "evt_browser_dead"');
      await page.screenshot({ path: `${output}console-detail.png`, fullPage: true });

      fixed = true;
      page.once('dialog', (dialog) => void dialog.accept());
      await page.click('#replay');
      await expect.poll(() => page.textContent('[data-fact="state"]'), { timeout: 20_000 }).toBe('done');
      expect(await page.textContent('[data-fact="completed by"]')).toBe('ledger');
      expect((await getEvent(await hooks.ready(), 'evt_browser_dead'))?.status).toBe('done');

      // The event held by its effect step: the step's row offers the two answers; "Call again" calls it once.
      await waitFor(async () => (await getEvent(store, 'evt_browser_held'))?.status === 'needs-review', 'the event held', 20_000);
      await page.selectOption('#filter-status', 'needs-review');
      await page.click('#apply');
      await expect.poll(() => page.locator('#events tr').first().getAttribute('data-event-id')).toBe('evt_browser_held');
      await page.click('#events tr button.link');
      const step = page.locator('#detail-effects tr[data-step="notify"]');
      await expect.poll(() => step.getAttribute('data-state')).toBe('needs-review');
      expect(await step.textContent()).toContain('Its outcome is unknown');
      await page.screenshot({ path: `${output}console-effects.png`, fullPage: true });
      page.once('dialog', (dialog) => void dialog.accept());
      await step.locator('button[data-resolution="redo"]').click();
      await expect.poll(() => page.textContent('[data-fact="state"]'), { timeout: 20_000 }).toBe('done');
      await expect.poll(() => step.getAttribute('data-state')).toBe('completed');
      expect(await step.textContent()).toContain('resolved redo');
      expect(await step.locator('button').count()).toBe(0);
      expect(notified).toBe(1);

      // Nothing left the machine: every request the page made went to this server.
      expect(requests.every((url) => url.startsWith(server.url))).toBe(true);
      // The token stays in this tab's session storage, never in a cookie.
      expect(await page.context().cookies()).toEqual([]);
      expect(await page.evaluate("sessionStorage.getItem('payhooks-console-token')")).toBe(TOKEN);
    } finally {
      await browser.close();
      await server.close();
      await hooks.stop();
    }
  });
});
