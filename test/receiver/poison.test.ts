import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent, parseBodyJson, parseEvent } from '../../src/events/index.js';
import { createReceiver, type Receiver } from '../../src/receiver/receiver.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

const scheme = createDefaultScheme({ secrets: 'poison-secret' });

function signed(body: string | Uint8Array): { method: string; headers: Record<string, string>; rawBody: Uint8Array } {
  const rawBody = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return { method: 'POST', headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) }, rawBody };
}

const invoice = exampleEvent('INVOICE_PAID');
const withData = (eventId: string, data: Record<string, unknown>, eventType = 'INVOICE_PAID') =>
  JSON.stringify({ eventId, eventType, data: { ...invoice.data, ...data } });

// Signed deliveries that Postgres cannot store as they are (or could not before): each must get the same answer
// every time, never 503 (the sender would retry it for four days and then drop it).
const refused: [string, string, RegExp][] = [
  [
    'a U+0000 in eventId',
    JSON.stringify({ eventId: 'evt_\u0000x', eventType: 'INVOICE_PAID', data: invoice.data }),
    /eventId: must not contain U\+0000/,
  ],
  [
    'a U+0000 in eventType',
    JSON.stringify({ eventId: 'evt_t', eventType: 'INVOICE\u0000PAID', data: invoice.data }),
    /eventType: must not contain U\+0000/,
  ],
  ['a U+0000 in the resource id', withData('evt_r', { invoiceId: 'inv_\u0000' }), /resource id this INVOICE_PAID names cannot be stored/],
  ['an eventId of 3,000 characters (over the index limit)', withData('e'.repeat(3000), {}), /eventId: must be at most 255 characters/],
  ['an eventId of 9,000 characters (over the NOTIFY limit)', withData('e'.repeat(9000), {}), /eventId: must be at most 255 characters/],
  ['a resource id of 3,000 characters', withData('evt_long_resource', { invoiceId: 'i'.repeat(3000) }), /resource id .* cannot be stored/],
  ['white space around eventId', withData(' evt_ws ', {}), /eventId: must not begin or end with white space/],
];

// Valid JSON that jsonb would have refused: stored as sent and acknowledged.
const stored: [string, string][] = [
  ['a lone surrogate escape', withData('evt_surrogate', { description: 'SURROGATE' }).replace('"SURROGATE"', '"\\ud800"')],
  ['a number beyond any range', withData('evt_huge_number', {}).replace('"amount":', '"note":1e200000,"amount":')],
  ['a \\u0000 escape inside data', withData('evt_nul_in_data', { description: 'a\u0000b' })],
  [
    'nesting 100,000 deep',
    JSON.stringify({ eventId: 'evt_deep', eventType: 'CUSTOM_DEEP', data: { x: 0 } }).replace(
      '0}',
      `${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    ),
  ],
];

describe.each(backends.filter((backend) => backend.available))('poison deliveries ($name)', (backend) => {
  let store: PayhooksDatabase;
  let receiver: Receiver;
  beforeAll(async () => {
    store = await backend.open();
    receiver = createReceiver({ store, scheme, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await dispose(store);
  });

  it.each(refused)('%s is refused with 400 and its reason, the same way every time', async (_what, body, reason) => {
    const answers = [await receiver.receive(signed(body)), await receiver.receive(signed(body))];
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body).error.message).toMatch(reason);
    }
    const { count } = await store.db
      .selectFrom('inbox_events')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .executeTakeFirstOrThrow();
    expect(Number(count)).toBe(0);
  });

  it.each(stored)('%s is stored byte for byte and acknowledged, then counted as a duplicate', { timeout: 60_000 }, async (_what, body) => {
    const eventId = (/"eventId":"([^"]+)"/.exec(body) ?? [])[1]!;
    expect((await receiver.receive(signed(body))).body).toBe('{"received":true}');
    expect((await receiver.receive(signed(body))).body).toBe('{"received":true,"duplicate":true}');
    const row = await store.db
      .selectFrom('inbox_event_states')
      .select(['raw_body', 'deliveries'])
      .where('event_id', '=', eventId)
      .executeTakeFirstOrThrow();
    expect(row.raw_body).toBe(body);
    expect(row.deliveries).toBe(2);
  });

  it('a body with a UTF-8 byte order mark is stored with it, so the stored body and headers verify again', async () => {
    const json = JSON.stringify(exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_bom' }));
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]);
    const request = signed(bytes);
    expect((await receiver.receive(request)).status).toBe(200);
    const detail = (await getEvent(store, 'evt_bom'))!;
    expect(detail.rawBody.charCodeAt(0)).toBe(0xfeff);
    expect(Buffer.from(detail.rawBody, 'utf8').equals(bytes)).toBe(true);
    expect(() => scheme.verify({ headers: detail.headers, rawBody: Buffer.from(detail.rawBody, 'utf8') })).not.toThrow();
    // The worker reads it past the mark.
    expect(parseEvent(parseBodyJson(detail.rawBody)).ok).toBe(true);
  });

  it('a timestamp header sent twice with the same value (joined by Node as "t, t") verifies', async () => {
    const request = signed(JSON.stringify(exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_twice' })));
    const timestamp = request.headers['x-webhook-timestamp'];
    request.headers['x-webhook-timestamp'] = `${timestamp}, ${timestamp}`;
    expect((await receiver.receive(request)).status).toBe(200);
    request.headers['x-webhook-timestamp'] = `${timestamp}, ${Number(timestamp) + 1}`;
    expect((await receiver.receive(request)).status).toBe(401);
  });
});
