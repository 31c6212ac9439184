// Issue 28: each broker sink publishes in a producer span under the handler's span and sends that span's traceparent
// with the message (an AMQP header, a NATS header, a Redis Streams field), read back here from the real brokers.
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { createClient as createRedisClient } from '@redis/client';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import amqp from 'amqplib';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import type { Sink } from '../../src/sync/sink.js';
import { sinkKind } from '../../src/sync/sink-registry.js';
import type { HandlerContext } from '../../src/worker/handlers.js';

const { rabbitmq: rabbitUp, nats: natsUp, redis: redisUp } = inject('brokers');
const silent = pino({ level: 'silent' });
const PRODUCER = 3;

describe('trace context on broker messages', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => provider.register());
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  /** Publishes one event through `sink` inside a span standing for the worker's sink span; the producer span it made. */
  async function publishTraced(sink: Sink): Promise<{ eventId: string; producer: ReadableSpan }> {
    exporter.reset();
    const event = exampleEvent('INVOICE_PAID', { eventId: `evt_trace_${randomUUID().slice(0, 8)}` });
    const signal = AbortSignal.timeout(15_000);
    // The step runs once, as on a first attempt (its recording is the effect ledger's, tested in test/worker/effects.test.ts).
    const effect = (_name: string, fn: (step: { key: string; signal: AbortSignal; calls: number }) => unknown) =>
      fn({ key: 'k', signal, calls: 1 });
    const ctx = { signal, receivedAt: new Date(), logger: silent, effect } as unknown as HandlerContext<ApiClient>;
    await trace.getTracer('test').startActiveSpan('webhook.sink', async (span) => {
      try {
        await sink.handle(event, ctx, async () => null);
      } finally {
        span.end();
      }
    });
    const sinkSpan = exporter.getFinishedSpans().find((s) => s.name === 'webhook.sink')!;
    const producers = exporter.getFinishedSpans().filter((s) => s.kind === PRODUCER);
    expect(producers).toHaveLength(1);
    expect(producers[0]!.parentSpanContext?.spanId).toBe(sinkSpan.spanContext().spanId);
    expect(producers[0]!.attributes['messaging.message.id']).toBe(event.eventId);
    return { eventId: event.eventId, producer: producers[0]! };
  }

  const traceParentOf = (span: ReadableSpan) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;

  it.skipIf(!rabbitUp)('RabbitMQ: the AMQP header traceparent of the message is its publish span', async () => {
    const name = `payhooks.trace.${randomUUID().slice(0, 8)}`;
    const kind = sinkKind('rabbitmq');
    const sink = await kind.create(kind.schema.parse({ url: 'amqp://guest:guest@127.0.0.1:5672', exchange: name, queue: name }), {
      logger: silent,
    } as never);
    const consumer = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    try {
      const { eventId, producer } = await publishTraced(sink);
      expect(producer.name).toBe(`send ${name}`);
      expect(producer.attributes).toMatchObject({ 'messaging.system': 'rabbitmq', 'messaging.destination.name': name });
      const channel = await consumer.createChannel();
      const message = await channel.get(name);
      expect(message ? message.properties.messageId : undefined).toBe(eventId);
      expect(message ? message.properties.headers?.traceparent : undefined).toBe(traceParentOf(producer));
      await channel.deleteQueue(name);
      await channel.deleteExchange(name);
    } finally {
      await sink.close();
      await consumer.close();
    }
  });

  it.skipIf(!natsUp)('NATS JetStream: the message header traceparent is its publish span', async () => {
    const suffix = randomUUID().slice(0, 8);
    const stream = `PAYHOOKS_TRACE_${suffix}`;
    const subjectPrefix = `payhooks.trace.${suffix}`;
    const kind = sinkKind('nats');
    const sink = await kind.create(kind.schema.parse({ servers: 'nats://127.0.0.1:4222', stream, subjectPrefix }), {
      logger: silent,
    } as never);
    const connection = await natsConnect({ servers: 'nats://127.0.0.1:4222' });
    try {
      const { eventId, producer } = await publishTraced(sink);
      expect(producer.attributes).toMatchObject({ 'messaging.system': 'nats', 'messaging.destination.name': subjectPrefix });
      const consumer = await jetstream(connection).consumers.get(stream);
      const message = await consumer.next({ expires: 5000 });
      expect(message?.headers?.get('Nats-Msg-Id')).toBe(eventId);
      expect(message?.headers?.get('traceparent')).toBe(traceParentOf(producer));
      await (await jetstreamManager(connection)).streams.delete(stream);
    } finally {
      await sink.close();
      await connection.close();
    }
  });

  it.skipIf(!redisUp)('Redis Streams: the entry field traceparent is its publish span', async () => {
    const stream = `payhooks:trace:${randomUUID().slice(0, 8)}`;
    const kind = sinkKind('redis-streams');
    const sink = await kind.create(kind.schema.parse({ url: 'redis://127.0.0.1:6379', stream }), { logger: silent } as never);
    const client = createRedisClient({ url: 'redis://127.0.0.1:6379' });
    await client.connect();
    try {
      const { eventId, producer } = await publishTraced(sink);
      expect(producer.attributes).toMatchObject({ 'messaging.system': 'redis', 'messaging.destination.name': stream });
      const [entry] = (await client.xRange(stream, '-', '+')) ?? [];
      expect(entry?.message.eventId).toBe(eventId);
      expect(entry?.message.traceparent).toBe(traceParentOf(producer));
      await client.del(stream);
    } finally {
      await sink.close();
      client.destroy();
    }
  });
});
