import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminApi, createAdminApi } from '../../src/console/admin-api.js';
import { maskPersonalData } from '../../src/console/mask.js';
import { adminTokenWeakness, bearerMatches } from '../../src/console/token.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
// Random (a made-up one with words and runs is refused as too weak).
const TOKEN = 'qWBBZ-x2YH9DAMO8mkalHSbgtAsdXqHKKnNDfmzh';
const SECRET = 'admin-api-secret';
const auth = { authorization: `Bearer ${TOKEN}` };
const LOCAL_TOKEN = 'Lm0cQ3n-7Rk2VwP9xZe4TbY1uHs8JdF6gAo5CiN';
const localAuth = { authorization: `Bearer ${LOCAL_TOKEN}` };

/** Every route of the API, as the access checks must cover them. */
const ROUTES = [
  ['GET', '/admin/api/events'],
  ['GET', '/admin/api/events?status=dead'],
  ['GET', '/admin/api/events/evt_any'],
  ['POST', '/admin/api/events/evt_any/replay'],
  ['POST', '/admin/api/replay'],
  ['GET', '/admin/api/stats'],
  ['GET', '/admin/api/quarantine'],
  ['GET', '/admin/api/quarantine/1'],
  ['POST', '/admin/api/quarantine/1/release'],
  ['POST', '/admin/api/quarantine/1/discard'],
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

  it('refuses a weak token when it is made, saying why without quoting it', () => {
    expect(() => createAdminApi({ store, token: 'short' })).toThrow(/too weak: it has 5 characters; use 32 or more/);
    expect(() => createAdminApi({ store, token: 'a'.repeat(40) })).toThrow(/repeats a few characters/);
    const weak: [string, RegExp][] = [
      ['changeme-changeme-changeme-changeme', /repeats a few characters \(one short part over and over\)/],
      ['abcabcabcabcabcabcabcabcabcabcabcab', /repeats a few characters/],
      ['passwordpasswordpasswordpassword1', /common words, runs \(abcd, 1234\) or repeated parts, about \d+ bits where 100/],
      ['admin-secret-token-payhooks-webhook-2026', /common words/],
      ['console-token-for-tests-0123456789abcdef', /common words/],
      ['abcdefghijklmnopqrstuvwxyz0123456789', /common words/],
      ['qwertyuiopasdfghjklzxcvbnm1234567890', /common words/],
      ['Changeme!Secret!Changeme!Secret!Token!', /common words/],
    ];
    const uncarriable = [
      'qWBBZ-x2YH9DAMO8mkalHSb gtAsdXqHKKnNDfmzh',
      'qWBBZ-x2YH9DAMO8mkalHSb\tgtAsdXqHKKnNDfmzh',
      'qWBBZ-x2YH9DAMO8mkalHSbgtAsdXqHKKnNDfmzh\n',
      'qWBBZ-x2YH9DAMO8mkalHSbgtAsdXqHKKnNDfmzhé',
      '\u0000qWBBZ-x2YH9DAMO8mkalHSbgtAsdXqHKKnNDfmzh',
    ];
    for (const [token, reason] of [...weak, ...uncarriable.map((t): [string, RegExp] => [t, /an Authorization header cannot carry/])]) {
      let message = '';
      try {
        createAdminApi({ store, token });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, JSON.stringify(token)).toMatch(reason);
      expect(message).not.toContain(token.trim());
    }
    // What a generator makes always passes.
    for (let i = 0; i < 200; i += 1) {
      for (const token of [
        randomBytes(32).toString('base64'),
        randomBytes(16).toString('hex'),
        randomUUID(),
        randomBytes(24).toString('base64url'),
      ])
        expect(adminTokenWeakness(token), token).toBeNull();
    }
  });

  it('asks an adapter for the body only once the token is checked, and only on a route that takes one', async () => {
    const api = createAdminApi({ store, token: TOKEN });
    let reads = 0;
    const body = async () => {
      reads += 1;
      return { bytes: Buffer.from('{"status":"dead"}') };
    };
    // An address per request: repeated wrong tokens from one address are slowed on purpose (the next test), which
    // is not what this one is about.
    let requests = 0;
    for (const [method, url] of ROUTES) {
      for (const headers of [{}, { authorization: 'Bearer wrong-token' }]) {
        requests += 1;
        const clientAddress = `198.51.${Math.floor(requests / 250)}.${requests % 250}`;
        expect((await api.handle({ method, url, headers, body, clientAddress })).status).toBe(401);
      }
      expect((await createAdminApi({ store, token: undefined }).handle({ method, url, headers: auth, body })).status).toBe(404);
    }
    expect(reads).toBe(0);
    // Let in, a body that could not be read is answered as the reader says (a 413 here), before the database.
    const tooLarge = await api.handle({
      method: 'POST',
      url: '/admin/api/replay',
      headers: auth,
      body: async () => ({ refusal: { status: 413, headers: { connection: 'close' }, body: '{"error":{"message":"too large"}}' } }),
    });
    expect(tooLarge).toMatchObject({ status: 413, headers: { connection: 'close' } });
  });

  it('answers the Nth wrong token from one address no sooner than the delay for N, and never delays the right one', async () => {
    const api = createAdminApi({ store, token: TOKEN });
    const wrong = { authorization: 'Bearer not-the-token-qWBBZ-x2YH9DAMO8mkal' };
    const timed = async (headers: Record<string, string>, clientAddress: string) => {
      const started = performance.now();
      const { status } = await api.handle({ method: 'GET', url: '/admin/api/nothing-here', headers, clientAddress });
      return { status, ms: performance.now() - started };
    };
    const answers = [];
    for (let i = 0; i < 6; i += 1) answers.push(await timed(wrong, '203.0.113.7'));
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 401]);
    // 3 free, then 250, 500, 1000 ms (FAILURE_THROTTLE_DEFAULTS): requirement bounds, not a speed measurement.
    expect(answers[3]!.ms).toBeGreaterThanOrEqual(245);
    expect(answers[4]!.ms).toBeGreaterThanOrEqual(495);
    expect(answers[5]!.ms).toBeGreaterThanOrEqual(995);
    // The right token is let in (404: there is no such route), whatever the address's record.
    expect((await timed(auth, '203.0.113.7')).status).toBe(404);
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
  let withLocal: AdminApi;
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
    withLocal = createAdminApi({ store, token: TOKEN, localToken: LOCAL_TOKEN, logger: silent });
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
  });

  it.skipIf(!backend.available)(
    "the session token opens the command line's routes, from loopback only, with the console on or off",
    async () => {
      const asCli = (method: string, url: string, clientAddress = '127.0.0.1', body?: string, headers = localAuth) =>
        withLocal.handle({ method, url, headers, body, clientAddress }).then((response) => response.status);
      const dryRun = '{"status":"dead","type":"PAYMENT_COMPLETED","dryRun":true}';
      expect(await asCli('GET', '/admin/api/events?limit=2')).toBe(200);
      expect(await asCli('GET', '/admin/api/events/evt_done_0', '::1')).toBe(200);
      expect(await asCli('GET', '/admin/api/stats', '::ffff:127.0.0.1')).toBe(200);
      expect(await asCli('POST', '/admin/api/replay', '127.0.0.1', dryRun)).toBe(200);
      // Nothing else: not the one-event replay (the command line replays through /admin/api/replay), no other path.
      // An address each, so that these refusals are not slowed as a guesser's would be.
      expect(await asCli('POST', '/admin/api/events/evt_done_0/replay', '::1')).toBe(401);
      expect(await asCli('DELETE', '/admin/api/events', '::ffff:127.0.0.1')).toBe(401);
      // Not from another machine, nor from an address the adapter does not know (Fetch).
      for (const [i, [method, url]] of ROUTES.entries()) {
        const status = await withLocal.handle({ method, url, headers: localAuth, body: dryRun, clientAddress: `192.0.2.${i}` });
        expect(status.status, `${method} ${url} from 192.0.2.${i}`).toBe(401);
      }
      expect((await withLocal.handle({ method: 'GET', url: '/admin/api/events', headers: localAuth })).status).toBe(401);

      // With the console off, the session token opens the same routes, and every other request gets a 404.
      const consoleOff = createAdminApi({ store, token: undefined, localToken: LOCAL_TOKEN });
      const offStatus = (method: string, url: string, clientAddress: string, headers = localAuth) =>
        consoleOff.handle({ method, url, headers, clientAddress, body: dryRun }).then((response) => response.status);
      expect(await offStatus('GET', '/admin/api/events', '127.0.0.1')).toBe(200);
      expect(await offStatus('POST', '/admin/api/replay', '::1')).toBe(200);
      expect(await offStatus('GET', '/admin/api/events', '192.0.2.9')).toBe(404);
      expect(await offStatus('GET', '/admin/api/events', '127.0.0.1', auth)).toBe(404);
      expect(await offStatus('POST', '/admin/api/events/evt_done_0/replay', '127.0.0.1')).toBe(404);
      expect(await offStatus('GET', '/admin', '127.0.0.1')).toBe(404);
      expect(await offStatus('POST', '/admin/api/inbox', '127.0.0.1')).toBe(404);
    },
  );

  it.skipIf(!backend.available)('reveals on request only, list or event, and logs by which token', async () => {
    const lines: { msg: string; count?: number; eventId?: string; via?: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const logged = createAdminApi({ store, token: TOKEN, localToken: LOCAL_TOKEN, logger });
    const list = async (query: string, headers = auth) =>
      JSON.parse((await logged.handle({ method: 'GET', url: `/admin/api/events?${query}`, headers, clientAddress: '127.0.0.1' })).body);
    const masked = await list('id=evt_paid_&status=dead');
    expect(masked.masked).toBe(true);
    expect(lines).toEqual([]);
    const revealed = await list('id=evt_paid_&status=dead&reveal=true', localAuth);
    expect(revealed.masked).toBe(false);
    expect(revealed.events.map((e: { eventId: string }) => e.eventId)).toEqual(masked.events.map((e: { eventId: string }) => e.eventId));
    expect(revealed.events[0].lastError).toBe((await getEvent(store, revealed.events[0].eventId))!.lastError);
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'console: personal data of a page of events revealed', count: 4, via: 'session token' }),
    ]);
    await logged.handle({ method: 'GET', url: '/admin/api/events/evt_customer_pii?reveal=true', headers: auth });
    expect(lines[1]).toMatchObject({
      msg: 'console: personal data of an event revealed',
      eventId: 'evt_customer_pii',
      via: 'console token',
    });
  });

  it.skipIf(!backend.available)('previews a replay, and replays named events or a state in batches, in order of arrival', async () => {
    const replay = (body: unknown) => call('POST', '/admin/api/replay', body);
    const ids = ['evt_done_3', 'evt_done_1', 'evt_missing', 'evt_done_2'];
    // The set-up waits for others; these may still be on their way to done on a busy machine.
    for (const eventId of ids.filter((id) => id !== 'evt_missing'))
      await waitFor(async () => (await getEvent(store, eventId))?.status === 'done', `${eventId} done`, 20_000);
    const preview = await replay({ eventIds: ids, dryRun: true, sample: 2 });
    expect(preview.body).toEqual({
      count: 3,
      sample: ['evt_done_1', 'evt_done_2'],
      through: expect.stringMatching(/^\d+$/),
      // These handlers call no effect step: nothing to skip or call again.
      effects: { completed: 0, needsReview: 0, notCompleted: 0, sample: [] },
    });
    expect((await replay({ status: 'dead', type: 'INVOICE_PAID', dryRun: true })).body).toMatchObject({ count: 4 });
    expect((await getEvent(store, 'evt_done_1'))!.status).toBe('done');

    const { through } = preview.body as { through: string };
    const first = await replay({ eventIds: ids, status: 'done', limit: 2, through });
    expect(first.body).toEqual({ replayed: 2, eventIds: ['evt_done_1', 'evt_done_2'], visited: 2, last: expect.any(String) });
    const second = await replay({ eventIds: ids, status: 'done', limit: 2, after: first.body.last, through });
    expect(second.body).toMatchObject({ replayed: 1, eventIds: ['evt_done_3'], visited: 1 });
    expect((await replay({ eventIds: ids, status: 'done', limit: 2, after: second.body.last, through })).body).toEqual({
      replayed: 0,
      eventIds: [],
      visited: 0,
      last: null,
    });
    await waitFor(async () => (await getEvent(store, 'evt_done_3'))?.status === 'done', 'the replayed events done again', 20_000);
  });

  it.skipIf(!backend.available)('bad input answers 400 with the reason and the error shape, never a 500, and logs no error', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const logged = createAdminApi({ store, token: TOKEN, logger });
    const long = 'x'.repeat(400);
    const requests: [string, string, string?][] = [
      ['GET', '/admin/api/events/%E0%A4%A'],
      ['GET', '/admin/api/events/%ZZ'],
      ['POST', '/admin/api/events/%E0%A4%A/replay'],
      ['GET', '/admin/api/events/evt_%00'],
      ['POST', '/admin/api/events/evt_%00/replay'],
      ['GET', `/admin/api/events/${long}`],
      ['GET', '/admin/api/events?cursor=99999999999999999999999'],
      ['GET', '/admin/api/events?cursor=9223372036854775808'],
      ['GET', '/admin/api/events?cursor=-1'],
      ['GET', '/admin/api/events?cursor=12abc'],
      ['GET', '/admin/api/events?from=2026-13-01T00:00:00Z'],
      ['GET', '/admin/api/events?from=2026-02-30T00:00:00Z'],
      ['GET', '/admin/api/events?to=yesterday'],
      ['GET', '/admin/api/events?from=1e400'],
      ['GET', '/admin/api/events?from=0000-01-01T00:00:00Z'],
      ['GET', '/admin/api/events?to=9999-12-31T23:59:59.999999999-23:59'],
      ['GET', '//[/admin/api/events'],
      ['GET', '/admin/api/events?limit=2e9'],
      ['GET', '/admin/api/events?limit=1e400'],
      ['GET', '/admin/api/events?limit=-1'],
      ['GET', '/admin/api/events?limit=ten'],
      ['GET', '/admin/api/events?type=%00'],
      ['GET', '/admin/api/events?id=evt_%00'],
      ['GET', '/admin/api/events?resource=invoice%3A%00'],
      ['GET', `/admin/api/events?type=${long}`],
      ['GET', '/admin/api/stats?hours=1e10'],
      ['GET', '/admin/api/stats?hours=two'],
      ['POST', '/admin/api/replay', '{"status":"dead","type":"INVOICE_\u0000"}'],
      ['POST', '/admin/api/replay', `{"status":"dead","type":"${long}"}`],
      ['POST', '/admin/api/replay', '{"status":"dead"'],
      ['POST', '/admin/api/replay', '{}'],
      ['POST', '/admin/api/replay', '{"eventIds":[]}'],
      ['POST', '/admin/api/replay', '{"eventIds":["evt_1"],"type":"INVOICE_PAID"}'],
      ['POST', '/admin/api/replay', '{"status":"dead","sample":5}'],
      ['POST', '/admin/api/replay', '{"status":"dead","dryRun":true,"limit":5}'],
      ['POST', '/admin/api/replay', '{"status":"dead","after":"12"}'],
      ['POST', '/admin/api/replay', '{"status":"dead","limit":0}'],
      ['POST', '/admin/api/replay', '{"status":"dead","limit":10,"through":"99999999999999999999999"}'],
      ['GET', '/admin/api/events?reveal=yes'],
    ];
    for (const [method, url, body] of requests) {
      const response = await logged.handle({ method, url, headers: auth, body });
      expect(response.status, `${method} ${url} ${body ?? ''}`).toBe(400);
      expect(JSON.parse(response.body), url).toEqual({ error: { message: expect.any(String) } });
    }
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    // The largest position there can be is a cursor like any other.
    expect(
      (await logged.handle({ method: 'GET', url: '/admin/api/events?cursor=9223372036854775807&limit=1', headers: auth })).status,
    ).toBe(200);
    const cursor = await call('GET', '/admin/api/events?cursor=99999999999999999999999');
    expect(cursor.body.error.message).toMatch(/^Invalid query: cursor: expected the nextCursor of a page/);
    const encoded = await call('GET', '/admin/api/events/%E0%A4%A');
    expect(encoded.body.error.message).toBe('The eventId in the path is not valid percent-encoded UTF-8.');
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
    // Per type and state as well (what `payhooks events stats` prints beside serve), adding up to byStatus.
    const rows = stats.body.byTypeAndStatus as { eventType: string; status: string; count: number }[];
    expect(rows.map((row) => row.eventType)).toEqual([...rows.map((row) => row.eventType)].sort());
    for (const [status, count] of Object.entries(stats.body.byStatus as Record<string, number>))
      expect(
        rows.filter((row) => row.status === status).reduce((sum, row) => sum + row.count, 0),
        status,
      ).toBe(count);
    expect(rows.filter((row) => row.eventType === 'CUSTOMER_CREATED').reduce((sum, row) => sum + row.count, 0)).toBe(2);
    const activity = stats.body.activity as { events: number; deliveries: number; failures: number }[];
    expect(activity.reduce((sum, minute) => sum + minute.events, 0)).toBe(10);
    expect(activity.reduce((sum, minute) => sum + minute.deliveries, 0)).toBe(12);
    expect(activity.reduce((sum, minute) => sum + minute.failures, 0)).toBeGreaterThanOrEqual(0);
    expect(stats.body.hours).toBe(1);
  });

  it.skipIf(!backend.available)('lists quarantined deliveries, shows one masked, releases one and discards another', async () => {
    const bad = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_quarantined' });
    const withEmail = { ...bad, data: { ...bad.data, email: 'quarantined.person@example.com' } };
    const signed = signedRequest(withEmail, { secret: SECRET });
    const refused = await hooks.receive({ ...signed, headers: { ...signed.headers, 'user-agent': 'agent\u0000x' } });
    expect(refused.status).toBe(400);
    const notJson = await hooks.receive(signedRequest('{"not":json', { secret: SECRET }));
    const ids = [refused, notJson].map((answer) => /#(\d+)\./.exec(JSON.parse(answer.body).error.message)![1]!);

    const listed = await call('GET', '/admin/api/quarantine');
    expect(listed.status).toBe(200);
    expect(listed.body.deliveries.map((q: { id: string }) => q.id)).toEqual([...ids].reverse());
    const shown = await call('GET', `/admin/api/quarantine/${ids[0]}`);
    expect(shown.body).toMatchObject({ kind: 'unstorable_event', state: 'held', masked: true, rawBodyBase64: null });
    expect(shown.body.rawBodyText).not.toContain('quarantined.person@example.com');

    const released = await call('POST', `/admin/api/quarantine/${ids[0]}/release`, {});
    expect(released).toEqual({ status: 200, body: { eventId: 'evt_quarantined', queued: true, droppedHeaders: ['"user-agent"'] } });
    expect((await call('POST', `/admin/api/quarantine/${ids[0]}/release`, {})).status).toBe(409);
    const stillBad = await call('POST', `/admin/api/quarantine/${ids[1]}/release`, {});
    expect(stillBad.status).toBe(409);
    expect(stillBad.body.error.message).toMatch(/still cannot be stored: The body is not valid JSON/);
    expect(await call('POST', `/admin/api/quarantine/${ids[1]}/discard`)).toEqual({ status: 200, body: { discarded: ids[1] } });
    expect((await call('GET', '/admin/api/quarantine')).body.deliveries).toEqual([]);
    expect((await call('GET', '/admin/api/quarantine?state=all')).body.deliveries).toHaveLength(2);
    expect((await call('GET', '/admin/api/quarantine/424242')).status).toBe(404);
  });
});
