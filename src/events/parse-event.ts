import { PayhooksError } from '../errors.js';
import { envelopeSchema, isIdentifier } from './envelope.js';
import type { z } from 'zod';
import { type CertainValidator, certainValidator, isJsonObject } from './certain-validator.js';
import { EVENT_DATA_SCHEMAS, type EventType, isEventType, type UnknownEvent, type WebhookEvent } from './event-types.js';
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

/**
 * {@link parseEvent} for a value `JSON.parse` made (the worker's: a stored body), with the same results. Most such
 * envelopes are plainly valid, and are read without the envelope's schema (the receiver checked it before storing
 * the body, and the schema copied `data` once more before its own schema copied it again); anything else, including
 * each invalid envelope, goes through {@link parseEvent}, so that its errors read the same. Data that certainly
 * passes its type's schema ({@link certainValidator}) is parsed by the schema only when the event's `data` is first
 * read; data that may not is parsed at once, and its errors are the schema's.
 *
 * @example
 * const result = parseJsonEvent(JSON.parse(row.raw_body));
 */
export function parseJsonEvent(json: unknown): ParseEventResult {
  const envelope = plainEnvelope(json);
  if (!envelope) return parseEvent(json);
  const { eventId, eventType, data } = envelope;
  // A copy, as the envelope's schema gave: the caller's value is not handed on.
  if (!isEventType(eventType)) return { ok: true, event: { eventId, eventType, data: { ...data }, unknown: true } };
  const schema = EVENT_DATA_SCHEMAS[eventType];
  if (validatorFor(eventType)?.(data)) return { ok: true, event: lazyDataEvent(eventId, eventType, data, schema) };
  const parsed = schema.safeParse(data);
  if (!parsed.success) return { ok: false, error: new EventParseError(issuesOf(parsed.error, 'data')) };
  return { ok: true, event: { eventId, eventType, data: parsed.data } as WebhookEvent };
}

/** Each type's {@link certainValidator}, made on first use; null: its schema is left to zod. */
const validators = new Map<EventType, CertainValidator | null>();

function validatorFor(eventType: EventType): CertainValidator | null {
  let validator = validators.get(eventType);
  if (validator === undefined) {
    validator = certainValidator(EVENT_DATA_SCHEMAS[eventType]) ?? null;
    validators.set(eventType, validator);
  }
  return validator;
}

/**
 * An event whose data is known to pass its schema, parsed by it when first read: the same value as an eager parse,
 * without its cost for handlers that never read `data` (a no-op, a handler that reads the current state by id).
 */
function lazyDataEvent(eventId: string, eventType: EventType, json: Record<string, unknown>, schema: z.ZodType): WebhookEvent {
  let data: unknown;
  let parsed = false;
  return {
    eventId,
    eventType,
    get data() {
      if (!parsed) {
        data = schema.parse(json);
        parsed = true;
      }
      return data;
    },
    set data(value: unknown) {
      data = value;
      parsed = true;
    },
  } as WebhookEvent;
}

/**
 * The envelope's fields when a JSON value certainly passes `envelopeSchema` (what JSON.parse makes is plain objects,
 * arrays and primitives), else undefined (then the schema decides). An own `__proto__` key, which a copy would not
 * keep as a key, is left to the schema.
 */
function plainEnvelope(json: unknown): { eventId: string; eventType: string; data: Record<string, unknown> } | undefined {
  if (!isJsonObject(json) || Object.hasOwn(json, '__proto__')) return undefined;
  const { eventId, eventType, data } = json;
  if (!isIdentifier(eventId) || !isIdentifier(eventType)) return undefined;
  if (!isJsonObject(data) || Object.hasOwn(data, '__proto__')) return undefined;
  return { eventId, eventType, data };
}

/** {@link parseEvent} that throws the {@link EventParseError}. */
export function parseEventOrThrow(input: unknown): WebhookEvent | UnknownEvent {
  const result = parseEvent(input);
  if (!result.ok) throw result.error;
  return result.event;
}
