import http from 'node:http';
import https from 'node:https';
import { EVENT_TYPES, exampleEvent, isEventType, type EventType } from '../events/index.js';
import { newId } from './ids.js';
import { postDelivery } from './post-delivery.js';
import { signDelivery } from './sign-delivery.js';

/** What {@link triggerEvent} sends. */
export interface TriggerOptions {
  /** One of the 19 event types. */
  eventType: EventType | (string & {});
  /** The receiver's URL, e.g. `http://127.0.0.1:8787/webhooks`. */
  url: string;
  /** The endpoint secret the receiver verifies with. */
  secret: string;
  /** How long to wait for the answer. Default 10 000 ms (the spec's acknowledgement time). */
  timeoutMs?: number | undefined;
}

/** The receiver's answer to a triggered event. */
export interface TriggerResult {
  eventId: string;
  /** The receiver's status; null when it did not answer (see `error`). */
  status: number | null;
  ok: boolean;
  /** The start of the receiver's answer. */
  body: string;
  /** What went wrong, for a non-2xx answer or no answer (refused connection, timeout). */
  error: string | null;
}

/**
 * Sends one realistic, signed event of `eventType` (the catalog's example with a fresh eventId) to `url`, as the
 * service would (signed with the default scheme), and reports the answer; a receiver that cannot be reached is
 * reported too, with `status` null. Throws a TypeError for an unknown type, listing the known ones.
 *
 * @example
 * const result = await triggerEvent({ eventType: 'INVOICE_PAID', url: 'http://127.0.0.1:8787/webhooks', secret });
 * if (!result.ok) console.error(result.status, result.body);
 */
export async function triggerEvent(options: TriggerOptions): Promise<TriggerResult> {
  if (!isEventType(options.eventType)) {
    throw new TypeError(`Unknown event type ${JSON.stringify(options.eventType)}. Known types: ${EVENT_TYPES.join(', ')}.`);
  }
  if (options.secret.trim() === '') throw new TypeError('The secret is empty.');
  const event = exampleEvent(options.eventType, { eventId: newId('evt') });
  const body = JSON.stringify(event);
  const agents = { http: new http.Agent(), https: new https.Agent() };
  try {
    const outcome = await postDelivery({
      url: options.url,
      headers: { 'content-type': 'application/json', 'user-agent': 'payhooks-trigger/1.0', ...signDelivery(body, [options.secret]) },
      body,
      timeoutMs: options.timeoutMs ?? 10_000,
      signal: new AbortController().signal,
      agents,
    });
    const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
    return { eventId: event.eventId, status: outcome.status, ok, body: outcome.body, error: outcome.error };
  } finally {
    agents.http.destroy();
    agents.https.destroy();
  }
}
