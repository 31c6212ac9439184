import { createHash } from 'node:crypto';
import { PayhooksError } from '../errors.js';
import { envelopeSchema, isIdentifier, parseBodyJson } from './envelope.js';
import type { z } from 'zod';
import {
  CERTAIN_VALIDATOR_REVISION,
  type CertainValidator,
  certainValidator,
  isJsonObject,
  validatorOutline,
} from './certain-validator.js';
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

/**
 * Whether a parsed delivery body certainly reads as a valid event: a plain envelope whose `data` certainly passes its
 * type's schema, or of a type outside the catalog (whose data no schema checks). The receiver marks such a body with
 * {@link dataCheckFingerprint} when it stores it; false means "not certain" (the worker then parses it in full).
 *
 * @example
 * certainlyValidEvent(JSON.parse(body)) // true for what the service sends
 */
export function certainlyValidEvent(json: unknown): boolean {
  const envelope = plainEnvelope(json);
  if (!envelope) return false;
  if (!isEventType(envelope.eventType)) return true;
  return validatorFor(envelope.eventType)?.(envelope.data) === true;
}

let fingerprint: string | undefined;

/**
 * A fingerprint of what {@link certainlyValidEvent} accepts: the validator's rules, the catalog's types and the outline
 * of each schema. The receiver stores it with a body it found certainly valid; the worker trusts the mark only when it
 * equals its own, so a build whose schemas or rules differ (an upgrade that tightened a schema, or added a type) reads
 * such bodies in full again.
 *
 * @example
 * dataCheckFingerprint() // '3f1c…' (32 hex digits)
 */
export function dataCheckFingerprint(schemas: Readonly<Record<string, z.ZodType>> = EVENT_DATA_SCHEMAS): string {
  if (schemas === EVENT_DATA_SCHEMAS && fingerprint) return fingerprint;
  const outline = Object.keys(schemas)
    .sort()
    .map((type) => [type, validatorOutline(schemas[type]!)]);
  const made = createHash('sha256')
    .update(JSON.stringify({ rules: CERTAIN_VALIDATOR_REVISION, outline }))
    .digest('hex')
    .slice(0, 32);
  if (schemas === EVENT_DATA_SCHEMAS) fingerprint = made;
  return made;
}

/**
 * The event of a stored body that the receiver found certainly valid ({@link certainlyValidEvent}): `eventId` and
 * `eventType` as stored beside it, `data` read from the body when a handler first reads it (then, for a catalog type,
 * parsed by its schema, as {@link parseJsonEvent} gives it). A handler that never reads `data` (a no-op, one that reads
 * the current state by id) costs no JSON.parse of the body.
 *
 * @example
 * const event = storedValidEvent('evt_1', 'INVOICE_PAID', row.raw_body);
 * event.data.invoiceId; // parsed now
 */
export function storedValidEvent(eventId: string, eventType: string, rawBody: string): WebhookEvent | UnknownEvent {
  let data: unknown;
  let read = false;
  const readData = (): unknown => {
    const json = (parseBodyJson(rawBody) as { data: Record<string, unknown> }).data;
    return isEventType(eventType) ? EVENT_DATA_SCHEMAS[eventType].parse(json) : { ...json };
  };
  const event = {
    eventId,
    eventType,
    get data() {
      if (!read) {
        data = readData();
        read = true;
      }
      return data;
    },
    set data(value: unknown) {
      data = value;
      read = true;
    },
  };
  return (isEventType(eventType) ? event : Object.assign(event, { unknown: true as const })) as WebhookEvent | UnknownEvent;
}

/** {@link parseEvent} that throws the {@link EventParseError}. */
export function parseEventOrThrow(input: unknown): WebhookEvent | UnknownEvent {
  const result = parseEvent(input);
  if (!result.ok) throw result.error;
  return result.event;
}
