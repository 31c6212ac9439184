// The client is loaded when the sink first publishes (open() below), so that `import 'payhooks'` does not load it.
import type { RedisClientType } from '@redis/client';
import { z } from 'zod';
import { describeUrl } from '../../internal/describe-url.js';
import { eventTypesField, secretField, sinkNameField } from '../config-fields.js';
import { forwardDocument } from '../forward-document.js';
import { defineSinkKind, type Sink } from '../sink.js';
import { abortableWait, messagingAttributes } from './broker-sink.js';
import { injectTraceContext, inSpan, SPAN_KIND } from '../../internal/tracing.js';
import { lazyLink } from './lazy-link.js';

/** The defaults of the Redis Streams sink (docs/sinks.md#redis-streams). */
export const REDIS_STREAMS_DEFAULTS = {
  name: 'redis',
  stream: 'payhooks:events',
  /**
   * `XADD … MAXLEN ~ 100000`: the stream keeps about the newest 100,000 entries (Redis trims whole nodes, so a
   * few more), enough for days of a busy organization's events while bounding the server's memory.
   */
  maxLen: 100_000,
  /** How long an `XADD`, or opening the connection, may take before the publish fails and is retried. */
  timeoutMs: 10_000,
} as const;

const options = z
  .strictObject({
    /** Completion is recorded under `broker:<name>`. Default `redis`. */
    name: sinkNameField.default(REDIS_STREAMS_DEFAULTS.name),
    /** `redis://[user:password@]host:6379[/db]`, or `rediss://` for TLS; may be `{ env: 'NAME' }`. */
    url: secretField.refine((url) => /^rediss?:\/\//.test(url), 'expected a redis:// or rediss:// URL'),
    /** The stream's key. Default `payhooks:events`. */
    stream: z.string().min(1).max(512).default(REDIS_STREAMS_DEFAULTS.stream),
    /** About how many entries the stream keeps (`MAXLEN ~`). Default 100,000. */
    maxLen: z.number().int().min(1).max(1_000_000_000).default(REDIS_STREAMS_DEFAULTS.maxLen),
    eventTypes: eventTypesField.optional(),
  })
  .transform((parsed) => ({ kind: 'redis-streams' as const, ...parsed }));

/** The settings of a Redis Streams sink, defaults applied. */
export type RedisStreamsOptions = z.output<typeof options>;

/**
 * The Redis Streams sink: `XADD <stream> MAXLEN ~ <maxLen> * eventId … eventType … resourceKind … resourceId …
 * document <JSON>` per event, the same document the HTTP forward sink sends. Done for this sink once Redis answered
 * with the entry's id; at least once (a lost answer means adding again: consumers deduplicate by `eventId`).
 * It connects on first use and again after the connection drops; a publish that gets no answer in time fails, and
 * the worker retries it.
 */
function redisStreamsSink(settings: RedisStreamsOptions): Sink {
  const sink = `broker:${settings.name}`;
  const where = `${describeUrl(settings.url)} stream ${settings.stream}`;
  const link = lazyLink<RedisClientType>(
    'Redis',
    where,
    async (lost) => {
      const { createClient } = await import('@redis/client');
      // No reconnecting inside the client: the link is opened again at the next publish, as the brokers' are.
      const client = createClient({
        url: settings.url,
        socket: { connectTimeout: REDIS_STREAMS_DEFAULTS.timeoutMs, reconnectStrategy: false },
        // A command waits for no connection: with none, it fails at once and the worker retries the event.
        disableOfflineQueue: true,
      }) as RedisClientType;
      // Listened to before connecting: an 'error' event nobody listens to stops the process.
      client.on('error', () => lost());
      client.on('end', () => lost());
      try {
        await client.connect();
      } catch (err) {
        client.destroy();
        throw err;
      }
      return client;
    },
    { end: (client) => client.close(), abandon: (client) => client.destroy() },
  );
  return {
    kind: 'redis-streams',
    name: sink,
    eventTypes: settings.eventTypes,
    describe: `Redis Streams ${where} (MAXLEN ~ ${settings.maxLen})`,
    async handle(event, ctx, state) {
      const resource = await state();
      const fields: Record<string, string> = {
        eventId: event.eventId,
        eventType: event.eventType,
        resourceKind: resource?.kind ?? '',
        resourceId: resource?.id ?? '',
        document: JSON.stringify(forwardDocument(event, resource, sink, ctx.receivedAt)),
      };
      await inSpan(
        `send ${settings.stream}`,
        { kind: SPAN_KIND.producer, attributes: messagingAttributes('redis', settings.stream, event.eventId) },
        async () => {
          // The entry's traceparent (and tracestate) field, for consumers that join the trace.
          injectTraceContext(fields);
          const client = await abortableWait(
            link.current(),
            ctx.signal,
            REDIS_STREAMS_DEFAULTS.timeoutMs,
            `connecting to Redis at ${where}`,
          );
          const added = client.xAdd(settings.stream, '*', fields, {
            TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: settings.maxLen },
          });
          await abortableWait(added, ctx.signal, REDIS_STREAMS_DEFAULTS.timeoutMs, `XADD of ${event.eventId} to Redis at ${where}`, () =>
            link.drop(client),
          );
        },
      );
    },
    close: () => link.close(),
  };
}

/** The `redis-streams` sink kind, in `sinks` or `brokers`; completion is recorded under `broker:<name>`. */
export const redisStreamsKind = defineSinkKind({ kind: 'redis-streams', prefix: 'broker', schema: options, create: redisStreamsSink });
