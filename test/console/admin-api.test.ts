import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminApi, createAdminApi } from '../../src/console/admin-api.js';
import { maskPersonalData } from '../../src/console/mask.js';
import { bearerMatches } from '../../src/console/token.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const TOKEN = 'console-token-for-tests-0123456789abcdef';
const SECRET = 'admin-api-secret';
const auth = { authorization: `Bearer ${TOKEN}` };

/** Every route of the API, as the access checks must cover them. */
const ROUTES = [
  ['GET', '/admin/api/events'],
  ['GET', '/admin/api/events?status=dead'],
  ['GET', '/admin/api/events/evt_any'],
  ['POST', '/admin/api/events/evt_any/replay'],
  ['POST', '/admin/api/replay'],
  ['GET', '/admin/api/stats'],
] as const;

describe('console access, whatever the database', () => {
  const store = {} as PayhooksDatabase; // never reached: access is decided before the database is asked anything

  it.each(ROUTES)('off (no token): %s %s answers 404', async (method, url) => {
    const response = await createAdminApi({ store, token: undefined }).handle({ method, url, headers: auth });
    expect(response.status).toBe(404);
    expect(response.body).not.toMatch(/token|console|admin api/i);
  });

  it.each(ROUTES)(
    '%s %s without the token, with a wrong one, or with it outside a bearer header: 401 and nothing else',
    async (method, url) => {
      const api = createAdminApi({ store, token: TOKEN });
      for (const headers of [
        {},
        { authorization: 'Bearer wrong-token-of-the-same-kind-0123456789' },
        { authorization: `Bearer ${TOKEN}x` },
        { authorization: TOKEN },
        { cookie: `token=${TOKEN}` },
      ]) {
        const response = await api.handle({ method, url, headers, body: '{"status":"dead"}' });
        expect(response.status, JSON.stringify(headers)).toBe(401);
        expect(response.headers['www-authenticate']).toBe('Bearer realm="payhooks"');
        expect(JSON.parse(response.body)).toEqual({
          error: { message: 'Unauthorized: send the console token as Authorization: Bearer <PAYHOOKS_ADMIN_TOKEN>.' },
        });
      }
    },
  );

  it('refuses a weak token when it is made', () => {
    expect(() => createAdminApi({ store, token: 'short' })).toThrow(/too weak: it has 5 characters; use 32 or more/);
    expect(() => createAdminApi({ store, token: 'a'.repeat(40) })).toThrow(/repeats a few characters/);
  });

  it('bearerMatches takes the scheme in any case and nothing but the exact token', () => {
    expect(bearerMatches(`bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerMatches(`Bearer ${TOKEN.slice(0, -1)}`, TOKEN)).toBe(false);
    expect(bearerMatches(undefined, TOKEN)).toBe(false);
    expect(bearerMatches('Bearer ', '')).toBe(false);
  });

  it('masks emails and phone numbers in text, JSON or not, and leaves ids, amounts and dates alone', () => {
    const body =
      '{"email":"ana.lopez@example.com","phoneNumber":"+52 55 1234 5678","amount":250000,"createdAt":"2026-11-25T10:00:00Z","note":"cc luis@corp.mx"}';
    expect(maskPersonalData(body)).toBe(
      '{"email":"a***@***.com","phoneNumber":"**********78","amount":250000,"createdAt":"2026-11-25T10:00:00Z","note":"cc l***@***.mx"}',
    );
    expect(maskPersonalData('handler failed for ana@example.com')).toBe('handler failed for a***@***.com');
  });
});

describe.each(backends)('the console API on $name', (backend) => {
  let store: PayhooksDatabase;
  let hooks: Payhooks;
  let api: AdminApi;
  let handlerFixed = false;
  const call = async (method: string, url: string, body?: unknown) => {
    const response = await api.handle({ method, url, headers: auth, body: body === undefined ? '' : JSON.stringify(body) });
    return { status: response.status, body: JSON.parse(response.body) };
  };

  // Twelve events: INVOICE_PAID ones go dead until the handler is "fixed", one carries a customer's email and phone.
  beforeAll(async () => {
    if (!backend.available) return;
    store = await backend.open();
    hooks = createPayhooks({ secret: SECRET, database: store, logger: silent, worker: { pollIntervalMs: 20, maxAttempts: 1 } });
    hooks.on(
      'INVOICE_PAID',
      () => {
        if (!handlerFixed) throw new DeadLetterError('the ledger refused it');
      },
      { name: 'ledger' },
    );
    hooks.on(['CUSTOMER_CREATED', 'PAYMENT_COMPLETED'], () => undefined, { name: 'noop' });
    await hooks.start();
    for (let i = 0; i < 4; i += 1) {
      await hooks.receive(signedRequest(exampleEvent('INVOICE_PAID', { eventId: `evt_paid_${i}` }), { secret: SECRET }));
      await hooks.receive(signedRequest(exampleEvent('PAYMENT_COMPLETED', { eventId: `evt_done_${i}` }), { secret: SECRET }));
    }
    const customer = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_customer_pii' });
    const withPii = { ...customer, data: { ...customer.data, email: 'ana.lopez@example.com', phoneNumber: '+525512345678' } };
    for (let i = 0; i < 3; i += 1) await hooks.receive(signedRequest(withPii, { secret: SECRET }));
    await hooks.receive(signedRequest(exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_other_customer' }), { secret: SECRET }));
    await waitFor(async () => (await getEvent(store, 'evt_paid_3'))?.status === 'dead', 'the INVOICE_PAID events dead', 20_000);
    await waitFor(async () => (await getEvent(store, 'evt_other_customer'))?.status === 'done', 'the others done', 20_000);
    api = createAdminApi({ store, token: TOKEN, logger: silent });
  }, 60_000);
  afterAll(async () => {
    if (!backend.available) return;
    await hooks.stop();
    await dispose(store);
  });

  it.skipIf(!backend.available)('lists events newest first with filters, and pages through them with the cursor', async () => {
    const dead = await call('GET', '/admin/api/events?status=dead');
    expect(dead.status).toBe(200);
    expect(dead.body.events.map((e: { eventId: string }) => e.eventId)).toEqual(['evt_paid_3', 'evt_paid_2', 'evt_paid_1', 'evt_paid_0']);
    expect(dead.body.events[0]).toMatchObject({
      eventType: 'INVOICE_PAID',
      status: 'dead',
      attempts: 1,
      lastError: expect.stringContaining('the ledger refused it'),
    });
    expect(dead.body.nextCursor).toBeNull();

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { events: { eventId: string }[]; nextCursor: string | null } } = await call(
        'GET',
        `/admin/api/events?limit=4${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.body.events.length).toBeLessThanOrEqual(4);
      seen.push(...page.body.events.map((e) => e.eventId));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(10);
    expect(new Set(seen).size).toBe(10);

    expect((await call('GET', '/admin/api/events?id=evt_done_')).body.events).toHaveLength(4);
    expect((await call('GET', '/admin/api/events?type=CUSTOMER_CREATED&status=done')).body.events).toHaveLength(2);
    const resourceKey = dead.body.events[0].resourceKey;
    expect((await call('GET', `/admin/api/events?resource=${encodeURIComponent(resourceKey)}`)).body.events.length).toBeGreaterThan(0);
    expect((await call('GET', '/admin/api/events?id=evt_%25')).body.events).toEqual([]);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await call('GET', `/admin/api/events?from=${encodeURIComponent(future)}`)).body.events).toEqual([]);
    expect((await call('GET', `/admin/api/events?to=${encodeURIComponent(future)}`)).body.events).toHaveLength(10);
  });

  it.skipIf(!backend.available)('refuses bad filters with the reason, and unknown paths and methods', async () => {
    const bad = await call('GET', '/admin/api/events?status=lost&limit=0&colour=red');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^Invalid query: .*status.*limit.*colour/);
    expect((await call('GET', '/admin/api/nothing')).status).toBe(404);
    expect((await call('DELETE', '/admin/api/events')).status).toBe(405);
    expect((await call('GET', '/admin/api/events/evt_missing')).status).toBe(404);
    const notJson = await api.handle({ method: 'POST', url: '/admin/api/replay', headers: auth, body: 'status=dead' });
    expect(notJson.status).toBe(400);
    // The command line's route: only named operations, with arguments that fit them.
    expect((await call('POST', '/admin/api/inbox', { op: 'dropSchema', args: [] })).body.error.message).toBe(
      'Unknown operation "dropSchema".',
    );
    expect((await call('POST', '/admin/api/inbox', { op: 'getEvent', args: [42] })).status).toBe(400);
    expect((await call('POST', '/admin/api/inbox', null)).status).toBe(400);
    expect((await call('GET', '/admin/api/inbox')).status).toBe(405);
    expect((await call('POST', '/admin/api/inbox', { op: 'getEvent', args: ['evt_done_0'] })).body.result).toMatchObject({
      eventId: 'evt_done_0',
    });
  });

  it.skipIf(!backend.available)(
    'shows one event with its body, headers, deliveries and handlers; personal data masked unless revealed',
    async () => {
      const shown = await call('GET', '/admin/api/events/evt_customer_pii');
      expect(shown.status).toBe(200);
      expect(shown.body).toMatchObject({
        eventId: 'evt_customer_pii',
        status: 'done',
        deliveries: 3,
        completedHandlers: ['noop'],
        masked: true,
      });
      expect(shown.body.headers).toEqual(expect.any(Object));
      expect(shown.body.rawBody).not.toContain('ana.lopez@example.com');
      expect(shown.body.rawBody).not.toContain('5512345678');
      expect(shown.body.rawBody).toContain('"email":"a***@***.com"');
      const revealed = await call('GET', '/admin/api/events/evt_customer_pii?reveal=true');
      expect(revealed.body.masked).toBe(false);
      expect(revealed.body.rawBody).toBe((await getEvent(store, 'evt_customer_pii'))!.rawBody);
    },
  );

  it.skipIf(!backend.available)('replays one dead event, refuses one that is not finished, and replays a filtered set', async () => {
    handlerFixed = true;
    const one = await call('POST', '/admin/api/events/evt_paid_0/replay');
    expect(one).toEqual({ status: 200, body: { replayed: ['evt_paid_0'] } });
    await waitFor(async () => (await getEvent(store, 'evt_paid_0'))?.status === 'done', 'evt_paid_0 done after its replay', 20_000);
    expect((await call('POST', '/admin/api/events/evt_missing/replay')).status).toBe(404);

    expect((await call('POST', '/admin/api/replay', { status: 'dead', type: 'PAYMENT_COMPLETED' })).body).toEqual({
      replayed: 0,
      eventIds: [],
      left: 0,
    });
    const bulk = await call('POST', '/admin/api/replay', { status: 'dead', type: 'INVOICE_PAID' });
    expect(bulk.body.replayed).toBe(3);
    expect(bulk.body.eventIds.sort()).toEqual(['evt_paid_1', 'evt_paid_2', 'evt_paid_3']);
    await waitFor(async () => (await call('GET', '/admin/api/events?status=dead')).body.events.length === 0, 'no dead events left', 20_000);
    expect((await call('POST', '/admin/api/replay', { status: 'pending' })).status).toBe(400);
  });

  it.skipIf(!backend.available)('counts by status, activity by minute, and the oldest pending event', async () => {
    const stats = await call('GET', '/admin/api/stats?hours=1');
    expect(stats.status).toBe(200);
    expect(stats.body.byStatus).toMatchObject({ pending: expect.any(Number), dead: expect.any(Number), done: expect.any(Number) });
    const total = Object.values(stats.body.byStatus as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(total).toBe(10);
    const activity = stats.body.activity as { events: number; deliveries: number; failures: number }[];
    expect(activity.reduce((sum, minute) => sum + minute.events, 0)).toBe(10);
    expect(activity.reduce((sum, minute) => sum + minute.deliveries, 0)).toBe(12);
    expect(activity.reduce((sum, minute) => sum + minute.failures, 0)).toBeGreaterThanOrEqual(0);
    expect(stats.body.hours).toBe(1);
  });
});
