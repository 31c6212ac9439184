import type { ApiClient } from '../../client/api-client.js';
import type { EventType } from '../../events/index.js';
import type { Payhooks } from '../../payhooks.js';
import { forwardDocument } from '../forward-document.js';
import { registerSink, type Sink } from '../sink.js';
import { injectTraceContext, inSpan, SPAN_KIND } from '../../internal/tracing.js';

/** One message for a broker: the document, and what identifies and routes it. */
export interface BrokerMessage {
  eventId: string;
  eventType: string;
  /** The JSON document (docs/sinks.md#the-document), UTF-8. */
  body: Buffer;
  /**
   * The trace context of the publish (`traceparent`, and `tracestate` when there is one), for the message's headers,
   * so that a consumer joins the trace (docs/tracing.md); empty without tracing.
   */
  traceHeaders?: Record<string, string> | undefined;
}

/** A connection to a broker that publishes with confirmation. */
export interface BrokerPublisher {
  /** Where it publishes, for logs (no credentials). */
  readonly describe: string;
  /** The exchange, subject prefix or stream it publishes to: `messaging.destination.name` of its spans. */
  readonly destination?: string | undefined;
  /** Resolves once the broker has acknowledged the message (stored it); rejects otherwise, and the worker retries. */
  publish(message: BrokerMessage, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link registerBrokerSink}. */
export interface BrokerSinkOptions {
  /** Completion is recorded under `broker:<name>`. */
  name: string;
  publisher: BrokerPublisher;
  /** The types it publishes. Default every event, types newer than this payhooks included. */
  eventTypes?: readonly EventType[] | undefined;
  /** The mirror's schema when it runs: the document's resource falls back to its row without an API key. */
  mirrorSchema?: string | undefined;
}

/**
 * The sink of one broker, as the handler `broker:<name>`: each event is published (the same document the HTTP
 * forward sink sends), and counts as done for this sink only once the broker acknowledged it; at least once, since
 * a lost acknowledgement means publishing again. Closing the sink closes the publisher.
 *
 * @example
 * const sink = brokerSink('rabbitmq', 'RabbitMQ', 'rabbitmq', rabbitMqPublisher({ url }), undefined);
 */
export function brokerSink(
  kind: string,
  title: string,
  name: string,
  publisher: BrokerPublisher,
  eventTypes: readonly EventType[] | undefined,
): Sink {
  const sink = `broker:${name}`;
  return {
    kind,
    name: sink,
    eventTypes,
    describe: `${title} ${publisher.describe}`,
    async handle(event, ctx, state) {
      // A step, so that a replay does not publish what the broker acknowledged (unless --redo-effects). Idempotent: a
      // publish whose acknowledgement was lost is published again, as before; consumers tell repeats by the event id.
      await ctx.effect(
        'publish',
        async () => {
          const body = Buffer.from(JSON.stringify(forwardDocument(event, await state(), sink, ctx.receivedAt)));
          await inSpan(
            `send ${publisher.destination ?? kind}`,
            { kind: SPAN_KIND.producer, attributes: messagingAttributes(kind, publisher.destination, event.eventId) },
            async () => {
              const traceHeaders: Record<string, string> = {};
              injectTraceContext(traceHeaders);
              await publisher.publish({ eventId: event.eventId, eventType: event.eventType, body, traceHeaders }, ctx.signal);
            },
          );
        },
        { idempotent: true },
      );
    },
    close: () => publisher.close(),
  };
}

/**
 * The OpenTelemetry messaging attributes of a publish (a producer span): the broker's kind as `messaging.system`
 * (`rabbitmq`, `nats`, `redis`), where to, and the eventId as the message id.
 */
export function messagingAttributes(system: string, destination: string | undefined, eventId: string): Record<string, string> {
  const attributes: Record<string, string> = {
    'messaging.system': system,
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.message.id': eventId,
  };
  if (destination !== undefined) attributes['messaging.destination.name'] = destination;
  return attributes;
}

/**
 * Registers a broker as the handler `broker:<name>` (see {@link brokerSink}). Returns the publisher, to close after
 * `hooks.stop()`.
 *
 * @example
 * const broker = await registerBrokerSink(hooks, { name: 'rabbitmq', publisher: rabbitMqPublisher({ url }) });
 * // … on shutdown: await hooks.stop(); await broker.close();
 */
export async function registerBrokerSink(hooks: Payhooks<ApiClient>, options: BrokerSinkOptions): Promise<BrokerPublisher> {
  const sink = brokerSink('broker', 'Broker', options.name, options.publisher, options.eventTypes);
  registerSink(hooks, sink, { store: await hooks.ready(), mirrorSchema: options.mirrorSchema });
  return options.publisher;
}

/**
 * `work`'s outcome, or a rejection once `signal` aborts (with its reason) or `ms` pass; for waits on a broker that may
 * never answer. `onTimeout` runs when the time is up, before the rejection: a publisher drops the link it waited on,
 * since a broker that stays silent that long is most likely unreachable (a connection cut without a word).
 */
export function abortableWait<T>(work: Promise<T>, signal: AbortSignal, ms: number, what: string, onTimeout?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // Whichever comes first settles it and removes the others, so that a broker that never answers leaves neither a
    // timer nor a listener on the worker's signal behind.
    const settle = (done: () => void) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      done();
    };
    const timer = setTimeout(() => {
      onTimeout?.();
      settle(() => reject(new Error(`${what}: no answer within ${ms} ms`)));
    }, ms);
    const onAbort = () => settle(() => reject(signal.reason instanceof Error ? signal.reason : new Error(`${what}: aborted`)));
    // Handled even when it lost the race: a rejection of `work` nobody listens to would stop the process.
    work.then(
      (value) => settle(() => resolve(value)),
      (err: unknown) => settle(() => reject(err)),
    );
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}
