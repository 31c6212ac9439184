// The client is loaded when a publisher first opens (open() below), so that `import 'payhooks'` does not load it.
import type { JetStreamClient } from '@nats-io/jetstream';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import { durationMs, eventTypesField, secretField, sinkNameField } from '../config-fields.js';
import { defineSinkKind } from '../sink.js';
import { abortableWait, type BrokerMessage, type BrokerPublisher, brokerSink } from './broker-sink.js';
import { LINK_END_TIMEOUT_MS, lazyLink } from './lazy-link.js';
import { within } from '../../internal/within.js';

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
  /**
   * How long a publish waits for the stream's acknowledgement. Default 10 s. A publish that gets none drops the
   * connection, so that the next one opens a new connection instead of waiting on a silent one again.
   */
  ackTimeoutMs?: number | undefined;
  /**
   * How often the client pings the server. Default 5 s; with `maxPingOut`, a connection that stopped answering (cut
   * without a word by a NAT or a firewall) is found dead and opened again within about 15 s, even when nothing is
   * published. (The client's own default, 2 minutes × 2, let it stall publishes for minutes.)
   */
  pingIntervalMs?: number | undefined;
  /** Pings left unanswered before the connection counts as dead and is opened again. Default 2. */
  maxPingOut?: number | undefined;
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
  pingIntervalMs: 5000,
  maxPingOut: 2,
} as const;

/** How long opening a connection may take, at most, before the publish waiting on it fails (the client's connect timeout). */
const OPEN_TIMEOUT_MS = 5000;

interface Link {
  connection: NatsConnection;
  js: JetStreamClient;
  /** The client's `headers()`, from the module open() loaded. */
  headers: () => MsgHdrs;
}

/**
 * A NATS JetStream publisher: each event to `<subjectPrefix>.<eventType>` with its eventId as the message id
 * (`Nats-Msg-Id`), so a publish repeated within the stream's deduplication window is stored once. The client
 * reconnects by itself; a publish whose acknowledgement is lost fails, and the worker publishes again. A connection
 * that goes silent is found by the pings, or by the first publish left without an acknowledgement, and replaced;
 * closing never waits on it longer than `LINK_END_TIMEOUT_MS` (issue 22, finding 6).
 *
 * @example
 * const publisher = natsPublisher({ servers: 'nats://127.0.0.1:4222' });
 */
export function natsPublisher(options: NatsOptions): BrokerPublisher {
  const servers = typeof options.servers === 'string' ? options.servers.split(',').map((s) => s.trim()) : [...options.servers];
  const prefix = options.subjectPrefix ?? NATS_DEFAULTS.subjectPrefix;
  const stream = options.stream ?? NATS_DEFAULTS.stream;
  const ackTimeoutMs = options.ackTimeoutMs ?? NATS_DEFAULTS.ackTimeoutMs;
  const where = `${servers.map(withoutCredentials).join(',')} stream ${stream}`;
  const link = lazyLink('NATS', where, open, {
    // Draining flushes what is buffered and waits for the server to confirm; a silent server never does.
    end: ({ connection }) => connection.drain(),
    abandon: ({ connection }) => void connection.close().catch(() => undefined),
  });

  async function open(lost: () => void): Promise<Link> {
    const [{ jetstream, jetstreamManager }, { connect, headers, nanos }] = await Promise.all([
      import('@nats-io/jetstream'),
      import('@nats-io/transport-node'),
    ]);
    const connection = await connect({
      servers,
      user: options.user,
      pass: options.pass,
      token: options.token,
      name: 'payhooks',
      timeout: OPEN_TIMEOUT_MS,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      pingInterval: options.pingIntervalMs ?? NATS_DEFAULTS.pingIntervalMs,
      maxPingOut: options.maxPingOut ?? NATS_DEFAULTS.maxPingOut,
    });
    try {
      const manager = await jetstreamManager(connection, { timeout: ackTimeoutMs });
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
      return { connection, js: jetstream(connection), headers };
    } catch (err) {
      await within(
        connection.close().catch(() => undefined),
        LINK_END_TIMEOUT_MS,
      );
      throw err;
    }
  }

  return {
    describe: where,
    destination: prefix,
    async publish(message: BrokerMessage, signal: AbortSignal) {
      // Connecting is bounded by the client's own timeouts; the signal still ends the wait at shutdown.
      const current = await abortableWait(link.current(), signal, OPEN_TIMEOUT_MS + 3 * ackTimeoutMs, `NATS connection to ${where}`);
      const messageHeaders = current.headers();
      messageHeaders.set('Payhooks-Event-Type', message.eventType);
      messageHeaders.set('Content-Type', 'application/json');
      for (const [name, value] of Object.entries(message.traceHeaders ?? {})) messageHeaders.set(name, value);
      // A type newer than this payhooks may hold characters a subject cannot.
      const ack = current.js
        .publish(`${prefix}.${message.eventType.replace(/[^A-Za-z0-9_-]/g, '_')}`, message.body, {
          msgID: message.eventId,
          // Ours (below) ends the wait first, and drops the connection; the client's is only a backstop.
          timeout: ackTimeoutMs + 1000,
          headers: messageHeaders,
        })
        .catch((err: unknown) => {
          throw new Error(`NATS at ${where} did not store ${message.eventId}: ${err instanceof Error ? err.message : String(err)}`, {
            cause: err,
          });
        });
      await abortableWait(ack, signal, ackTimeoutMs, `NATS acknowledgement of ${message.eventId} from ${where}`, () => {
        options.logger?.warn({ broker: where, eventId: message.eventId, ackTimeoutMs }, 'no NATS acknowledgement in time; reconnecting');
        link.drop(current);
      });
    },
    close: () => link.close(),
  };
}

/** A server as logs may show it: `nats://user:pass@host:4222` loses its user and password (or token). */
function withoutCredentials(server: string): string {
  return server.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^@/]*@/i, '$1');
}

/** The `nats` sink kind (docs/sinks.md#nats-jetstream), in `brokers` or `sinks`; completion is recorded under `broker:<name>`. */
export const natsSink = defineSinkKind({
  kind: 'nats',
  prefix: 'broker',
  schema: z
    .strictObject({
      /** Default `nats`. */
      name: sinkNameField.default('nats'),
      servers: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
      stream: z
        .string()
        .regex(/^[A-Za-z0-9_-]+$/, 'expected letters, digits, "_" or "-"')
        .optional(),
      subjectPrefix: z
        .string()
        .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'expected dot-separated tokens such as payhooks.events')
        .optional(),
      duplicateWindow: durationMs('2m', 'brokers.duplicateWindow').optional(),
      /** Default 10s. */
      ackTimeout: durationMs('10s', 'brokers.ackTimeout').optional(),
      /** Default 5s; the connection counts as dead after `maxPingOut` unanswered pings. */
      pingInterval: durationMs('5s', 'brokers.pingInterval').optional(),
      /** Default 2. */
      maxPingOut: z.number().int().min(1).max(10).optional(),
      user: z.string().optional(),
      pass: secretField.optional(),
      token: secretField.optional(),
      eventTypes: eventTypesField.optional(),
    })
    .transform(({ duplicateWindow, ackTimeout, pingInterval, ...options }) => ({
      kind: 'nats' as const,
      name: options.name,
      servers: options.servers,
      stream: options.stream,
      subjectPrefix: options.subjectPrefix,
      duplicateWindowMs: duplicateWindow,
      ackTimeoutMs: ackTimeout,
      pingIntervalMs: pingInterval,
      maxPingOut: options.maxPingOut,
      user: options.user,
      pass: options.pass,
      token: options.token,
      eventTypes: options.eventTypes,
    })),
  create: (options, setup) =>
    brokerSink('nats', 'NATS JetStream', options.name, natsPublisher({ ...options, logger: setup.logger }), options.eventTypes),
});
