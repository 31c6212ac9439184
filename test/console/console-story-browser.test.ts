// The console's operator day in real headless Chromium (issue 50): the keyboard alone walks from the list to an
// event's detail (beside the list) to its resource's story, with visible focus; axe-core finds no serious or critical
// violation in the list, the detail or the story; the search box finds an event by the id its sender gave it; a replay
// of a time window and a handler shows its count first and re-queues exactly those events. Screenshots go to
// test-output/.
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { chromium, type Page } from 'playwright-core';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createPayhooks } from '../../src/payhooks.js';
import { getEvent } from '../../src/store/inbox.js';
import { migrateMirror } from '../../src/store/migrate.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'Kc5Khp-5T-08sa41x3vuO2dG9liU0Spms9DJtMqv';
const SECRET = 'browser-secret';
const MIRROR = 'payhooks_mirror';
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const output = fileURLToPath(new URL('../../test-output/', import.meta.url));
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`CI needs Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does it)`);
if (!available) console.warn(`console story browser test skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

/** axe-core's serious and critical violations of the page as it is now; fails if axe checked next to nothing. */
async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.addScriptTag({ path: AXE });
  // A string, evaluated in the page (the tests are typed without the DOM's types).
  const result = (await page.evaluate(`axe.run(document).then((r) => ({
    passes: r.passes.length,
    violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target) })),
  }))`)) as { passes: number; violations: { id: string; impact: string | null; help: string; targets: unknown[] }[] };
  // A run that passed nothing checked nothing.
  expect(result.passes).toBeGreaterThan(10);
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id} (${v.help}): ${JSON.stringify(v.targets)}`);
}

/** Presses Tab until the element with `id` has the focus (at most `limit` times); fails if it never does. */
async function tabTo(page: Page, id: string, limit = 80): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    if ((await page.evaluate('document.activeElement && document.activeElement.id')) === id) return;
  }
  throw new Error(`Tab never reached #${id}`);
}

/** Presses Tab until the focused element is the list's button of `eventId`. */
async function tabToEvent(page: Page, eventId: string, limit = 80): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate('document.activeElement && document.activeElement.closest("#events tr")?.dataset.eventId');
    if (focused === eventId) return;
  }
  throw new Error(`Tab never reached the list's row of ${eventId}`);
}

/** The focus is drawn: the focused element has an outline. */
async function focusVisible(page: Page): Promise<boolean> {
  return (await page.evaluate(`(() => {
    const focused = document.activeElement;
    if (!focused || focused === document.body) return false;
    const style = getComputedStyle(focused);
    return style.outlineStyle !== 'none' && Number.parseFloat(style.outlineWidth) >= 2;
  })()`)) as boolean;
}

/** A local time as a datetime-local input holds it. */
function localInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

describe.skipIf(!available)('the console: list, detail, story, search and replay by selection, keyboard only and checked by axe', () => {
  it('walks list → detail → story by keyboard, finds by the sender id, and replays a window for one handler', {
    timeout: 180_000,
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
    hooks.on(
      ['CUSTOMER_CREATED', 'CUSTOMER_UPDATED'],
      (event) => {
        if (event.eventType === 'CUSTOMER_UPDATED') throw new DeadLetterError('crm answered 409: contact locked');
      },
      { name: 'crm' },
    );
    const store = await hooks.ready();
    await migrateMirror(store, MIRROR);
    await sql`insert into ${sql.id(MIRROR, 'customers')} (id, name, email, data, source, state_at, state_rank, state_hash, last_event_id)
              values ('cus_story', 'Ada Story', 'ada@example.com', '{"id":"cus_story"}', 'api', now(), 1, 'h1', 'evt_cus_created')`.execute(
      store.db,
    );
    await hooks.start();
    const admin = hooks.admin({ token: TOKEN, mirrorSchema: MIRROR }).node();
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
      const deliveries: [object, string][] = [
        [exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_cus_created', data: { id: 'cus_story' } }), 'whevt_created'],
        [exampleEvent('CUSTOMER_UPDATED', { eventId: 'evt_cus_updated', data: { id: 'cus_story' } }), 'whevt_updated'],
        ...[1, 2, 3].map((n): [object, string] => [
          exampleEvent('INVOICE_PAID', { eventId: `evt_inv_${n}`, data: { invoiceId: `inv_${n}` } }),
          `whevt_inv_${n}`,
        ]),
      ];
      for (const [event, senderId] of deliveries) {
        const delivery = signedRequest(event, { secret: SECRET });
        const headers = { ...delivery.headers, 'x-webhook-event-id': senderId };
        expect((await fetch(`${server.url}/webhooks`, { ...delivery, headers })).status).toBe(200);
      }
      const dead = ['evt_cus_updated', 'evt_inv_1', 'evt_inv_2', 'evt_inv_3'];
      await waitFor(
        async () => (await Promise.all(dead.map((id) => getEvent(store, id)))).every((e) => e?.status === 'dead'),
        'the failing events dead',
        30_000,
      );
      await waitFor(async () => (await getEvent(store, 'evt_cus_created'))?.status === 'done', 'the created event done', 30_000);

      const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, bypassCSP: true });
      const page = await context.newPage();
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(`${server.url}/admin`);
      await page.locator('#token').focus();
      await page.keyboard.type(TOKEN);
      await page.keyboard.press('Enter');
      await expect.poll(() => page.locator('#events tr').count(), { timeout: 20_000 }).toBe(5);
      mkdirSync(output, { recursive: true });

      // The chart has labelled axes with units.
      const chart = (await page.textContent('#chart')) ?? '';
      expect(chart).toContain('deliveries / minute');
      expect(chart).toContain('time received (local, minute by minute)');
      expect(await page.locator('#chart text.tick').count()).toBeGreaterThanOrEqual(6);

      // The list: no serious or critical violation.
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: `${output}console-story-list.png`, fullPage: true });

      // Keyboard only: from the search box, Tab to the dead customer update in the list, Enter opens its detail.
      await page.locator('#search-id').focus();
      await tabToEvent(page, 'evt_cus_updated');
      expect(await focusVisible(page)).toBe(true);
      await page.keyboard.press('Enter');
      await expect.poll(() => page.evaluate('document.activeElement.id')).toBe('detail-title');
      await expect.poll(() => page.textContent('#detail-error')).toContain('crm answered 409: contact locked');
      expect(await page.textContent('[data-fact="resource"]')).toBe('customer:cus_story');
      // Beside the list, not below it: side by side, their tops level.
      const list = (await page.locator('.workspace .list').boundingBox())!;
      const detail = (await page.locator('#detail').boundingBox())!;
      expect(detail.x).toBeGreaterThanOrEqual(list.x + list.width);
      expect(Math.abs(detail.y - list.y)).toBeLessThan(40);
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: `${output}console-story-detail.png`, fullPage: true });

      // On to its resource's story, still by keyboard.
      await tabTo(page, 'story-open');
      expect(await focusVisible(page)).toBe(true);
      await page.keyboard.press('Enter');
      await expect.poll(() => page.evaluate('document.activeElement.id')).toBe('story-title');
      expect(await page.textContent('#story-title')).toBe('Story of customer:cus_story');
      const told = await page.locator('#story-events > li').evaluateAll((items) => items.map((li) => li.getAttribute('data-event-id')));
      expect(told).toEqual(['evt_cus_created', 'evt_cus_updated']);
      expect(await page.locator('#story-events > li[data-event-id="evt_cus_updated"] li[data-outcome="failed"]').textContent()).toContain(
        'crm answered 409',
      );
      expect(await page.locator('#story-events > li[data-event-id="evt_cus_created"] li[data-outcome="completed"]').count()).toBe(1);
      const mirror = (await page.textContent('#story-mirror')) ?? '';
      expect(mirror).toContain('"name": "Ada Story"');
      // Masked until revealed.
      expect(mirror).toContain('a***@***.com');
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: `${output}console-story.png`, fullPage: true });

      // The search box finds an event by the id its sender gave the delivery.
      await page.fill('#search-id', 'whevt_inv_2');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.textContent('#detail-title')).toBe('INVOICE_PAID evt_inv_2');
      expect(await page.textContent('#search-result')).toContain("sender's x-webhook-event-id of event evt_inv_2");

      // Replay by selection: the time range around now and the handler ledger: the count first (3, not the crm one).
      await page.fill('#filter-from', localInput(new Date(Date.now() - 10 * 60_000)));
      await page.fill('#filter-to', localInput(new Date(Date.now() + 10 * 60_000)));
      await page.click('#apply');
      await page.click('#bulk summary');
      await page.fill('#bulk-handler', 'ledger');
      await page.click('#bulk-count');
      await expect.poll(() => page.textContent('#bulk-result')).toContain('3 events would be re-queued');
      expect(await page.textContent('#bulk-run')).toBe('Replay 3 events…');
      fixed = true;
      page.once('dialog', (dialog) => void dialog.accept());
      await page.click('#bulk-run');
      await expect.poll(() => page.textContent('#bulk-result')).toBe('3 events re-queued');
      await waitFor(
        async () =>
          (await Promise.all(['evt_inv_1', 'evt_inv_2', 'evt_inv_3'].map((id) => getEvent(store, id)))).every((e) => e?.status === 'done'),
        'the replayed events done',
        30_000,
      );
      expect((await getEvent(store, 'evt_cus_updated'))?.status).toBe('dead');
      await page.screenshot({ path: `${output}console-story-replayed.png`, fullPage: true });

      expect(requests.every((url) => url.startsWith(server.url))).toBe(true);
    } finally {
      await browser.close();
      await server.close();
      await hooks.stop();
    }
  });
});
