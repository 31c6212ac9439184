import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, headers, nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { abortableWait, type BrokerMessage, type BrokerPublisher } from './broker-sink.js';
import { lazyLink } from './lazy-link.js';

/** Where and how the NATS JetStream sink publishes. */
export interface NatsOptions {
  /** `nats://host:4222`, or several, comma-separated. */
  servers: string | readonly string[];
  /** Messages go to `<subjectPrefix>.<eventType>`. Default `payhooks.events`. */
  subjectPrefix?: string | undefined;
  /**
   * The stream that stores them, created if missing with the subjects `<subjectPrefix>.>` and `duplicateWindowMs`
   * (an existing stream is used as it is). Default `PAYHOOKS_EVENTS`.
   */
  stream?: string | undefined;
  /** The stream's deduplication window for a stream this sink creates. Default 2 minutes (the server's default). */
  duplicateWindowMs?: number | undefined;
  /** How long a publish waits for the stream's acknowledgement. Default 10 s. */
  ackTimeoutMs?: number | undefined;
  /** For a server that requires them. */
  user?: string | undefined;
  pass?: string | undefined;
  token?: string | undefined;
  logger?: Logger | undefined;
}

/** The defaults of the NATS JetStream sink. */
export const NATS_DEFAULTS = {
  subjectPrefix: 'payhooks.events',
  stream: 'PAYHOOKS_EVENTS',
  duplicateWindowMs: 120_000,
  ackTimeoutMs: 10_000,
} as const;

interface Link {
  connection: NatsConnection;
  js: JetStreamClient;
}

/**
 * A NATS JetStream publisher: each event to `<subjectPrefix>.<eventType>` with its eventId as the message id
 * (`Nats-Msg-Id`), so a publish repeated within the stream's deduplication window is stored once. The client
 * reconnects by itself; a publish whose acknowledgement is lost fails, and the worker publishes again.
 *
 * @example
 * const publisher = natsPublisher({ servers: 'nats://127.0.0.1:4222' });
 */
export function natsPublisher(options: NatsOptions): BrokerPublisher {
  const servers = typeof options.servers === 'string' ? options.servers.split(',').map((s) => s.trim()) : [...options.servers];
  const prefix = options.subjectPrefix ?? NATS_DEFAULTS.subjectPrefix;
  const stream = options.stream ?? NATS_DEFAULTS.stream;
  const ackTimeoutMs = options.ackTimeoutMs ?? NATS_DEFAULTS.ackTimeoutMs;
  const where = `${servers.join(',')} stream ${stream}`;
  const link = lazyLink('NATS', where, open, ({ connection }) => connection.drain());

  async function open(lost: () => void): Promise<Link> {
    const connection = await connect({
      servers,
      user: options.user,
      pass: options.pass,
      token: options.token,
      name: 'payhooks',
      timeout: 5000,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    try {
      const manager = await jetstreamManager(connection);
      const exists = await manager.streams.info(stream).then(
        () => true,
        () => false,
      );
      if (!exists) {
        await manager.streams.add({
          name: stream,
          subjects: [`${prefix}.>`],
          duplicate_window: nanos(options.duplicateWindowMs ?? NATS_DEFAULTS.duplicateWindowMs),
        });
      }
      void (async () => {
        for await (const status of connection.status()) {
          if (status.type === 'disconnect' || status.type === 'reconnect')
            options.logger?.info({ broker: where, status: status.type }, `NATS ${status.type}`);
        }
      })().catch(() => undefined);
      void connection.closed().then(lost);
      return { connection, js: jetstream(connection) };
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  return {
    describe: where,
    async publish(message: BrokerMessage, signal: AbortSignal) {
      const { js } = await link.current();
      const messageHeaders = headers();
      messageHeaders.set('Payhooks-Event-Type', message.eventType);
      messageHeaders.set('Content-Type', 'application/json');
      // A type newer than this payhooks may hold characters a subject cannot.
      const ack = js.publish(`${prefix}.${message.eventType.replace(/[^A-Za-z0-9_-]/g, '_')}`, message.body, {
        msgID: message.eventId,
        timeout: ackTimeoutMs,
        headers: messageHeaders,
      });
      await abortableWait(ack, signal, ackTimeoutMs + 1000, `NATS acknowledgement of ${message.eventId}`);
    },
    close: () => link.close(),
  };
}
