// Broker faults that used to take the service down or stall it (issue 22): a RabbitMQ exchange that exists with
// another type (finding 3), and a NATS connection that goes silent (finding 6). Against the real brokers, through a
// loopback TCP proxy where the network must misbehave.
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { getEvent } from '../../src/store/inbox.js';
import { type BrokerMessage, registerBrokerSink } from '../../src/sync/brokers/broker-sink.js';
import { natsPublisher } from '../../src/sync/brokers/nats.js';
import { rabbitMqPublisher } from '../../src/sync/brokers/rabbitmq.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const { rabbitmq: rabbitUp, nats: natsUp } = inject('brokers');
const silent = pino({ level: 'silent' });
const SECRET = 'whsec_broker_faults';
const AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';

function message(eventId = `evt_${randomUUID().slice(0, 8)}`): BrokerMessage {
  return { eventId, eventType: 'INVOICE_PAID', body: Buffer.from(JSON.stringify({ eventId })) };
}

/** Collects what reaches process 'uncaughtException' while `run` runs: an 'error' event nobody listened to. */
async function watchingUncaught<T>(run: (uncaught: unknown[]) => Promise<T>): Promise<T> {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    return await run(uncaught);
  } finally {
    process.off('uncaughtException', onUncaught);
  }
}

/** A payhooks on PGlite in memory with a fast worker, delivering signed events through its receiver. */
function fastHooks(worker: { maxAttempts?: number; concurrency?: number; backoff?: { baseMs: number; maxMs: number } } = {}) {
  const hooks: Payhooks<ApiClient> = createPayhooks<ApiClient>({
    secret: SECRET,
    database: { dataDir: 'memory://' },
    logger: silent,
    worker: { pollIntervalMs: 50, ...worker },
  });
  const scheme = createDefaultScheme({ secrets: SECRET });
  const deliver = async (eventId: string) => {
    // An invoice of its own each: events of one resource run one after the other, and this is about the others.
    const rawBody = JSON.stringify(exampleEvent('INVOICE_PAID', { eventId, data: { invoiceId: `inv_${eventId}` } }));
    const headers = { 'content-type': 'application/json', ...scheme.sign({ rawBody }) };
    return (await hooks.receive({ method: 'POST', headers, rawBody: Buffer.from(rawBody) })).status;
  };
  return { hooks, deliver };
}

describe.skipIf(!rabbitUp)('a RabbitMQ exchange that already exists with another type', () => {
  const refusal = (exchange: string) =>
    new RegExp(
      `RabbitMQ at amqp://127\\.0\\.0\\.1:5672/ exchange ${exchange.replace(/\./g, '\\.')} refused to declare the exchange \\(406 PRECONDITION_FAILED\\): ` +
        `exchange '${exchange.replace(/\./g, '\\.')}' exists in vhost '/' with type 'fanout', and this sink declares it with type 'topic': delete the exchange`,
    );

  it('fails each publish with what to change, never as an unhandled error event, and publishes once the exchange is gone', {
    timeout: 30_000,
  }, async () => {
    const exchange = `payhooks.test.fault.${randomUUID().slice(0, 8)}`;
    const admin = await amqp.connect(AMQP_URL);
    const channel = await admin.createChannel();
    await channel.assertExchange(exchange, 'fanout', { durable: true });
    const publisher = rabbitMqPublisher({ url: AMQP_URL, exchange, queue: exchange, confirmTimeoutMs: 3000 });
    try {
      await watchingUncaught(async (uncaught) => {
        // Twice: the second attempt opens a new connection and is refused the same way.
        const errors: unknown[] = [];
        for (let attempt = 1; attempt <= 2; attempt++) {
          errors.push(
            await publisher.publish(message(), new AbortController().signal).then(
              () => 'published',
              (err: unknown) => err,
            ),
          );
        }
        // The broker closes the channel (and amqplib emits 'error') as it refuses: give a late event its chance.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(uncaught).toEqual([]);
        for (const error of errors) {
          expect(error).toBeInstanceOf(Error);
          expect((error as Error).message).toMatch(refusal(exchange));
          expect((error as Error).message).not.toContain('guest');
        }
      });
      // Fixed as the message says: the sink declares the exchange itself at the next attempt.
      await channel.deleteExchange(exchange);
      const fixed = message();
      await publisher.publish(fixed, new AbortController().signal);
      const got = await channel.get(exchange, { noAck: true });
      expect(got === false ? 'nothing queued' : got.properties.messageId).toBe(fixed.eventId);
    } finally {
      await publisher.close();
      await channel.deleteQueue(exchange).catch(() => undefined);
      await channel.deleteExchange(exchange).catch(() => undefined);
      await admin.close();
    }
  });

  it('as a sink of the worker with maxAttempts 2: the event is tried twice and ends dead with the reason', {
    timeout: 30_000,
  }, async () => {
    const exchange = `payhooks.test.fault.${randomUUID().slice(0, 8)}`;
    const admin = await amqp.connect(AMQP_URL);
    const channel = await admin.createChannel();
    await channel.assertExchange(exchange, 'fanout', { durable: true });
    const publisher = rabbitMqPublisher({ url: AMQP_URL, exchange, queue: false });
    const { hooks, deliver } = fastHooks({ maxAttempts: 2, backoff: { baseMs: 100, maxMs: 200 } });
    try {
      await watchingUncaught(async (uncaught) => {
        await registerBrokerSink(hooks, { name: 'rabbitmq', publisher });
        const store = await hooks.ready();
        await hooks.start();
        const eventId = `evt_fault_${randomUUID().slice(0, 8)}`;
        expect(await deliver(eventId)).toBe(200);
        await waitFor(async () => (await getEvent(store, eventId))?.status === 'dead', 'the event dead after its two attempts', 20_000);
        expect(uncaught).toEqual([]);
        const event = await getEvent(store, eventId);
        expect(event).toMatchObject({ status: 'dead', attempts: 2 });
        expect(event?.lastError).toMatch(refusal(exchange));
      });
    } finally {
      await hooks.stop();
      await publisher.close();
      await channel.deleteExchange(exchange).catch(() => undefined);
      await admin.close();
    }
  });
});

describe.skipIf(!natsUp)('a NATS connection that goes silent (a 5 s blackhole: the old connection never speaks again)', () => {
  it('events flow again soon after the network is back: one delivered after the blackhole is done within 20 s', {
    timeout: 90_000,
  }, async () => {
    const suffix = randomUUID().slice(0, 8);
    const stream = `PAYHOOKS_FAULT_${suffix}`;
    const proxy = await startTcpProxy(4222);
    // The defaults that matter here: a 10 s acknowledgement wait, and the pings.
    const publisher = natsPublisher({ servers: `nats://127.0.0.1:${proxy.port}`, stream, subjectPrefix: `payhooks.fault.${suffix}` });
    const { hooks, deliver } = fastHooks({ concurrency: 4, backoff: { baseMs: 500, maxMs: 2000 } });
    const reader = await natsConnect({ servers: 'nats://127.0.0.1:4222' });
    try {
      await registerBrokerSink(hooks, { name: 'nats', publisher });
      const store = await hooks.ready();
      await hooks.start();
      const done = async (eventId: string) => (await getEvent(store, eventId))?.status === 'done';
      expect(await deliver('evt_before')).toBe(200);
      await waitFor(() => done('evt_before'), 'the first event published', 20_000);

      proxy.blackhole();
      // Events keep arriving while the network is gone: they take the worker's slots, waiting on the silent link.
      const during = Array.from({ length: 6 }, (_, i) => `evt_during_${i}`);
      for (const eventId of during) expect(await deliver(eventId)).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 5000));
      proxy.heal();
      const healedAt = Date.now();

      expect(await deliver('evt_after')).toBe(200);
      await waitFor(() => done('evt_after'), 'the first event delivered after the blackhole to be published', 20_000);
      console.info(`NATS after a 5 s blackhole: the next event was published ${Date.now() - healedAt} ms after the network came back`);
      for (const eventId of during) await waitFor(() => done(eventId), `${eventId} published`, 30_000);
      const info = await (await jetstreamManager(reader)).streams.info(stream);
      expect(info.state.messages).toBe(during.length + 2);
    } finally {
      await hooks.stop();
      await publisher.close();
      await (await jetstreamManager(reader)).streams.delete(stream).catch(() => undefined);
      await reader.close();
      await proxy.close();
    }
  });

  it('closing the sink during a blackhole returns within a few seconds, and a publish waiting then ends on its signal', {
    timeout: 60_000,
  }, async () => {
    const suffix = randomUUID().slice(0, 8);
    const stream = `PAYHOOKS_FAULT_${suffix}`;
    const proxy = await startTcpProxy(4222);
    const publisher = natsPublisher({ servers: `nats://127.0.0.1:${proxy.port}`, stream, subjectPrefix: `payhooks.fault.${suffix}` });
    const reader = await natsConnect({ servers: 'nats://127.0.0.1:4222' });
    try {
      await publisher.publish(message(), new AbortController().signal);
      proxy.blackhole();
      // What the worker does at its stop timeout: abort the handler's signal.
      const shutdown = new AbortController();
      const waiting = publisher.publish(message(), shutdown.signal).then(
        () => 'published',
        (err: unknown) => err,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      shutdown.abort(new Error('worker shutting down'));
      expect(String(await waiting)).toBe('Error: worker shutting down');

      const started = Date.now();
      const closed = await Promise.race([
        publisher.close().then(() => 'closed'),
        new Promise((resolve) => setTimeout(() => resolve('still closing after 5 s'), 5000)),
      ]);
      expect(closed).toBe('closed');
      console.info(`NATS sink closed during a blackhole in ${Date.now() - started} ms`);
    } finally {
      proxy.heal();
      await (await jetstreamManager(reader)).streams.delete(stream).catch(() => undefined);
      await reader.close();
      await proxy.close();
    }
  });
});
