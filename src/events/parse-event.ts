import { createHash } from 'node:crypto';
import { PayhooksError } from '../errors.js';
import { type Envelope, envelopeSchema, isIdentifier, parseBodyJson } from './envelope.js';
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
  if (validatorFor(eventType)?.(data)) return { ok: true, event: lazyEvent(eventId, eventType, () => schema.parse(data)) as WebhookEvent };
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
 * An event whose data is known to be valid, made by `read` when first read: the same value as an eager parse, without
 * its cost for handlers that never read `data` (a no-op, a handler that reads the current state by id).
 */
function lazyEvent(eventId: string, eventType: string, read: () => unknown): { eventId: string; eventType: string; data: unknown } {
  let data: unknown;
  let done = false;
  return {
    eventId,
    eventType,
    get data() {
      if (!done) {
        data = read();
        done = true;
      }
      return data;
    },
    set data(value: unknown) {
      data = value;
      done = true;
    },
  };
}

/**
 * The envelope's fields when a JSON value certainly passes `envelopeSchema` (what JSON.parse makes is plain objects,
 * arrays and primitives), else undefined (then the schema decides). An own `__proto__` key, which a copy would not
 * keep as a key, is left to the schema.
 */
function plainEnvelope(json: unknown): Envelope | undefined {
  if (!isJsonObject(json) || Object.hasOwn(json, '__proto__')) return undefined;
  const { eventId, eventType, data } = json;
  if (!isIdentifier(eventId) || !isIdentifier(eventType)) return undefined;
  if (!isJsonObject(data) || Object.hasOwn(data, '__proto__')) return undefined;
  return { eventId, eventType, data };
}

/**
 * Whether a plain envelope's `data` certainly passes its type's schema; a type outside the catalog has none to fail.
 * False means "not certain": the worker then parses and checks the body in full.
 */
function dataCertainlyValid({ eventType, data }: Envelope): boolean {
  return !isEventType(eventType) || validatorFor(eventType)?.(data) === true;
}

/**
 * What the receiver reads of a parsed body without the envelope's schema: the envelope's fields when the body is
 * certainly a valid envelope, and the mark to store with it (`dataValidUnder`: {@link dataCheckFingerprint} when its
 * data is certainly valid too, else null). Undefined: not certain, and the envelope's schema decides (and explains).
 *
 * @example
 * const read = receivedEnvelope(JSON.parse(body)) ?? fromTheSchema(body);
 */
export function receivedEnvelope(json: unknown): (Envelope & { dataValidUnder: string | null }) | undefined {
  const envelope = plainEnvelope(json);
  if (!envelope) return undefined;
  return { ...envelope, dataValidUnder: dataCertainlyValid(envelope) ? dataCheckFingerprint() : null };
}

/**
 * A fingerprint of what the receiver's check ({@link receivedEnvelope}) accepts under `schemas`: the validator's rules, the types and the
 * outline of each schema. Equal fingerprints mean equal answers.
 *
 * @example
 * schemasFingerprint(EVENT_DATA_SCHEMAS) // '3f1c…' (32 hex digits)
 */
export function schemasFingerprint(schemas: Readonly<Record<string, z.ZodType>>): string {
  const outline = Object.keys(schemas)
    .sort()
    .map((type) => [type, validatorOutline(schemas[type]!)]);
  return createHash('sha256')
    .update(JSON.stringify({ rules: CERTAIN_VALIDATOR_REVISION, outline }))
    .digest('hex')
    .slice(0, 32);
}

let fingerprint: string | undefined;

/**
 * The fingerprint of this build's catalog ({@link schemasFingerprint}). The receiver stores it with a body it found
 * certainly valid; the worker trusts the mark only when it equals its own, so a build whose schemas or rules differ (an
 * upgrade that tightened a schema, or added a type) reads such bodies in full again.
 */
export function dataCheckFingerprint(): string {
  fingerprint ??= schemasFingerprint(EVENT_DATA_SCHEMAS);
  return fingerprint;
}

/**
 * The event of a stored body that the receiver found certainly valid ({@link receivedEnvelope}): `eventId` and
 * `eventType` as stored beside it, `data` read from the body when a handler first reads it (then, for a catalog type,
 * parsed by its schema, as {@link parseJsonEvent} gives it). A handler that never reads `data` costs no JSON.parse.
 *
 * @example
 * const event = storedValidEvent('evt_1', 'INVOICE_PAID', row.raw_body);
 * event.data.invoiceId; // parsed now
 */
export function storedValidEvent(eventId: string, eventType: string, rawBody: string): WebhookEvent | UnknownEvent {
  const dataOfBody = () => (parseBodyJson(rawBody) as Envelope).data;
  if (isEventType(eventType)) return lazyEvent(eventId, eventType, () => EVENT_DATA_SCHEMAS[eventType].parse(dataOfBody())) as WebhookEvent;
  return Object.assign(
    lazyEvent(eventId, eventType, () => ({ ...dataOfBody() })),
    { unknown: true as const },
  ) as UnknownEvent;
}

/** {@link parseEvent} that throws the {@link EventParseError}. */
export function parseEventOrThrow(input: unknown): WebhookEvent | UnknownEvent {
  const result = parseEvent(input);
  if (!result.ok) throw result.error;
  return result.event;
}
