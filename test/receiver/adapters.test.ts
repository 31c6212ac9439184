import { errorMessage } from '../helpers/error-body.js';
import { createServer } from 'node:http';
import express from 'express';
import { type Logger, pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { ADAPTERS, listen, serverFor } from '../helpers/servers.js';

const SECRET = 'test-endpoint-secret';
const scheme = createDefaultScheme({ secrets: [SECRET] });
const wrongScheme = createDefaultScheme({ secrets: ['another-secret'] });
const silent = { logger: pino({ level: 'silent' }) };

let store: PayhooksDatabase;
beforeAll(async () => {
  store = await openDatabase({ dataDir: 'memory://', schema: 'adapters' });
  await migrate(store);
});
afterAll(async () => {
  await store.close();
});

describe.each(ADAPTERS)('the %s adapter over real HTTP', (adapter) => {
  let hooks: Payhooks;
  let url: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    hooks = createPayhooks({ secret: SECRET, database: store, ...silent });
    ({ url, close } = await listen(serverFor(adapter, hooks)));
    url += '/webhooks';
  });
  afterAll(() => close());

  const id = (name: string) => `${adapter}_${name}`;

  it('200: stores a signed delivery, keeping the exact bytes', async () => {
    const delivery = signedDelivery(scheme, envelope(id('stored')));
    const response = await post(url, delivery);
    expect(response).toEqual({ status: 200, body: { received: true } });
    const stored = await getEvent(store, id('stored'));
    expect(stored?.rawBody).toBe(delivery.body);
    expect(stored?.status).toBe('pending');
    expect(stored?.resourceKey).toBe('customer:cus_1');
    expect(stored?.headers['x-webhook-timestamp']).toBe(delivery.headers['x-webhook-timestamp']);
  });

  it('200 duplicate: a repeat is acknowledged, counted, and changes nothing else', async () => {
    const delivery = signedDelivery(scheme, envelope(id('dup')));
    await post(url, delivery);
    const again = await post(url, signedDelivery(scheme, envelope(id('dup'))));
    expect(again).toEqual({ status: 200, body: { received: true, duplicate: true } });
    expect((await getEvent(store, id('dup')))?.deliveries).toBe(2);
  });

  it('200: an unknown event type is stored and acknowledged, never lost', async () => {
    const response = await post(url, signedDelivery(scheme, { eventId: id('unknown'), eventType: 'SOMETHING_NEW', data: {} }));
    expect(response.status).toBe(200);
    expect((await getEvent(store, id('unknown')))?.eventType).toBe('SOMETHING_NEW');
  });

  it('400: a signed body that is not JSON', async () => {
    const response = await post(url, signedDelivery(scheme, '{"eventId": '));
    expect(response.status).toBe(400);
    expect(errorMessage(response.body)).toMatch(/not valid JSON/);
  });

  it('400: JSON that is not an envelope names the failing fields', async () => {
    const response = await post(url, signedDelivery(scheme, { eventId: '', eventType: 'INVOICE_PAID', data: [] }));
    expect(response.status).toBe(400);
    expect(errorMessage(response.body)).toMatch(/eventId/);
    expect(errorMessage(response.body)).toMatch(/data/);
  });

  it('401: a wrong signature, a missing one, a stale timestamp; nothing is stored', async () => {
    const wrong = await post(url, signedDelivery(wrongScheme, envelope(id('wrong'))));
    const { 'x-webhook-signature': _dropped, ...unsignedHeaders } = signedDelivery(scheme, envelope(id('missing'))).headers;
    const missing = await post(url, { body: JSON.stringify(envelope(id('missing'))), headers: unsignedHeaders });
    const stale = await post(url, signedDelivery(scheme, envelope(id('stale')), { timestamp: Math.floor(Date.now() / 1000) - 301 }));
    for (const response of [wrong, missing, stale]) {
      expect(response.status).toBe(401);
      expect(errorMessage(response.body)).not.toContain(SECRET);
    }
    for (const name of ['wrong', 'missing', 'stale']) expect(await getEvent(store, id(name))).toBeUndefined();
  });

  it('401: a body changed after signing (one byte) is refused', async () => {
    const delivery = signedDelivery(scheme, envelope(id('tampered')));
    const response = await post(url, { ...delivery, body: delivery.body.replace('u1', 'u2') });
    expect(response.status).toBe(401);
  });

  it('405: anything but POST, with Allow', async () => {
    const response = await fetch(url, { method: 'GET' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toEqual({ error: { message: expect.stringMatching(/POST/) } });
  });

  it('413: a body over the limit is refused', async () => {
    const big = JSON.stringify({ ...envelope(id('big')), padding: 'x'.repeat(1024 * 1024) });
    const response = await post(url, signedDelivery(scheme, big));
    expect(response.status).toBe(413);
    expect(errorMessage(response.body)).toMatch(/larger than the limit of 1048576 bytes/);
    expect(await getEvent(store, id('big'))).toBeUndefined();
  });

  it('415: a body that is not declared JSON', async () => {
    const delivery = signedDelivery(scheme, envelope(id('text')));
    const response = await post(url, { ...delivery, headers: { ...delivery.headers, 'content-type': 'text/plain' } });
    expect(response.status).toBe(415);
    expect(await getEvent(store, id('text'))).toBeUndefined();
  });
});

describe.each(ADAPTERS)('the %s adapter when storage is down', (adapter) => {
  it('503: nothing is acknowledged', async () => {
    // A port nobody listens on: connections are refused at once.
    const hooks = createPayhooks({
      secret: SECRET,
      database: { url: 'postgres://postgres@127.0.0.1:9/none', connectionTimeoutMs: 1000 },
      ...silent,
    });
    const { url, close } = await listen(serverFor(adapter, hooks));
    try {
      const response = await post(`${url}/webhooks`, signedDelivery(scheme, envelope(`${adapter}_down`)));
      expect(response.status).toBe(503);
      expect(errorMessage(response.body)).toMatch(/should be retried/);
    } finally {
      await close();
      await hooks.close();
    }
  });
});

/** A pino logger whose lines land in `lines`, parsed. */
function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

describe('mounting after express.json()', () => {
  it('answers 500 with a message that says how to mount the middleware, not a signature error, and logs body_already_parsed', async () => {
    const { logger, lines } = capturingLogger();
    const hooks = createPayhooks({ secret: SECRET, database: store, logger });
    const app = express();
    app.use(express.json());
    app.post('/webhooks', hooks.express());
    const { url, close } = await listen(createServer(app));
    try {
      const response = await post(`${url}/webhooks`, signedDelivery(scheme, envelope('parsed_first')));
      expect(response.status).toBe(500);
      const expected =
        'payhooks: The webhook body reached the verifier as a parsed object: a JSON body parser (express.json(), bodyParser.json(), ' +
        "a framework's automatic parsing) ran first, not as raw bytes. Give the webhook middleware the raw request bytes: mount it " +
        'before any body parser (e.g. above app.use(express.json())), exclude the webhook path from the parser, or use ' +
        'express.raw({ type: "application/json" }) on that route.';
      expect(errorMessage(response.body)).toBe(expected);
      expect(lines).toContainEqual(expect.objectContaining({ level: 50, reason: 'body_already_parsed', msg: expected }));
      expect(await getEvent(store, 'parsed_first')).toBeUndefined();
    } finally {
      await close();
    }
  });

  it('says "as a string" after a text body parser', async () => {
    const hooks = createPayhooks({ secret: SECRET, database: store, ...silent });
    const app = express();
    app.use(express.text({ type: 'application/json' }));
    app.post('/webhooks', hooks.express());
    const { url, close } = await listen(createServer(app));
    try {
      const response = await post(`${url}/webhooks`, signedDelivery(scheme, envelope('text_first')));
      expect(response.status).toBe(500);
      expect(errorMessage(response.body)).toMatch(/reached the verifier as a string: .* mount it before any body parser/);
    } finally {
      await close();
    }
  });

  it('accepts the bytes express.raw() leaves', async () => {
    const hooks = createPayhooks({ secret: SECRET, database: store, ...silent });
    const app = express();
    app.post('/webhooks', express.raw({ type: 'application/json' }), hooks.express());
    const { url, close } = await listen(createServer(app));
    try {
      const response = await post(`${url}/webhooks`, signedDelivery(scheme, envelope('raw_parser')));
      expect(response.status).toBe(200);
    } finally {
      await close();
    }
  });
});
