import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { EVENT_TYPES, exampleEvent, type WebhookEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { type BrokerPublisher, registerBrokerSink } from '../../src/sync/brokers/broker-sink.js';
import { natsPublisher } from '../../src/sync/brokers/nats.js';
import { rabbitMqPublisher } from '../../src/sync/brokers/rabbitmq.js';
import type { ForwardDocument } from '../../src/sync/forward-document.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const SECRET = 'whsec_brokers';
const EVENTS = 1000;
const DUPLICATE_SHARE = 0.3;

// Probed once by test/global-setup.ts, which fails the run under CI when a broker is missing.
const { rabbitmq: rabbitUp, nats: natsUp } = inject('brokers');

/** Seeded pseudo-random numbers, so that a failure can be run again with the same order. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** `EVENTS` distinct events of every type, then a share of them again, all shuffled. */
function shuffledDeliveries(): { events: WebhookEvent[]; deliveries: WebhookEvent[] } {
  const random = seeded(12);
  // A resource of its own each: the events of one resource run one at a time, and this is about the sink, not order.
  const events = Array.from({ length: EVENTS }, (_, i) =>
    withOwnResource(exampleEvent(EVENT_TYPES[i % EVENT_TYPES.length]!, { eventId: `evt_b${i}_${randomUUID().slice(0, 8)}` }), `b${i}`),
  );
  const deliveries = [...events, ...events.filter(() => random() < DUPLICATE_SHARE)];
  for (let i = deliveries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
  }
  return { events, deliveries };
}

/**
 * Delivers every event, signed, through the receiver, cuts the broker's connection once a third of them are
 * published, restores it a second and a half later, and waits until every event is done.
 */
async function runThroughSink(
  name: string,
  publisher: BrokerPublisher,
  proxy: TcpProxy,
): Promise<{ events: WebhookEvent[]; duplicates: number; retried: number }> {
  const { events, deliveries } = shuffledDeliveries();
  const hooks: Payhooks<ApiClient> = createPayhooks<ApiClient>({
    secret: SECRET,
    database: { dataDir: 'memory://' },
    logger: silent,
    worker: { pollIntervalMs: 50, concurrency: 16, handlerTimeoutMs: 10_000, backoff: { baseMs: 100, maxMs: 1000 } },
  });
  const scheme = createDefaultScheme({ secrets: SECRET });
  try {
    await registerBrokerSink(hooks, { name, publisher });
    const store = await hooks.ready();
    await hooks.start();
    const published = async () => {
      const row = await store.db
        .selectFrom('handler_runs')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('handler', '=', `broker:${name}`)
        .executeTakeFirstOrThrow();
      return row.n;
    };
    const answered: number[] = [];
    const delivering = (async () => {
      for (let i = 0; i < deliveries.length; i += 25) {
        await Promise.all(
          deliveries.slice(i, i + 25).map(async (event) => {
            const rawBody = JSON.stringify(event);
            const headers = { 'content-type': 'application/json', ...scheme.sign({ rawBody }) };
            answered.push((await hooks.receive({ method: 'POST', headers, rawBody: Buffer.from(rawBody) })).status);
          }),
        );
      }
    })();
    await waitFor(async () => (await published()) >= EVENTS / 3, 'a third of the events published', 60_000);
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await proxy.restore();
    await delivering;
    expect(answered.filter((status) => status !== 200)).toEqual([]);
    await waitFor(
      async () => {
        const { rows } = await sql<{
          done: number;
        }>`select count(*) filter (where status = 'done')::int as done from ${sql.id(store.schema, 'inbox_event_states')}`.execute(
          store.db.withoutPlugins(),
        );
        return rows[0]!.done === EVENTS;
      },
      `all ${EVENTS} events done`,
      90_000,
    );
    const retried = await store.db.selectFrom('inbox_events').select('event_id').where('attempts', '>', 1).execute();
    // The cut must have hit publishes in flight or due, or this run proved nothing about it.
    expect(retried.length).toBeGreaterThan(0);
    return { events, duplicates: deliveries.length - events.length, retried: retried.length };
  } finally {
    await hooks.stop();
    await publisher.close();
  }
}

describe.skipIf(!rabbitUp)('the RabbitMQ sink', () => {
  it(`${EVENTS} events delivered shuffled with ${DUPLICATE_SHARE * 100}% duplicates, the connection cut and restored mid-run: each event reaches the queue at least once`, {
    timeout: 180_000,
  }, async () => {
    const suffix = randomUUID().slice(0, 8);
    const exchange = `payhooks.test.${suffix}`;
    const queue = `payhooks.test.${suffix}`;
    const proxy = await startTcpProxy(5672);
    const publisher = rabbitMqPublisher({ url: `amqp://guest:guest@127.0.0.1:${proxy.port}`, exchange, queue, confirmTimeoutMs: 3000 });
    const consumer = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    try {
      const { events, duplicates, retried } = await runThroughSink('rabbitmq', publisher, proxy);
      const channel = await consumer.createChannel();
      const seen = new Map<string, number>();
      let messages = 0;
      await channel.consume(queue, (message) => {
        if (!message) return;
        messages++;
        const document = JSON.parse(message.content.toString('utf8')) as ForwardDocument;
        expect(message.properties.messageId).toBe(document.eventId);
        expect(message.fields.routingKey).toBe(document.eventType);
        expect(message.properties.deliveryMode).toBe(2);
        seen.set(document.eventId, (seen.get(document.eventId) ?? 0) + 1);
        channel.ack(message);
      });
      await waitFor(() => seen.size >= EVENTS, `${EVENTS} distinct events consumed`, 30_000);
      // Whatever is still queued has arrived by now: a last look after a quiet moment.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect([...seen.keys()].sort()).toEqual(events.map((e) => e.eventId).sort());
      const repeated = [...seen.values()].filter((n) => n > 1).length;
      console.info(
        `RabbitMQ: ${events.length} events (+${duplicates} duplicate deliveries), ${messages} messages consumed, ${repeated} events published more than once; ${retried} events retried after the cut`,
      );
      await channel.deleteQueue(queue);
      await channel.deleteExchange(exchange);
    } finally {
      await consumer.close();
      await proxy.close();
    }
  });

  it('a broker that is not there: the publish fails with the reason, and the event waits for a retry', { timeout: 30_000 }, async () => {
    const publisher = rabbitMqPublisher({ url: 'amqp://guest:guest@127.0.0.1:9', exchange: 'x' });
    const error = await publisher
      .publish({ eventId: 'evt_1', eventType: 'INVOICE_PAID', body: Buffer.from('{}') }, new AbortController().signal)
      .catch((err: unknown) => err);
    expect(String(error)).toMatch(/cannot connect to RabbitMQ at amqp:\/\/127\.0\.0\.1:9\/ exchange x: .*ECONNREFUSED/);
    expect(String(error)).not.toContain('guest:guest');
    await publisher.close();
  });
});

describe.skipIf(!natsUp)('the NATS JetStream sink', () => {
  it(`${EVENTS} events delivered shuffled with ${DUPLICATE_SHARE * 100}% duplicates, the connection cut and restored mid-run: each event is in the stream exactly once`, {
    timeout: 180_000,
  }, async () => {
    const suffix = randomUUID().slice(0, 8);
    const stream = `PAYHOOKS_TEST_${suffix}`;
    const subjectPrefix = `payhooks.test.${suffix}`;
    const proxy = await startTcpProxy(4222);
    const publisher = natsPublisher({ servers: `nats://127.0.0.1:${proxy.port}`, stream, subjectPrefix, ackTimeoutMs: 2000 });
    const reader = await natsConnect({ servers: 'nats://127.0.0.1:4222' });
    try {
      const { events, duplicates, retried } = await runThroughSink('nats', publisher, proxy);
      const manager = await jetstreamManager(reader);
      const info = await manager.streams.info(stream);
      expect(info.state.messages).toBe(EVENTS);
      const consumer = await jetstream(reader).consumers.get(stream);
      const seen = new Map<string, number>();
      const batch = await consumer.fetch({ max_messages: EVENTS, expires: 5000 });
      for await (const message of batch) {
        const id = message.headers?.get('Nats-Msg-Id') ?? '';
        const document = message.json<ForwardDocument>();
        expect(id).toBe(document.eventId);
        expect(message.subject).toBe(`${subjectPrefix}.${document.eventType}`);
        seen.set(id, (seen.get(id) ?? 0) + 1);
        if (seen.size === EVENTS) break;
      }
      expect([...seen.keys()].sort()).toEqual(events.map((e) => e.eventId).sort());
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      console.info(
        `NATS JetStream: ${events.length} events (+${duplicates} duplicate deliveries), ${info.state.messages} messages in the stream; ${retried} events retried after the cut`,
      );
      await manager.streams.delete(stream);
    } finally {
      await reader.close();
      await proxy.close();
    }
  });
});
