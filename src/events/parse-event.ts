import { PayhooksError } from '../errors.js';
import { envelopeSchema } from './envelope.js';
import { EVENT_DATA_SCHEMAS, isEventType, type UnknownEvent, type WebhookEvent } from './event-types.js';
import { describeIssues, issuesOf, type FieldIssue } from './issues.js';

/** One failing field: its dotted path (`data.invoice.currency`) and what is wrong. */
export type EventIssue = FieldIssue;

/** An envelope or `data` that does not match its schema; `issues` lists every failing path. */
export class EventParseError extends PayhooksError {
  constructor(readonly issues: EventIssue[]) {
    super(`Invalid event: ${describeIssues(issues)}`);
    this.name = 'EventParseError';
  }
}

/** The outcome of {@link parseEvent}. */
export type ParseEventResult = { ok: true; event: WebhookEvent | UnknownEvent } | { ok: false; error: EventParseError };

/**
 * Validates a parsed delivery body: the envelope, then `data` with its event type's schema. Unknown fields
 * are kept. An unknown event type is not an error: it comes back as an {@link UnknownEvent}.
 *
 * @example
 * const result = parseEvent(JSON.parse(body));
 * if (result.ok && result.event.eventType === 'INVOICE_PAID') result.event.data.invoiceId;
 */
export function parseEvent(input: unknown): ParseEventResult {
  const envelope = envelopeSchema.safeParse(input);
  if (!envelope.success) return { ok: false, error: new EventParseError(issuesOf(envelope.error)) };
  const { eventId, eventType, data } = envelope.data;
  if (!isEventType(eventType)) return { ok: true, event: { eventId, eventType, data, unknown: true } };
  const parsed = EVENT_DATA_SCHEMAS[eventType].safeParse(data);
  if (!parsed.success) return { ok: false, error: new EventParseError(issuesOf(parsed.error, 'data')) };
  return { ok: true, event: { eventId, eventType, data: parsed.data } as WebhookEvent };
}

/** {@link parseEvent} that throws the {@link EventParseError}. */
export function parseEventOrThrow(input: unknown): WebhookEvent | UnknownEvent {
  const result = parseEvent(input);
  if (!result.ok) throw result.error;
  return result.event;
}
