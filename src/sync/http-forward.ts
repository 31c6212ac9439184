import PQueue from 'p-queue';
import type { ApiClient } from '../client/api-client.js';
import type { EventType, UnknownEvent, WebhookEvent } from '../events/index.js';
import type { Payhooks } from '../payhooks.js';
import { createDefaultScheme } from '../signature/default-scheme.js';
import type { HandlerContext } from '../worker/handlers.js';
import { idempotencyKey } from './connector.js';
import { forwardDocumentText } from './forward-document.js';
import { describeUrl } from '../internal/describe-url.js';
import { createHttpHelper, HTTP_DEFAULT_TIMEOUT_MS } from './http-helper.js';

/** One URL the HTTP forward sink posts events to. */
export interface ForwardTarget {
  /** Completion is recorded under `forward:<name>`. */
  name: string;
  url: string;
  /** The target's own signing secret: the body is signed with the default scheme, as the service signs its deliveries. */
  secret: string;
  /** Default 10 s. */
  timeoutMs?: number | undefined;
  /** Requests in flight to this target from one process. Default 4. */
  concurrency?: number | undefined;
  /** Requests started per second to this target from one process; unset: no limit. */
  ratePerSecond?: number | undefined;
  /** The types it receives. Default every event, types newer than this payhooks included. */
  eventTypes?: readonly EventType[] | undefined;
  /** Extra headers (an API gateway's key, say). */
  headers?: Record<string, string> | undefined;
}

/** The defaults of a forward target. */
export const FORWARD_DEFAULTS = { timeoutMs: HTTP_DEFAULT_TIMEOUT_MS, concurrency: 4 } as const;

/** Options of {@link registerHttpForward} that concern every target. */
export interface ForwardOptions {
  /** The mirror's schema when it runs: the document's resource falls back to its row without an API key. */
  mirrorSchema?: string | undefined;
}

/**
 * Registers one HTTP forward target as the handler `forward:<name>`: each event is POSTed as a JSON document
 * (docs/sinks.md#the-document) signed with the target's secret. 5xx, 408, 429 (after its `Retry-After`) and
 * connection failures are retried with backoff; another 4xx puts the event in dead letters for this target only.
 *
 * @example
 * await registerHttpForward(hooks, { name: 'erp', url: 'https://erp.example.com/inbound/payhooks', secret: process.env.ERP_SECRET! });
 */
export async function registerHttpForward(hooks: Payhooks<ApiClient>, target: ForwardTarget, options: ForwardOptions = {}): Promise<void> {
  const store = await hooks.ready();
  const sink = `forward:${target.name}`;
  const scheme = createDefaultScheme({ secrets: [target.secret] });
  const queue = new PQueue({
    concurrency: target.concurrency ?? FORWARD_DEFAULTS.concurrency,
    ...(target.ratePerSecond ? { intervalCap: target.ratePerSecond, interval: 1000 } : {}),
  });
  const where = describeUrl(target.url);
  const run = async (event: WebhookEvent | UnknownEvent, ctx: HandlerContext<ApiClient>) => {
    const body = await forwardDocumentText(event, ctx, { sink, store, mirrorSchema: options.mirrorSchema });
    const http = createHttpHelper({ signal: ctx.signal, timeoutMs: target.timeoutMs, userAgent: `payhooks ${sink}` });
    const response = await queue.add(
      () => {
        // Signed when sent, not when queued: a wait for the rate limit must not age the timestamp.
        const signature = scheme.sign({ rawBody: body });
        return http.request(target.url, {
          method: 'POST',
          body,
          headers: {
            ...target.headers,
            ...signature,
            'content-type': 'application/json',
            'idempotency-key': idempotencyKey(sink, event.eventId),
            'x-payhooks-event-id': event.eventId,
            'x-payhooks-event-type': event.eventType,
          },
        });
      },
      { signal: ctx.signal },
    );
    ctx.logger.debug({ target: where, status: response.status, attempt: ctx.attempt }, 'forwarded');
  };
  if (target.eventTypes) hooks.on(target.eventTypes, run, { name: sink });
  else hooks.onAny(run, { name: sink });
}
