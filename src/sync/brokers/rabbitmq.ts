// The client is loaded when a publisher first opens (open() below), so that `import 'payhooks'` does not load it.
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import type { Logger } from 'pino';
import { z } from 'zod';
import { eventTypesField, secretField, sinkNameField } from '../config-fields.js';
import { defineSinkKind } from '../sink.js';
import { abortableWait, type BrokerMessage, type BrokerPublisher, brokerSink } from './broker-sink.js';
import { BrokerSetupError, LINK_END_TIMEOUT_MS, lazyLink } from './lazy-link.js';
import { explainRabbitMqError, type RabbitMqStep } from './rabbitmq-errors.js';
import { within } from '../../internal/within.js';
import { describeUrl } from '../../internal/describe-url.js';

/** Where and how the RabbitMQ sink publishes. */
export interface RabbitMqOptions {
  /** `amqp://user:password@host:5672/vhost`. */
  url: string;
  /** A durable topic exchange, declared if missing. Default `payhooks.events`. */
  exchange?: string | undefined;
  /**
   * A durable queue bound to the exchange for every event (`#`), declared if missing, so that messages published
   * before any consumer binds are kept. Default `payhooks.events`; `false` to publish to the exchange alone (then a
   * message no queue is bound for is dropped by the broker, as AMQP does).
   */
  queue?: string | false | undefined;
  /** How long a publish waits for the broker's confirmation. Default 10 s. */
  confirmTimeoutMs?: number | undefined;
  logger?: Logger | undefined;
}

/** The defaults of the RabbitMQ sink. */
export const RABBITMQ_DEFAULTS = { exchange: 'payhooks.events', queue: 'payhooks.events', confirmTimeoutMs: 10_000 } as const;

interface Link {
  connection: ChannelModel;
  channel: ConfirmChannel;
  /** Why the connection or its channel went away, once it has: what a publish waiting on it fails with. */
  broken(): Error | undefined;
}

/**
 * A RabbitMQ publisher (AMQP 0-9-1): persistent messages on a confirm channel, the event type as routing key, the
 * eventId as message id. It connects on first use and again after the connection drops; a publish in flight when
 * it drops fails, and the worker publishes again.
 *
 * Whatever the broker refuses (an exchange that exists with another type, a queue with other arguments, a user
 * without the permission) fails the publish with a message that says what to change, and the event is retried
 * with backoff like any failed sink; the process never sees an unhandled 'error' event (issue 22, finding 3).
 *
 * @example
 * const publisher = rabbitMqPublisher({ url: 'amqp://guest:guest@127.0.0.1:5672' });
 */
export function rabbitMqPublisher(options: RabbitMqOptions): BrokerPublisher {
  const exchange = options.exchange ?? RABBITMQ_DEFAULTS.exchange;
  const queue = options.queue === undefined ? RABBITMQ_DEFAULTS.queue : options.queue;
  const confirmTimeoutMs = options.confirmTimeoutMs ?? RABBITMQ_DEFAULTS.confirmTimeoutMs;
  const where = `${describeUrl(options.url)} exchange ${exchange}`;
  // A connection that never answers the close handshake is left to amqplib's heartbeat, which destroys it.
  const link = lazyLink('RabbitMQ', where, open, { end: ({ connection }) => connection.close() });

  async function open(lost: () => void): Promise<Link> {
    const { default: amqp } = await import('amqplib');
    const connection = await amqp.connect(options.url, { timeout: 5000 });
    let step: RabbitMqStep = 'open a channel';
    let ready = false;
    let broken: Error | undefined;
    // Listeners first, before any operation: an 'error' event nobody listens to stops the process, and the broker
    // answers a refused declare by closing the channel with one.
    const breaks = (err?: unknown) => {
      if (!broken) {
        broken = new Error(
          err === undefined ? `RabbitMQ at ${where}: the connection closed` : explainRabbitMqError(err, ready ? 'publish' : step, where),
          { cause: err },
        );
        // Before it is ready, open() rejects with the reason; after, the next publish reconnects. A clean close
        // (ours, at shutdown) comes without an error and is not worth a line.
        if (ready && err !== undefined)
          options.logger?.warn({ broker: where, reason: broken.message }, 'RabbitMQ link lost; reconnecting at the next publish');
      }
      lost();
    };
    connection.on('error', breaks);
    connection.on('close', (err?: unknown) => breaks(err));
    try {
      const channel = await connection.createConfirmChannel();
      channel.on('error', breaks);
      channel.on('close', () => breaks());
      step = 'declare the exchange';
      await channel.assertExchange(exchange, 'topic', { durable: true });
      if (queue !== false) {
        step = 'declare the queue';
        await channel.assertQueue(queue, { durable: true });
        step = 'bind the queue';
        await channel.bindQueue(queue, exchange, '#');
      }
      ready = true;
      return { connection, channel, broken: () => broken };
    } catch (err) {
      // Ending a connection that already failed rejects: nothing to do about that.
      await within(
        connection.close().catch(() => undefined),
        LINK_END_TIMEOUT_MS,
      );
      throw new BrokerSetupError(broken?.message ?? explainRabbitMqError(err, step, where), { cause: err });
    }
  }

  return {
    describe: where,
    destination: exchange,
    async publish(message: BrokerMessage, signal: AbortSignal) {
      const current = await link.current();
      const confirmed = new Promise<void>((resolve, reject) => {
        const failed = (err: unknown) =>
          reject(current.broken() ?? new Error(`RabbitMQ at ${where} did not confirm ${message.eventId}: ${String(err)}`));
        try {
          current.channel.publish(
            exchange,
            message.eventType,
            message.body,
            {
              persistent: true,
              messageId: message.eventId,
              type: message.eventType,
              contentType: 'application/json',
              timestamp: Math.floor(Date.now() / 1000),
              // traceparent (and tracestate) as AMQP headers, for consumers that join the trace.
              headers: message.traceHeaders,
            },
            (err) => (err ? failed(err) : resolve()),
          );
        } catch (err) {
          // A channel that closed since link.current() refuses synchronously.
          failed(err);
        }
      });
      await abortableWait(confirmed, signal, confirmTimeoutMs, `RabbitMQ confirmation of ${message.eventId} from ${where}`, () =>
        link.drop(current),
      );
    },
    close: () => link.close(),
  };
}

/** The `rabbitmq` sink kind (docs/sinks.md#rabbitmq), in `brokers` or `sinks`; completion is recorded under `broker:<name>`. */
export const rabbitMqSink = defineSinkKind({
  kind: 'rabbitmq',
  prefix: 'broker',
  schema: z
    .strictObject({
      /** Default `rabbitmq`. */
      name: sinkNameField.default('rabbitmq'),
      url: secretField,
      exchange: z.string().min(1).optional(),
      queue: z.union([z.string().min(1), z.literal(false)]).optional(),
      eventTypes: eventTypesField.optional(),
    })
    .transform(({ name, url, exchange, queue, eventTypes }) => ({ kind: 'rabbitmq' as const, name, url, exchange, queue, eventTypes })),
  create: (options, setup) =>
    brokerSink('rabbitmq', 'RabbitMQ', options.name, rabbitMqPublisher({ ...options, logger: setup.logger }), options.eventTypes),
});
