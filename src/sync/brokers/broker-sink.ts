import type { ApiClient } from '../../client/api-client.js';
import type { EventType, UnknownEvent, WebhookEvent } from '../../events/index.js';
import type { Payhooks } from '../../payhooks.js';
import type { HandlerContext } from '../../worker/handlers.js';
import { forwardDocumentText } from '../forward-document.js';

/** One message for a broker: the document, and what identifies and routes it. */
export interface BrokerMessage {
  eventId: string;
  eventType: string;
  /** The JSON document (docs/sinks.md#the-document), UTF-8. */
  body: Buffer;
}

/** A connection to a broker that publishes with confirmation. */
export interface BrokerPublisher {
  /** Where it publishes, for logs (no credentials). */
  readonly describe: string;
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
 * Registers a broker as the handler `broker:<name>`: each event is published (the same document the HTTP forward
 * sink sends), and counts as done for this sink only once the broker acknowledged it; at least once, since a lost
 * acknowledgement means publishing again. Returns the publisher, to close after `hooks.stop()`.
 *
 * @example
 * const broker = await registerBrokerSink(hooks, { name: 'rabbitmq', publisher: rabbitMqPublisher({ url }) });
 * // … on shutdown: await hooks.stop(); await broker.close();
 */
export async function registerBrokerSink(hooks: Payhooks<ApiClient>, options: BrokerSinkOptions): Promise<BrokerPublisher> {
  const store = await hooks.ready();
  const sink = `broker:${options.name}`;
  const run = async (event: WebhookEvent | UnknownEvent, ctx: HandlerContext<ApiClient>) => {
    const body = Buffer.from(await forwardDocumentText(event, ctx, { sink, store, mirrorSchema: options.mirrorSchema }));
    await options.publisher.publish({ eventId: event.eventId, eventType: event.eventType, body }, ctx.signal);
  };
  if (options.eventTypes) hooks.on(options.eventTypes, run, { name: sink });
  else hooks.onAny(run, { name: sink });
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
