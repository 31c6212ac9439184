// Issue 46, finding 6: whose trace a delivery joins. Anyone who can reach /webhooks can send a `traceparent`; the
// receive span must not become a child of it (attaching spans to any trace of the team's backend) nor take its sampled
// flag (forcing junk to be sampled). By default every delivery starts a trace of its own, linked to the context it
// carried; with trustIncomingTraceContext, a delivery whose signature holds is a child of it, and only such a one.
// Real OpenTelemetry SDK, spans kept by its in-memory exporter; the receiver on an in-memory PGlite.
import { context, propagation, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  InMemorySpanExporter,
  NodeTracerProvider,
  ParentBasedSampler,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createReceiver, type Receiver } from '../../src/receiver/receiver.js';
import { defineServiceConfig } from '../../src/service/service-config.js';
import { startService } from '../../src/service/start-service.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { type SignedRequest, signedRequest } from '../../src/testing/index.js';
import { backends, dispose } from '../helpers/stores.js';

const SECRET = 'whsec_trace_context';
// A trace somebody else chose: the sender's, or a stranger's.
const INCOMING_TRACE = '0af7651916cd43dd8448eb211c80319c';
const INCOMING_SPAN = 'b7ad6b7169203331';
const TRACEPARENT = `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01`;
const TRACESTATE = 'vendor=opaque';
const pglite = backends.find((backend) => backend.name === 'pglite')!;

let n = 0;
/** A delivery carrying the incoming trace context, signed with `secret`. */
function delivery(secret: string): SignedRequest & { headers: Record<string, string> } {
  const request = signedRequest(exampleEvent('CUSTOMER_CREATED', { eventId: `evt_trace_context_${++n}` }), { secret });
  return { ...request, headers: { ...request.headers, traceparent: TRACEPARENT, tracestate: TRACESTATE } };
}

/** The one receive span the exporter holds, after `exporter.reset()` and one delivery. */
function receiveSpan(exporter: InMemorySpanExporter): ReadableSpan {
  const spans = exporter.getFinishedSpans().filter((span) => span.name === 'webhook.receive');
  expect(spans).toHaveLength(1);
  return spans[0]!;
}

/** What the trace tree shows of a span: its trace, its parent, its links. */
function placeOf(span: ReadableSpan) {
  return {
    inIncomingTrace: span.spanContext().traceId === INCOMING_TRACE,
    parentSpanId: span.parentSpanContext?.spanId,
    links: span.links.map((link) => ({
      traceId: link.context.traceId,
      spanId: link.context.spanId,
      traceFlags: link.context.traceFlags,
      tracestate: link.context.traceState?.serialize(),
    })),
  };
}

/** Takes `provider` off the global API again, so that the files run after this one in the same worker trace nothing. */
async function unregister(provider: NodeTracerProvider): Promise<void> {
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
}

const LINKED = {
  inIncomingTrace: false,
  parentSpanId: undefined,
  links: [{ traceId: INCOMING_TRACE, spanId: INCOMING_SPAN, traceFlags: 1, tracestate: TRACESTATE }],
};
const CHILD = { inIncomingTrace: true, parentSpanId: INCOMING_SPAN, links: [] };

describe('whose trace a delivery joins (every span sampled)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let store: PayhooksDatabase;
  let untrusting: Receiver;
  let trusting: Receiver;

  beforeAll(async () => {
    provider.register();
    store = await pglite.open();
    const scheme = createDefaultScheme({ secrets: [SECRET] });
    untrusting = createReceiver({ store, scheme });
    trusting = createReceiver({ store, scheme, trustIncomingTraceContext: true });
  });
  afterAll(async () => {
    await dispose(store);
    await unregister(provider);
  });

  it('by default, signed or not, the receive span is the root of a trace of its own, linked to the incoming context', async () => {
    exporter.reset();
    expect((await untrusting.receive(delivery(SECRET))).status).toBe(200);
    const signed = receiveSpan(exporter);
    expect(placeOf(signed)).toEqual(LINKED);
    expect(signed.attributes['payhooks.signature.outcome']).toBe('verified');
    // The stored context, which every attempt links to, is the receive span's, not the incoming one.
    const children = exporter.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === signed.spanContext().spanId);
    expect(children.map((span) => span.name)).toEqual(['payhooks.group_commit']);

    exporter.reset();
    expect((await untrusting.receive(delivery('not-the-secret'))).status).toBe(401);
    const forged = receiveSpan(exporter);
    expect(placeOf(forged)).toEqual(LINKED);
    expect(forged.attributes['payhooks.signature.outcome']).toBe('no_matching_signature');
  });

  it('without a valid traceparent there is nothing to link to', async () => {
    exporter.reset();
    const plain = delivery(SECRET);
    plain.headers.traceparent = '00-00000000000000000000000000000000-b7ad6b7169203331-01';
    expect((await untrusting.receive(plain)).status).toBe(200);
    expect(placeOf(receiveSpan(exporter))).toEqual({ inIncomingTrace: false, parentSpanId: undefined, links: [] });
  });

  it('under an app span active when the route runs, the receive span is its child, still only linked to the incoming context', async () => {
    exporter.reset();
    const app = provider.getTracer('app').startSpan('POST /webhooks');
    await context.with(trace.setSpan(context.active(), app), () => untrusting.receive(delivery('not-the-secret')));
    app.end();
    const receive = receiveSpan(exporter);
    expect(receive.parentSpanContext?.spanId).toBe(app.spanContext().spanId);
    expect(placeOf(receive).links).toEqual(LINKED.links);
  });

  it('trusting the incoming context: a child of it once the signature holds, a linked root when it does not', async () => {
    exporter.reset();
    expect((await trusting.receive(delivery(SECRET))).status).toBe(200);
    const signed = receiveSpan(exporter);
    expect(placeOf(signed)).toEqual(CHILD);
    expect(signed.attributes['payhooks.signature.outcome']).toBe('verified');

    exporter.reset();
    expect((await trusting.receive(delivery('not-the-secret'))).status).toBe(401);
    const forged = receiveSpan(exporter);
    expect(placeOf(forged)).toEqual(LINKED);
    expect(forged.attributes).toMatchObject({ 'payhooks.signature.outcome': 'no_matching_signature', 'http.response.status_code': 401 });

    // A request refused before its signature is checked (not JSON) is no sender's either.
    exporter.reset();
    const notJson = delivery(SECRET);
    notJson.headers['content-type'] = 'text/plain';
    expect((await trusting.receive(notJson)).status).toBe(415);
    expect(placeOf(receiveSpan(exporter))).toEqual(LINKED);
  });

  it("serve's tracing.trustIncomingContext reaches its receiver (the default is serve-tracing.test.ts's)", {
    timeout: 60_000,
  }, async () => {
    const service = await startService(
      defineServiceConfig({
        receiver: { host: '127.0.0.1', port: 0, secrets: [SECRET] },
        database: { dataDir: 'memory://' },
        metrics: { processMetrics: false },
        tracing: { trustIncomingContext: true },
      }),
      { logger: pino({ level: 'silent' }), role: 'receiver' },
    );
    try {
      exporter.reset();
      expect((await fetch(`${service.url}/webhooks`, delivery(SECRET))).status).toBe(200);
      expect(placeOf(receiveSpan(exporter))).toEqual(CHILD);
      exporter.reset();
      expect((await fetch(`${service.url}/webhooks`, delivery('not-the-secret'))).status).toBe(401);
      expect(placeOf(receiveSpan(exporter))).toEqual(LINKED);
    } finally {
      await service.close();
    }
  });

  it('trusting, the span still covers the whole request: it starts before the signature is checked', async () => {
    const scheme = createDefaultScheme({ secrets: [SECRET] });
    let checkedAt = Number.NaN;
    // The real scheme, noting when it is asked.
    const noting = createReceiver({
      store,
      scheme: {
        ...scheme,
        verify(input) {
          checkedAt = performance.timeOrigin + performance.now();
          return scheme.verify(input);
        },
      },
      trustIncomingTraceContext: true,
    });
    exporter.reset();
    expect((await noting.receive(delivery(SECRET))).status).toBe(200);
    const [seconds, nanos] = receiveSpan(exporter).startTime;
    expect(checkedAt).toBeGreaterThan(0);
    expect(seconds * 1000 + nanos / 1e6).toBeLessThan(checkedAt);
  });
});

describe('whose sampling decision it is (a sampler that records no trace of its own: the incoming sampled flag would decide)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    sampler: new ParentBasedSampler({ root: new AlwaysOffSampler() }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  let store: PayhooksDatabase;

  beforeAll(async () => {
    provider.register();
    store = await pglite.open();
  });
  afterAll(async () => {
    await dispose(store);
    await unregister(provider);
  });

  it("a stranger's sampled flag samples nothing; a signed delivery, trusted, is sampled as its sender said", async () => {
    const scheme = createDefaultScheme({ secrets: [SECRET] });
    const untrusting = createReceiver({ store, scheme });
    const trusting = createReceiver({ store, scheme, trustIncomingTraceContext: true });
    exporter.reset();
    expect((await untrusting.receive(delivery('not-the-secret'))).status).toBe(401);
    expect((await untrusting.receive(delivery(SECRET))).status).toBe(200);
    expect((await trusting.receive(delivery('not-the-secret'))).status).toBe(401);
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual([]);

    // The exporter does get what is sampled: the trusted, signed delivery, in the sender's trace.
    expect((await trusting.receive(delivery(SECRET))).status).toBe(200);
    expect(placeOf(receiveSpan(exporter))).toEqual(CHILD);
  });
});
