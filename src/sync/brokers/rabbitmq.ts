import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { Logger } from 'pino';
import { abortableWait, type BrokerMessage, type BrokerPublisher } from './broker-sink.js';
import { lazyLink } from './lazy-link.js';
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
}

/**
 * A RabbitMQ publisher (AMQP 0-9-1): persistent messages on a confirm channel, the event type as routing key, the
 * eventId as message id. It connects on first use and again after the connection drops; a publish in flight when
 * it drops fails, and the worker publishes again.
 *
 * @example
 * const publisher = rabbitMqPublisher({ url: 'amqp://guest:guest@127.0.0.1:5672' });
 */
export function rabbitMqPublisher(options: RabbitMqOptions): BrokerPublisher {
  const exchange = options.exchange ?? RABBITMQ_DEFAULTS.exchange;
  const queue = options.queue === undefined ? RABBITMQ_DEFAULTS.queue : options.queue;
  const confirmTimeoutMs = options.confirmTimeoutMs ?? RABBITMQ_DEFAULTS.confirmTimeoutMs;
  const where = `${describeUrl(options.url)} exchange ${exchange}`;
  const link = lazyLink('RabbitMQ', where, open, ({ connection }) => connection.close());

  async function open(lost: () => void): Promise<Link> {
    const connection = await amqp.connect(options.url, { timeout: 5000 });
    try {
      const channel = await connection.createConfirmChannel();
      await channel.assertExchange(exchange, 'topic', { durable: true });
      if (queue !== false) {
        await channel.assertQueue(queue, { durable: true });
        await channel.bindQueue(queue, exchange, '#');
      }
      const forget = (err?: unknown) => {
        if (err) options.logger?.warn({ err, broker: where }, 'RabbitMQ connection lost; reconnecting at the next publish');
        lost();
      };
      // Either going away means the next publish needs a new connection; 'error' alone would crash the process.
      connection.on('error', forget);
      connection.on('close', () => forget());
      channel.on('error', forget);
      channel.on('close', () => forget());
      return { connection, channel };
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  return {
    describe: where,
    async publish(message: BrokerMessage, signal: AbortSignal) {
      const { channel } = await link.current();
      const confirmed = new Promise<void>((resolve, reject) => {
        channel.publish(
          exchange,
          message.eventType,
          message.body,
          {
            persistent: true,
            messageId: message.eventId,
            type: message.eventType,
            contentType: 'application/json',
            timestamp: Math.floor(Date.now() / 1000),
          },
          (err) => (err ? reject(new Error(`RabbitMQ did not confirm ${message.eventId}: ${String(err)}`)) : resolve()),
        );
      });
      await abortableWait(confirmed, signal, confirmTimeoutMs, `RabbitMQ confirmation of ${message.eventId}`);
    },
    close: () => link.close(),
  };
}
