// Issue 28, in-process: one delivery of a CUSTOMER_CREATED whose handler reads the simulator's API and whose forward
// target fails once, traced with the OpenTelemetry SDK's in-memory exporter. The spans form the tree of
// docs/tracing.md, each attempt links to the receive span, the target gets the traceparent of its own request's span,
// log lines carry the ids, and no attribute holds the email, the phone number, the body or a secret.
import { createServer, type IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createLogger } from '../../src/logger.js';
import { createPayhooks } from '../../src/payhooks.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { getEvent } from '../../src/store/inbox.js';
import { registerHttpForward } from '../../src/sync/http-forward.js';
import { signedRequest } from '../../src/testing/index.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'whsec_tracing_source';
const TARGET_SECRET = 'whsec_tracing_target';
const API_KEY = 'sk_test_tracing_tree';
const EMAIL = 'ada.tracing@example.com';
const PHONE = '+525512345678';
// An upstream trace the delivery arrives in (the sender's, or a gateway's).
const UPSTREAM_TRACE = '0af7651916cd43dd8448eb211c80319c';
const UPSTREAM_SPAN = 'b7ad6b7169203331';

const SERVER = 1;
const CLIENT = 2;
const CONSUMER = 4;

describe('one delivery traced from receipt to its effects (in-memory exporter)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let simulator: Simulator;

  beforeAll(async () => {
    provider.register();
    simulator = await startSimulator();
  });
  afterAll(async () => {
    await simulator?.close();
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it("receive (with its group commit) a trace of its own linked to the sender's; each attempt a trace of its own linked to it; handler, sink and client spans below", async () => {
    const api = createClient({ apiKey: API_KEY, environment: simulator.url, maxRetries: 0 });
    const customer = await api.customers.create({ username: 'ada-tracing', email: EMAIL, phoneNumber: PHONE });
    const received: { traceparent: string | undefined; status: number }[] = [];
    let answers = 0;
    const target = await listen(
      createServer((req: IncomingMessage, res) => {
        req.resume();
        req.on('end', () => {
          const status = answers++ === 0 ? 503 : 200;
          received.push({ traceparent: req.headers.traceparent as string | undefined, status });
          res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
        });
      }),
    );
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
          done();
        },
      }),
    );
    const hooks = createPayhooks<ApiClient>({
      secret: SECRET,
      database: { dataDir: 'memory://' },
      logger,
      api,
      worker: { pollIntervalMs: 50, backoff: { baseMs: 100, maxMs: 200 } },
    });
    const event = exampleEvent('CUSTOMER_CREATED', {
      eventId: 'evt_tracing_tree',
      data: { id: customer.id, email: EMAIL, phoneNumber: PHONE },
    });
    try {
      hooks.on(
        'CUSTOMER_CREATED',
        async (e, ctx) => {
          const current = await ctx.api!.customers.get(e.data.id, { signal: ctx.signal });
          ctx.logger.info({ customerId: current.id }, 'crm updated');
        },
        { name: 'crm' },
      );
      await registerHttpForward(hooks, { name: 'erp', url: `${target.url}/inbound`, secret: TARGET_SECRET });
      await hooks.start();
      exporter.reset();

      const request = signedRequest(event, { secret: SECRET });
      const answer = await hooks.receive({
        method: 'POST',
        headers: { ...request.headers, traceparent: `00-${UPSTREAM_TRACE}-${UPSTREAM_SPAN}-01` },
        rawBody: request.rawBody,
      });
      expect(answer.status).toBe(200);
      const store = await hooks.ready();
      await waitFor(async () => (await getEvent(store, event.eventId))?.status === 'done', 'the event done', 20_000);
      await provider.forceFlush();
      const spans = exporter.getFinishedSpans();
      const named = (name: string) => spans.filter((s) => s.name === name);
      const childrenOf = (parent: ReadableSpan) => spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

      // The receive span: a server span at the root of a trace of its own, linked to the context the delivery carried
      // (a traceparent anyone could have written: docs/tracing.md#whose-trace-a-delivery-joins), its group commit a child.
      const [receive] = named('webhook.receive');
      expect(receive).toBeDefined();
      expect(receive!.kind).toBe(SERVER);
      expect(receive!.spanContext().traceId).not.toBe(UPSTREAM_TRACE);
      expect(receive!.parentSpanContext).toBeUndefined();
      expect(receive!.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([[UPSTREAM_TRACE, UPSTREAM_SPAN]]);
      const receiveTrace = receive!.spanContext().traceId;
      expect(receive!.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.response.status_code': 200,
        'payhooks.delivery.outcome': 'stored',
        'payhooks.signature.outcome': 'verified',
        'messaging.message.id': event.eventId,
        'payhooks.event.type': 'CUSTOMER_CREATED',
      });
      expect(childrenOf(receive!).map((s) => s.name)).toEqual(['payhooks.group_commit']);
      const receiveParent = `00-${receiveTrace}-${receive!.spanContext().spanId}-01`;
      const row = await store.db.selectFrom('inbox_events').select('trace_parent').where('event_id', '=', event.eventId).executeTakeFirst();
      expect(row?.trace_parent).toBe(receiveParent);

      // Two attempts (the target failed once), each the root of a trace of its own, linked to the receive span.
      const attempts = named('webhook.process').sort(
        (a, b) => Number(a.attributes['payhooks.event.attempt']) - Number(b.attributes['payhooks.event.attempt']),
      );
      expect(attempts.map((s) => s.attributes['payhooks.event.attempt'])).toEqual([1, 2]);
      expect(attempts.map((s) => s.attributes['payhooks.event.outcome'])).toEqual(['retry', 'done']);
      for (const attempt of attempts) {
        expect(attempt.kind).toBe(CONSUMER);
        expect(attempt.parentSpanContext).toBeUndefined();
        expect(attempt.spanContext().traceId).not.toBe(receiveTrace);
        expect(attempt.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([[receiveTrace, receive!.spanContext().spanId]]);
      }
      const [first, second] = attempts as [ReadableSpan, ReadableSpan];

      // Attempt 1: the handler (its API read a client span under it) and the sink (its failed request under it).
      const firstChildren = childrenOf(first);
      expect(firstChildren.map((s) => `${s.name} ${s.attributes['payhooks.handler.name']}`).sort()).toEqual([
        'webhook.handler crm',
        'webhook.sink forward:erp',
      ]);
      const crm = firstChildren.find((s) => s.name === 'webhook.handler')!;
      const [read] = childrenOf(crm);
      expect(read).toMatchObject({ name: 'GET', kind: CLIENT });
      expect(read!.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.response.status_code': 200 });
      expect(String(read!.attributes['url.full'])).toBe(`${simulator.url}/v1/customers/${customer.id}`);
      const sinkFirst = firstChildren.find((s) => s.name === 'webhook.sink')!;
      expect(sinkFirst.attributes['payhooks.sink.kind']).toBe('http-forward');
      expect(sinkFirst.status.code).toBe(2);
      // The sink reads the customer's current state (GET) before it posts the document, in its effect step `send`.
      expect(childrenOf(sinkFirst).map((s) => s.name)).toEqual(['GET', 'effect send']);
      const sendFirst = childrenOf(sinkFirst).find((s) => s.name === 'effect send')!;
      expect(sendFirst.attributes).toMatchObject({ 'payhooks.effect.name': 'send', 'payhooks.effect.calls': 1 });
      const failedPost = childrenOf(sendFirst).find((s) => s.name === 'POST');
      expect(failedPost?.kind).toBe(CLIENT);
      expect(failedPost!.attributes).toMatchObject({ 'http.response.status_code': 503, 'error.type': '503' });

      // Attempt 2: only the sink runs again (the handler completed), and its request succeeds.
      const secondChildren = childrenOf(second);
      expect(secondChildren.map((s) => s.name)).toEqual(['webhook.sink']);
      // The step failed (503), so it is called again, its second call.
      const sendSecond = childrenOf(secondChildren[0]!).find((s) => s.name === 'effect send')!;
      expect(sendSecond.attributes).toMatchObject({ 'payhooks.effect.calls': 2 });
      const post = childrenOf(sendSecond).find((s) => s.name === 'POST');
      expect(post!.attributes).toMatchObject({ 'http.response.status_code': 200 });

      // The target got, on each request, the traceparent of that request's own client span.
      expect(received.map((r) => r.status)).toEqual([503, 200]);
      expect(received.map((r) => r.traceparent)).toEqual(
        [failedPost!, post!].map((s) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`),
      );

      // Log lines written inside a span carry its ids: the handler's own line, under its span.
      const handlerLine = lines.find((line) => line.msg === 'crm updated');
      expect(handlerLine).toMatchObject({ trace_id: first.spanContext().traceId, span_id: crm.spanContext().spanId });

      // No attribute or status message holds the email, the phone number, the body or a secret.
      const body = Buffer.from(request.rawBody).toString('utf8');
      for (const span of spans) {
        const texts = [...Object.values(span.attributes).map(String), span.status.message ?? '', span.name];
        for (const text of texts) {
          for (const forbidden of [EMAIL, PHONE, SECRET, TARGET_SECRET, API_KEY, body]) expect(text).not.toContain(forbidden);
          expect(text).not.toMatch(/@example\.com/);
        }
      }
    } finally {
      await hooks.stop();
      await target.close();
    }
  });
});
