import type { UnknownEvent, WebhookEvent } from '../events/index.js';
import type { ResourceState } from './resource-state.js';

/** The version of the document's shape; a change that breaks readers raises it. */
export const FORWARD_DOCUMENT_VERSION = 1;

/**
 * What the HTTP forward and broker sinks send for one event: the delivery envelope as received (so another
 * payhooks can receive it, deduplicating by the same `eventId`), plus the current state of its resource.
 */
export interface ForwardDocument {
  eventId: string;
  eventType: string;
  data: Record<string, unknown>;
  payhooks: {
    version: typeof FORWARD_DOCUMENT_VERSION;
    /** `forward:<name>` or `broker:<name>`. */
    sink: string;
    /** When the inbox stored the event (ISO 8601). */
    receivedAt: string;
  };
  /** The resource the event is about, at its newest known state; null for an event that names none. */
  resource: ResourceState | null;
}

/**
 * Builds the document of one event for one sink (docs/sinks.md#the-document).
 *
 * @example
 * JSON.stringify(forwardDocument(event, await state(), 'forward:erp', ctx.receivedAt));
 */
export function forwardDocument(
  event: WebhookEvent | UnknownEvent,
  resource: ResourceState | null,
  sink: string,
  receivedAt: Date,
): ForwardDocument {
  return {
    eventId: event.eventId,
    eventType: event.eventType,
    data: event.data as Record<string, unknown>,
    payhooks: { version: FORWARD_DOCUMENT_VERSION, sink, receivedAt: receivedAt.toISOString() },
    resource,
  };
}
