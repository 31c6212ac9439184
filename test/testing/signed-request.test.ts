// payhooks/testing as an app's test suite uses it: signed requests handed to a real createPayhooks (PGlite in
// memory), directly through hooks.receive and over HTTP, with the worker running the app's handler.
import { createServer } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDefaultScheme,
  createPayhooks,
  createStandardWebhooksScheme,
  getEvent,
  openDatabase,
  type PayhooksDatabase,
  type Payhooks,
  type PayhooksOptions,
  type WebhookEvent,
} from '../../src/index.js';
import { EDGE_CASE_EVENTS, EXAMPLE_EVENTS, exampleEvent, signedRequest } from '../../src/testing/index.js';
import { errorMessage } from '../helpers/error-body.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'test-secret-of-the-app';
const silent = { logger: pino({ level: 'silent' }) };

describe('signedRequest with the default scheme', () => {
  let hooks: Payhooks;
  const paid: WebhookEvent<'INVOICE_PAID'>[] = [];

  beforeAll(async () => {
    hooks = createPayhooks({ secret: SECRET, database: { dataDir: 'memory://' }, worker: { pollIntervalMs: 50 }, ...silent });
    hooks.on('INVOICE_PAID', (event) => {
      paid.push(event);
    });
    await hooks.start();
  });
  afterAll(() => hooks.stop());

  it('is accepted by hooks.receive, stored once, and runs the handler with the typed event', async () => {
    const event = exampleEvent('INVOICE_PAID', { data: { amount: 1234 } });
    const request = signedRequest(event, { secret: SECRET });
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual(event);
    expect(Buffer.from(request.rawBody).toString('utf8')).toBe(request.body);

    const first = await hooks.receive(request);
    expect(first.status).toBe(200);
    expect(JSON.parse(first.body)).toEqual({ received: true });
    const again = await hooks.receive(signedRequest(event, { secret: SECRET }));
    expect(JSON.parse(again.body)).toEqual({ received: true, duplicate: true });

    await waitFor(() => paid.some((p) => p.eventId === event.eventId), 'the INVOICE_PAID handler');
    const handled = paid.find((p) => p.eventId === event.eventId);
    expect(handled?.data.amount).toBe(1234);
    // The outcome is written just after the handler returns (outcomes go out in small batches).
    const store = await hooks.ready();
    await waitFor(async () => (await getEvent(store, event.eventId))?.status === 'done', 'the event marked done');
  });

  it('is ready to POST with fetch to a running endpoint', async () => {
    const server = await listen(createServer(hooks.node()));
    try {
      const event = exampleEvent('CUSTOMER_CREATED');
      const response = await fetch(`${server.url}/webhooks`, signedRequest(event, { secret: SECRET }));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ received: true });
      expect((await getEvent(await hooks.ready(), event.eventId))?.eventType).toBe('CUSTOMER_CREATED');
    } finally {
      await server.close();
    }
  });

  it('signs every example and edge case so that the receiver accepts it', async () => {
    const events = [...Object.values(EXAMPLE_EVENTS), ...EDGE_CASE_EVENTS.map((edge) => edge.event)];
    for (const event of events) {
      const response = await hooks.receive(signedRequest({ ...event, eventId: `${event.eventId}_signed` }, { secret: SECRET }));
      expect(response.status, event.eventType).toBe(200);
    }
  });

  it('signs a raw body string byte for byte', async () => {
    const body = '{ "eventId": "evt_raw_1",  "eventType": "CUSTOMER_UPDATED", "data": {"id":"cus_1","username":"ü"} }';
    const request = signedRequest(body, { secret: SECRET });
    expect(request.body).toBe(body);
    expect((await hooks.receive(request)).status).toBe(200);
  });

  it('with another secret, or a timestamp beyond the tolerance, is refused with 401 and stores nothing', async () => {
    const wrong = exampleEvent('INVOICE_PAID');
    const refused = await hooks.receive(signedRequest(wrong, { secret: 'not-the-secret' }));
    expect(refused.status).toBe(401);

    const stale = exampleEvent('INVOICE_PAID');
    const staleRequest = signedRequest(stale, { secret: SECRET, timestamp: new Date(Date.now() - 10 * 60_000) });
    const old = await hooks.receive(staleRequest);
    expect(old.status).toBe(401);
    expect(errorMessage(JSON.parse(old.body))).toBe('Invalid webhook signature.');
    // The signature itself is right: only the age fails.
    const verify = () => createDefaultScheme({ secrets: SECRET }).verify({ headers: staleRequest.headers, rawBody: staleRequest.rawBody });
    expect(verify).toThrow(expect.objectContaining({ reason: 'timestamp_too_old' }));

    const store = await hooks.ready();
    expect(await getEvent(store, wrong.eventId)).toBeUndefined();
    expect(await getEvent(store, stale.eventId)).toBeUndefined();
  });

  it('takes a timestamp in unix seconds or as a Date', () => {
    const at = new Date('2026-01-01T00:00:00.900Z');
    const fromDate = signedRequest('{}', { secret: SECRET, timestamp: at });
    const fromSeconds = signedRequest('{}', { secret: SECRET, timestamp: 1767225600 });
    expect(fromDate.headers['x-webhook-timestamp']).toBe('1767225600');
    expect(fromDate.headers).toEqual(fromSeconds.headers);
  });
});

describe('signedRequest during a rotation and with other schemes', () => {
  // One database for the several receivers below; each instance differs only in what it verifies.
  let store: PayhooksDatabase;
  beforeAll(async () => {
    store = await openDatabase({ dataDir: 'memory://', schema: 'signed_request' });
  });
  afterAll(() => store.close());
  const hooksWith = (options: PayhooksOptions) => createPayhooks({ database: store, ...silent, ...options });

  it('signs with every secret of a list, so receivers that know either the new or the old one accept it', async () => {
    const request = signedRequest(exampleEvent('PAYMENT_COMPLETED'), { secret: 'new-secret, old-secret' });
    expect(request.headers['x-webhook-signature']).toMatch(/^v1=[0-9a-f]{64} v1=[0-9a-f]{64}$/);
    expect((await hooksWith({ secret: 'old-secret' }).receive(request)).status).toBe(200);
    expect((await hooksWith({ secret: ['new-secret'] }).receive(request)).status).toBe(200);
    expect((await hooksWith({ secret: 'third-secret' }).receive(request)).status).toBe(401);
  });

  it('signs with a given scheme, e.g. Standard Webhooks, and its webhook id', async () => {
    const scheme = createStandardWebhooksScheme({ secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] });
    const request = signedRequest(exampleEvent('DISPUTE_CREATED'), { scheme, webhookId: 'msg_test_1' });
    expect(request.headers['webhook-id']).toBe('msg_test_1');
    expect(request.headers['webhook-signature']).toMatch(/^v1,/);
    expect((await hooksWith({ scheme }).receive(request)).status).toBe(200);
  });

  it("with a scheme and one secret, signs with that secret rather than the scheme's first", async () => {
    const newer = `whsec_${Buffer.from('the newer secret key').toString('base64')}`;
    const older = `whsec_${Buffer.from('the older secret key').toString('base64')}`;
    const signer = createStandardWebhooksScheme({ secrets: [newer, older] });
    const request = signedRequest(exampleEvent('PAYMENT_REFUNDED'), { scheme: signer, secret: older });
    const onlyOlder = hooksWith({ scheme: createStandardWebhooksScheme({ secrets: [older] }) });
    const onlyNewer = hooksWith({ scheme: createStandardWebhooksScheme({ secrets: [newer] }) });
    expect((await onlyOlder.receive(request)).status).toBe(200);
    expect((await onlyNewer.receive(request)).status).toBe(401);
  });
});

describe('signedRequest refuses what it cannot sign, with a message that says what it needs', () => {
  const event = EXAMPLE_EVENTS.INVOICE_CREATED;

  it('no secret and no scheme', () => {
    expect(() => signedRequest(event, {})).toThrow(
      new TypeError('signedRequest needs the endpoint secret ({ secret }) or a signature scheme ({ scheme }).'),
    );
    expect(() => signedRequest(event, undefined as never)).toThrow(TypeError);
  });

  it('an empty secret', () => {
    expect(() => signedRequest(event, { secret: ' , ' })).toThrow(/empty secret/);
    expect(() => signedRequest(event, { secret: [] })).toThrow(/empty secret/);
  });

  it('several secrets with a scheme', () => {
    const scheme = createStandardWebhooksScheme({ secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] });
    expect(() => signedRequest(event, { scheme, secret: ['whsec_a', 'whsec_b'] })).toThrow(/one secret/);
  });

  it('an event that is neither an object nor a string, and an invalid timestamp', () => {
    expect(() => signedRequest(null as never, { secret: SECRET })).toThrow(/event object or the raw JSON body as a string, not null/);
    expect(() => signedRequest(42 as never, { secret: SECRET })).toThrow(/not number/);
    expect(() => signedRequest(event, { secret: SECRET, timestamp: new Date('nope') })).toThrow(/invalid Date/);
    expect(() => signedRequest(event, { secret: SECRET, timestamp: 1.5 })).toThrow(/whole, non-negative number of unix seconds/);
  });
});
