import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import type { ForwardDocument } from '../../src/sync/forward-document.js';
import { rateLimitSettings, registerHttpForward } from '../../src/sync/http-forward.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { runCli } from '../helpers/cli.js';
import { pgUrl } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';
import { putEvent } from '../helpers/inbox.js';
import { hugeAnswer } from '../helpers/huge-answer.js';

const silent = pino({ level: 'silent' });
const TARGET_SECRET = 'whsec_target_only';

interface Received {
  at: number;
  headers: Record<string, string>;
  body: string;
  raw: Buffer;
  answered: number;
}

/** A forward target on loopback whose answers follow a script; the answer after the script runs out is `then`. */
async function scriptedTarget(script: { status: number; headers?: Record<string, string>; body?: string }[]) {
  const received: Received[] = [];
  let then: { status: number; body?: string } = { status: 200 };
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = script.shift() ?? then;
      received.push({
        at: Date.now(),
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body: Buffer.concat(chunks).toString('utf8'),
        raw: Buffer.concat(chunks),
        answered: answer.status,
      });
      res.writeHead(answer.status, { 'content-type': 'application/json', ...(answer as { headers?: Record<string, string> }).headers });
      res.end(answer.body ?? '{}');
    });
  });
  const listening = await listen(server);
  return {
    ...listening,
    received,
    /** What the target answers once the script is used up. */
    answer(next: { status: number; body?: string }) {
      then = next;
    },
  };
}

async function handlersCompleted(hooks: Payhooks<ApiClient>, eventId: string): Promise<string[]> {
  const store = await hooks.ready();
  const rows = await store.db
    .selectFrom('handler_runs')
    .select('handler')
    .where('event_id', '=', eventId)
    .where('outcome', '=', 'done')
    .execute();
  return rows.map((row) => row.handler).sort();
}

describe.each(backends)('the HTTP forward sink, inbox on $name', (backend) => {
  it.skipIf(!backend.available)(
    'a target answering 500, then 429 with Retry-After: 3, then 200 gets the event signed with its own secret, once successfully, after the wait it asked for',
    { timeout: 120_000 },
    async () => {
      const store = await backend.open();
      const target = await scriptedTarget([
        { status: 500, body: '{"error":"down"}' },
        { status: 429, headers: { 'retry-after': '3' } },
      ]);
      // The receiving side is another payhooks, verifying with the target's secret and deduplicating by eventId.
      const downstream = createPayhooks({ secret: TARGET_SECRET, database: { dataDir: 'memory://' }, logger: silent });
      // A backoff far below the Retry-After's 3 s, so that a wait that long can only be the Retry-After's. (With 1 s, the
      // 500's retry came 1514 ms later on a loaded machine: the poll, the claim and the scheduler, not the backoff.)
      const hooks = createPayhooks<ApiClient>({
        secret: 'whsec_source',
        database: store,
        logger: silent,
        // maxMs caps a Retry-After too: above the 3 s asked for.
        worker: { pollIntervalMs: 50, backoff: { baseMs: 100, maxMs: 10_000 } },
      });
      try {
        await registerHttpForward(hooks, { name: 'erp', url: `${target.url}/inbound`, secret: TARGET_SECRET });
        const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_forward_1' });
        await putEvent(store, event);
        await hooks.start();
        await waitFor(async () => (await getEvent(store, event.eventId))?.status === 'done', 'the event done', 30_000);

        expect(target.received.map((r) => r.answered)).toEqual([500, 429, 200]);
        const [first, second, third] = target.received as [Received, Received, Received];
        expect(third.at - second.at).toBeGreaterThanOrEqual(3000);
        expect(second.at - first.at).toBeLessThan(3000);
        const scheme = createDefaultScheme({ secrets: TARGET_SECRET });
        const wrongScheme = createDefaultScheme({ secrets: 'whsec_source' });
        for (const request of target.received) {
          expect(() => scheme.verify({ headers: request.headers, rawBody: request.raw })).not.toThrow();
          expect(() => wrongScheme.verify({ headers: request.headers, rawBody: request.raw })).toThrow();
        }
        // One idempotency key for the event at this target, whatever the attempt.
        expect(new Set(target.received.map((r) => r.headers['idempotency-key'])).size).toBe(1);
        const document = JSON.parse(third.body) as ForwardDocument;
        expect(document).toMatchObject({
          eventId: event.eventId,
          eventType: 'INVOICE_PAID',
          data: event.data,
          payhooks: { version: 1, sink: 'forward:erp' },
          resource: { kind: 'invoice', id: event.data.invoiceId, source: 'event', state: event.data.invoice },
        });
        // The forwarded request is a delivery the downstream payhooks accepts and stores once.
        for (const request of [third, third]) {
          const answer = await downstream.receive({ method: 'POST', headers: request.headers, rawBody: request.raw });
          expect(answer.status).toBe(200);
        }
        const stored = await getEvent(await downstream.ready(), event.eventId);
        expect(stored?.deliveries).toBe(2);

        const detail = await getEvent(store, event.eventId);
        expect(detail).toMatchObject({ status: 'done', attempts: 3, lastError: null });
        expect(await handlersCompleted(hooks, event.eventId)).toEqual(['forward:erp']);
      } finally {
        await hooks.stop();
        await downstream.stop();
        await target.close();
        await dispose(store);
      }
    },
  );

  it.skipIf(!backend.available)(
    'a connector that throws for one event type leaves the other sinks of that event done, and they are not repeated on its retries',
    { timeout: 60_000 },
    async () => {
      const store = await backend.open();
      const target = await scriptedTarget([]);
      const hooks = createPayhooks<ApiClient>({
        secret: 'whsec_source',
        database: store,
        logger: silent,
        worker: { pollIntervalMs: 50, backoff: { baseMs: 100, maxMs: 200 } },
      });
      const { defineConnector, registerConnector } = await import('../../src/sync/connector.js');
      let thrown = 0;
      try {
        // Registered first, so that the sinks after it would never run if its failure stopped the event.
        await registerConnector(
          hooks,
          defineConnector({
            name: 'flaky',
            events: ['INVOICE_PAID', 'CUSTOMER_CREATED'],
            handle(event) {
              if (event.eventType === 'INVOICE_PAID') {
                thrown++;
                throw new Error('the CRM rejects invoices today');
              }
            },
          }),
        );
        await registerHttpForward(hooks, { name: 'ok', url: target.url, secret: TARGET_SECRET });
        hooks.on('INVOICE_PAID', () => undefined, { name: 'books' });
        const invoice = exampleEvent('INVOICE_PAID', { eventId: 'evt_iso_invoice' });
        const customer = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_iso_customer' });
        await putEvent(store, invoice);
        await putEvent(store, customer);
        await hooks.start();
        await waitFor(async () => (await getEvent(store, invoice.eventId))!.attempts >= 3, 'three attempts of the invoice event', 30_000);
        await waitFor(async () => (await getEvent(store, customer.eventId))?.status === 'done', 'the customer event done');

        expect(thrown).toBeGreaterThanOrEqual(3);
        expect(await handlersCompleted(hooks, invoice.eventId)).toEqual(['books', 'forward:ok']);
        expect(await handlersCompleted(hooks, customer.eventId)).toEqual(['connector:flaky', 'forward:ok']);
        const invoiceDetail = await getEvent(store, invoice.eventId);
        expect(invoiceDetail?.lastError).toBe('Error: the CRM rejects invoices today');
        expect(['pending', 'processing']).toContain(invoiceDetail?.status);
        // Sent once each, however often the connector's failure brought the invoice event back.
        const sent = target.received.map((r) => (JSON.parse(r.body) as ForwardDocument).eventId).sort();
        expect(sent).toEqual(['evt_iso_customer', 'evt_iso_invoice']);
      } finally {
        await hooks.stop();
        await target.close();
        await dispose(store);
      }
    },
  );
});

describe('the resource in the document, without an API key', () => {
  it("is the mirror's row when the mirror runs (the newest version it has seen), else the event's snapshot", {
    timeout: 30_000,
  }, async () => {
    const target = await scriptedTarget([]);
    const hooks = createPayhooks<ApiClient>({
      secret: 'whsec_source',
      database: { dataDir: 'memory://' },
      logger: silent,
      worker: { pollIntervalMs: 50 },
    });
    try {
      const { schema } = await registerMirror(hooks);
      await registerHttpForward(hooks, { name: 'with-mirror', url: target.url, secret: TARGET_SECRET }, { mirrorSchema: schema });
      await registerHttpForward(hooks, { name: 'without', url: target.url, secret: TARGET_SECRET });
      const store = await hooks.ready();
      const created = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_mirror_source' });
      await putEvent(store, created);
      await hooks.start();
      await waitFor(async () => (await getEvent(store, created.eventId))?.status === 'done', 'the event done');
      const bySink = Object.fromEntries(
        target.received.map((r) => JSON.parse(r.body) as ForwardDocument).map((doc) => [doc.payhooks.sink, doc.resource]),
      );
      expect(bySink['forward:with-mirror']).toMatchObject({ kind: 'customer', id: created.data.id, source: 'mirror', state: created.data });
      expect(bySink['forward:without']).toMatchObject({ kind: 'customer', id: created.data.id, source: 'event', state: created.data });
    } finally {
      await hooks.stop();
      await target.close();
    }
  });
});

describe.skipIf(!pgUrl)('dead letters per target, and replay', () => {
  it('a target answering 400 puts the event in dead letters for that target only; payhooks replay sends it again once it is fixed', {
    timeout: 90_000,
  }, async () => {
    const store = await backends[0]!.open();
    const broken = await scriptedTarget([]);
    broken.answer({ status: 400, body: '{"error":"unknown field invoice.meta"}' });
    const healthy = await scriptedTarget([]);
    const hooks = createPayhooks<ApiClient>({
      secret: 'whsec_source',
      database: { url: pgUrl!, schema: store.schema },
      logger: silent,
      worker: { pollIntervalMs: 50 },
    });
    try {
      await registerHttpForward(hooks, { name: 'broken', url: broken.url, secret: TARGET_SECRET });
      await registerHttpForward(hooks, { name: 'healthy', url: healthy.url, secret: 'whsec_other_target' });
      const event = exampleEvent('PAYMENT_COMPLETED', { eventId: 'evt_dead_letter' });
      await putEvent(store, event);
      await hooks.start();
      await waitFor(async () => (await getEvent(store, event.eventId))?.status === 'dead', 'the event dead');

      const dead = await getEvent(store, event.eventId);
      // At once: no retries spent on an answer that will not change.
      expect(dead?.attempts).toBe(1);
      expect(broken.received).toHaveLength(1);
      expect(dead?.lastError).toMatch(
        /^DeadLetterError: POST http:\/\/127\.0\.0\.1:\d+\/ answered 400 Bad Request: \{"error":"unknown field invoice\.meta"\}/,
      );
      expect(await handlersCompleted(hooks, event.eventId)).toEqual(['forward:healthy']);
      expect(dead?.givenUpHandlers).toEqual(['forward:broken']);
      // What the operator reads: which sink gave up, beside those that completed.
      const shown = await runCli(['events', 'show', event.eventId], { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: store.schema });
      expect(JSON.parse(shown.stdout)).toMatchObject({
        status: 'dead',
        completedHandlers: ['forward:healthy'],
        givenUpHandlers: ['forward:broken'],
      });

      broken.answer({ status: 204 });
      const replay = await runCli(['replay', event.eventId], { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: store.schema });
      expect(replay.code).toBe(0);
      expect(replay.stdout).toContain('re-queued 1 event');
      await waitFor(async () => (await getEvent(store, event.eventId))?.status === 'done', 'the replayed event done');
      expect(broken.received.map((r) => r.answered)).toEqual([400, 204]);
      // The healthy target had it already: the replay does not send it twice.
      expect(healthy.received).toHaveLength(1);
      expect(await handlersCompleted(hooks, event.eventId)).toEqual(['forward:broken', 'forward:healthy']);
    } finally {
      await hooks.stop();
      await broken.close();
      await healthy.close();
      await dispose(store);
    }
  });
});

describe('a forward target that does not answer', () => {
  it('times out, is retried, and the timeout is in lastError', { timeout: 30_000 }, async () => {
    const hanging = createServer(() => undefined);
    const listening = await listen(hanging);
    const hooks = createPayhooks<ApiClient>({
      secret: 'whsec_source',
      database: await openDatabase({ dataDir: 'memory://' }),
      logger: silent,
      worker: { pollIntervalMs: 50, backoff: { baseMs: 5000 } },
    });
    try {
      await registerHttpForward(hooks, { name: 'slow', url: listening.url, secret: TARGET_SECRET, timeoutMs: 300 });
      const store = await hooks.ready();
      const event = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_timeout' });
      await putEvent(store, event);
      await hooks.start();
      await waitFor(async () => (await getEvent(store, event.eventId))?.lastError != null, 'a recorded failure');
      const detail = await getEvent(store, event.eventId);
      expect(detail?.status).toBe('pending');
      expect(detail?.lastError).toMatch(/^HttpConnectionError: POST http:\/\/127\.0\.0\.1:\d+\/ failed: no answer within 300 ms$/);
    } finally {
      await hooks.stop();
      hanging.closeAllConnections();
      await listening.close();
    }
  });
});

describe('a forward target that answers with a huge body', () => {
  // Four targets answering 500 MB each took serve to 3.8 GB, for 500 characters kept.
  const HUGE = 128 * 1024 * 1024;

  it.each([
    { status: 503, outcome: 'retried, lastError holding the beginning of the answer' },
    { status: 200, outcome: 'done' },
  ])('answering $status: $outcome, after reading a few KB of it and closing the connection', { timeout: 60_000 }, async ({ status }) => {
    const target = await hugeAnswer(status, HUGE);
    const hooks = createPayhooks<ApiClient>({
      secret: 'whsec_source',
      database: await openDatabase({ dataDir: 'memory://' }),
      logger: silent,
      worker: { pollIntervalMs: 50, backoff: { baseMs: 60_000 } },
    });
    try {
      await registerHttpForward(hooks, { name: 'huge', url: `${target.url}/in`, secret: TARGET_SECRET });
      const store = await hooks.ready();
      const event = exampleEvent('CUSTOMER_CREATED', { eventId: `evt_huge_${status}` });
      await putEvent(store, event);
      const heapBefore = process.memoryUsage().heapUsed;
      await hooks.start();
      await waitFor(
        async () => {
          const now = await getEvent(store, event.eventId);
          return now?.status === 'done' || now?.lastError != null;
        },
        'the first attempt recorded',
        30_000,
      );
      await waitFor(() => target.sent.closed, 'the target to see its connection closed');
      // It could not write its answer: the sink stopped reading after a few KB and closed the connection.
      expect(target.sent.finished).toBe(false);
      expect(target.sent.bytes).toBeLessThan(32 * 1024 * 1024);
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(HUGE / 2);
      const detail = await getEvent(store, event.eventId);
      if (status === 200) {
        expect(detail).toMatchObject({ status: 'done', lastError: null });
      } else {
        expect(detail?.status).toBe('pending');
        expect(detail?.lastError).toMatch(
          /^HttpStatusError: POST http:\/\/127\.0\.0\.1:\d+\/in answered 503 Service Unavailable: BEGIN-OF-ANSWER x+…$/,
        );
        expect(detail!.lastError!.length).toBeLessThan(700);
      }
    } finally {
      await hooks.stop();
      await target.close();
    }
  });
});

describe('forward target settings', () => {
  it('are checked when the target is registered, each problem named, no secret repeated', async () => {
    const hooks = createPayhooks<ApiClient>({ secret: 'whsec_source', database: { dataDir: 'memory://' }, logger: silent });
    try {
      const error = await registerHttpForward(hooks, {
        name: 'bad',
        url: 'https://erp:hunter2pw@erp.example.com/in',
        secret: TARGET_SECRET,
        timeoutMs: 30 * 86_400_000,
        ratePerSecond: 0,
        headers: { 'x-api-key': 'key-hunter2\r\nx-injected: 1', 'idempotency-key': 'mine' },
      }).catch((err: unknown) => err);
      const message = String(error);
      expect(message).toContain('The forward target "bad" cannot be used:');
      expect(message).toMatch(/- url: holds credentials \(user:password@\).*give them as a header instead/);
      expect(message).toMatch(/- timeout: must be between 100ms and 10m, not 2592000000 ms/);
      expect(message).toMatch(/- ratePerSecond: must be between 0\.01 \(one request every 100 s\) and 10000 requests a second, not 0/);
      expect(message).toMatch(/- headers\.x-api-key: its value holds a line break/);
      expect(message).toMatch(/- headers\.idempotency-key: set by payhooks on every forwarded request/);
      expect(message).not.toContain('hunter2');
    } finally {
      await hooks.stop();
    }
  });

  it('take a fractional rate as one request every 1/rate seconds (0.5: one every 2 s)', { timeout: 90_000 }, async () => {
    expect(rateLimitSettings(20)).toEqual({ intervalCap: 20, interval: 1000 });
    expect(rateLimitSettings(0.5)).toEqual({ intervalCap: 1, interval: 2000 });
    expect(rateLimitSettings(2.5)).toEqual({ intervalCap: 1, interval: 400 });
    const target = await scriptedTarget([]);
    const hooks = createPayhooks<ApiClient>({
      secret: 'whsec_source',
      database: { dataDir: 'memory://' },
      logger: silent,
      worker: { pollIntervalMs: 50 },
    });
    try {
      await registerHttpForward(hooks, { name: 'slow', url: target.url, secret: TARGET_SECRET, ratePerSecond: 0.5 });
      const store = await hooks.ready();
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_rate_1' }));
      await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: 'evt_rate_2' }));
      // When the sink created each request (fetch's own diagnostics channel, in the call that p-queue let start), not
      // when the target read it: a loaded machine delayed the first request's arrival on its new connection by 423 ms
      // and the two arrivals were 1577 ms apart although their starts were 2 s apart.
      const started: number[] = [];
      const onCreate = (message: unknown) => {
        const { request } = message as { request: { origin: string } };
        if (request.origin === target.url) started.push(Date.now());
      };
      subscribe('undici:request:create', onCreate);
      try {
        await hooks.start();
        await waitFor(() => target.received.length === 2, 'both events forwarded', 20_000);
      } finally {
        unsubscribe('undici:request:create', onCreate);
      }
      expect(started).toHaveLength(2);
      // At most one request started in any 2 s.
      expect(started[1]! - started[0]!).toBeGreaterThanOrEqual(1900);
    } finally {
      await hooks.stop();
      await target.close();
    }
  });
});
