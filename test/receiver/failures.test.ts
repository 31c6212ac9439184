import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { runInNewContext } from 'node:vm';
import express, { type ErrorRequestHandler } from 'express';
import { type Logger, pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchHandler } from '../../src/adapters/fetch.js';
import { createPayhooks } from '../../src/payhooks.js';
import { createReceiver, type ReceiverOptions } from '../../src/receiver/receiver.js';
import { createDefaultScheme, type SignatureScheme } from '../../src/signature/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { errorMessage } from '../helpers/error-body.js';
import { listen, serverFor } from '../helpers/servers.js';

const SECRET = 'failure-paths-secret';
const scheme = createDefaultScheme({ secrets: SECRET });
const silent = pino({ level: 'silent' });

/** A scheme with a bug: verify throws something that is not a WebhookVerificationError. */
const brokenScheme: SignatureScheme = {
  name: 'broken',
  headerNames: [],
  verify() {
    throw new Error('custom scheme bug');
  },
  sign: () => ({}),
};

function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

let store: PayhooksDatabase;
beforeAll(async () => {
  store = await openDatabase({ dataDir: 'memory://', schema: 'receiver_failures' });
  await migrate(store);
});
afterAll(async () => {
  await store.close();
});

describe('an adapter whose receiver throws answers for itself', () => {
  it.each(['node', 'fetch'] as const)(
    '%s: 500 {"error":{"message":"Internal error."}}, the error in the log, nothing stored',
    async (adapter) => {
      const { logger, lines } = capturingLogger();
      const hooks = createPayhooks({ scheme: brokenScheme, database: store, logger });
      const { url, close } = await listen(serverFor(adapter, hooks));
      try {
        const response = await post(`${url}/webhooks?x=1`, signedDelivery(scheme, envelope(`${adapter}_broken`)));
        expect(response).toEqual({ status: 500, body: { error: { message: 'Internal error.' } } });
        const logged = lines.find((line) => line.msg === 'webhook request failed; answered 500');
        expect(logged).toMatchObject({ level: 50, method: 'POST', path: '/webhooks', err: { message: 'custom scheme bug' } });
        expect(await getEvent(store, `${adapter}_broken`)).toBeUndefined();
      } finally {
        await close();
      }
    },
  );

  it('node: the handler promise resolves, so a server needs no catch of its own', async () => {
    const hooks = createPayhooks({ scheme: brokenScheme, database: store, logger: silent });
    const handle = hooks.node();
    const outcomes: Promise<'resolved' | 'rejected'>[] = [];
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      outcomes.push(
        handle(req, res).then(
          () => 'resolved',
          () => 'rejected',
        ),
      );
    });
    const { url, close } = await listen(server);
    try {
      expect((await post(`${url}/webhooks`, signedDelivery(scheme, envelope('node_promise')))).status).toBe(500);
      expect(await Promise.all(outcomes)).toEqual(['resolved']);
    } finally {
      await close();
    }
  });

  it("express: the error goes to next(err), i.e. the app's error handler", async () => {
    const hooks = createPayhooks({ scheme: brokenScheme, database: store, logger: silent });
    const seen: unknown[] = [];
    const onError: ErrorRequestHandler = (err, _req, res, _next) => {
      seen.push(err);
      res.status(502).json({ error: { message: 'handled by the app' } });
    };
    const app = express();
    app.post('/webhooks', hooks.express());
    app.use(onError);
    const { url, close } = await listen(createServer(app));
    try {
      const response = await post(`${url}/webhooks`, signedDelivery(scheme, envelope('express_broken')));
      expect(response).toEqual({ status: 502, body: { error: { message: 'handled by the app' } } });
      expect(seen).toEqual([new Error('custom scheme bug')]);
    } finally {
      await close();
    }
  });
});

describe('the raw-body check is the signature module one', () => {
  it('accepts bytes made in another realm (a vm context), which instanceof Uint8Array would refuse', async () => {
    const hooks = createPayhooks({ secret: SECRET, database: store, logger: silent });
    const delivery = signedDelivery(scheme, envelope('other_realm'));
    const foreign = runInNewContext('Uint8Array.from(bytes)', { bytes: [...Buffer.from(delivery.body)] }) as Uint8Array;
    expect(foreign instanceof Uint8Array).toBe(false);
    const response = await hooks.receive({ method: 'POST', headers: delivery.headers, rawBody: foreign });
    expect(response.status).toBe(200);
    expect((await getEvent(store, 'other_realm'))?.eventId).toBe('other_realm');
  });

  it.each([
    ['a parsed object', { eventId: 'x' }, /as a parsed object/],
    ['a string', '{"eventId":"x"}', /as a string/],
    ['an ArrayBuffer', new ArrayBuffer(2), /as an ArrayBuffer \(wrap it: new Uint8Array\(arrayBuffer\)\)/],
  ])('refuses %s with 500 and the fix', async (_name, rawBody, message) => {
    const hooks = createPayhooks({ secret: SECRET, database: store, logger: silent });
    const response = await hooks.receive({ method: 'POST', headers: { 'content-type': 'application/json' }, rawBody });
    expect(response.status).toBe(500);
    expect(errorMessage(JSON.parse(response.body))).toMatch(message);
    expect(errorMessage(JSON.parse(response.body))).toMatch(/mount it before any body parser/);
  });
});

describe('the fetch adapter reads the body with the shared limit logic', () => {
  const receiver = () => createReceiver({ store, scheme, logger: silent, maxBodyBytes: 64 });
  const request = (body: string, headers: Record<string, string>) =>
    new Request('http://127.0.0.1/webhooks', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  it('refuses a declared length over the limit before reading, and a body that does not match its Content-Length', async () => {
    const handle = fetchHandler(receiver());
    const declared = await handle(request('{}', { 'content-length': '65' }));
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: { message: 'The body is larger than the limit of 64 bytes.' } });
    const mismatch = await handle(request('{}', { 'content-length': '5' }));
    expect(mismatch.status).toBe(400);
    expect(await mismatch.json()).toEqual({ error: { message: 'The body length does not match Content-Length.' } });
  });

  it('stops at the limit when no length is declared, and accepts a body of exactly the limit', async () => {
    const handle = fetchHandler(receiver());
    expect((await handle(request('x'.repeat(65), {}))).status).toBe(413);
    const body = JSON.stringify({ eventId: 'exactly_64', eventType: 'X', data: {} }).padEnd(64, ' ');
    expect(Buffer.byteLength(body)).toBe(64);
    const fits = await handle(request(body, signedDelivery(scheme, body).headers));
    expect(fits.status).toBe(200);
    expect((await getEvent(store, 'exactly_64'))?.rawBody).toBe(body);
  });
  it('a body a middleware already read is answered 500 with how to mount the route, not a 400 that blames the sender', async () => {
    const handle = fetchHandler(receiver());
    const body = JSON.stringify({ eventId: 'read_first', eventType: 'X', data: {} });
    const consumed = request(body, signedDelivery(scheme, body).headers);
    await consumed.json();
    const response = await handle(consumed);
    expect(response.status).toBe(500);
    expect(errorMessage(await response.json())).toMatch(/mount it before any body parser/);
    expect(await getEvent(store, 'read_first')).toBeUndefined();
  });
});

describe('configuration mistakes are TypeError or RangeError at construction', () => {
  const options = (): ReceiverOptions => ({ store, scheme });

  it('createReceiver checks its options', () => {
    expect(() => createReceiver({ ...options(), store: undefined as unknown as PayhooksDatabase })).toThrow(
      new TypeError('store must be an open database from openDatabase().'),
    );
    expect(() => createReceiver({ ...options(), scheme: {} as SignatureScheme })).toThrow(
      new TypeError('scheme must be a signature scheme such as createDefaultScheme({ secrets }) (an object with verify and headerNames).'),
    );
    for (const maxBodyBytes of [0, -1, 1.5, Number.NaN]) {
      expect(() => createReceiver({ ...options(), maxBodyBytes })).toThrow(
        new RangeError(`maxBodyBytes must be a positive whole number of bytes, not ${maxBodyBytes}.`),
      );
    }
    for (const ackBudgetMs of [0, -5, Number.POSITIVE_INFINITY]) {
      expect(() => createReceiver({ ...options(), ackBudgetMs })).toThrow(
        new RangeError(`ackBudgetMs must be a positive number of milliseconds, not ${ackBudgetMs}.`),
      );
    }
    // Node would run a longer timer after 1 ms, and every delivery would be answered 503 at once.
    expect(() => createReceiver({ ...options(), ackBudgetMs: 2 ** 31 })).toThrow(
      new RangeError(
        "ackBudgetMs must be at most 2147483647 ms (Node's longest timer), not 2147483648; keep it well under the sender's 10 s.",
      ),
    );
    expect(() => createReceiver({ ...options(), onStored: 'wake' as unknown as () => void })).toThrow(TypeError);
  });

  it('createPayhooks: limits at once, the secret when a receiver is asked for', () => {
    expect(() => createPayhooks({ secret: SECRET, maxBodyBytes: 0, logger: silent })).toThrow(RangeError);
    for (const secret of [undefined, '', ' , ', []]) {
      const hooks = createPayhooks({ secret, database: store, logger: silent });
      expect(() => hooks.node()).toThrow(
        new TypeError('payhooks needs the endpoint signing secret: pass { secret } (or set PAYHOOKS_WEBHOOK_SECRET for `payhooks serve`).'),
      );
    }
    expect(() => createPayhooks({ secret: [7] as unknown as string[], database: store, logger: silent }).node()).toThrow(
      new TypeError('Webhook secret #1 of 1 is a number, not a string.'),
    );
    expect(() => createPayhooks({ scheme: { name: 'x' } as SignatureScheme, database: store, logger: silent }).node()).toThrow(TypeError);
  });

  it('createPayhooks reads a comma-separated secret as a rotation, like PAYHOOKS_WEBHOOK_SECRET', async () => {
    const hooks = createPayhooks({ secret: 'new-secret, old-secret', database: store, logger: silent });
    const byOld = signedDelivery(createDefaultScheme({ secrets: ['old-secret'] }), envelope('rotation_string'));
    const response = await hooks.receive({ method: 'POST', headers: byOld.headers, rawBody: Buffer.from(byOld.body) });
    expect(response.status).toBe(200);
  });
});
