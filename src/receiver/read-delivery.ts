import { type Envelope, envelopeSchema, MAX_IDENTIFIER_LENGTH, parseBodyJson, resourceKeyOf } from '../events/index.js';
import { describeIssues, issuesOf } from '../events/issues.js';
import { receivedEnvelope } from '../events/parse-event.js';
import type { IncomingEvent } from '../store/inbox.js';
import { unstorableReason } from '../store/inbox.js';
import type { QuarantineKind } from '../store/quarantine.js';

/** A signed body that cannot be stored as an event: which check refused it and the answer's message. */
export interface UnstorableDelivery {
  ok: false;
  kind: QuarantineKind;
  /** The 400's message (docs/receiver.md): names what is wrong, never quotes the bad value. */
  message: string;
  /** What is logged at warn. */
  logLine: string;
  eventId?: string | undefined;
  eventType?: string | undefined;
}

/** What {@link readDelivery} makes of a signed body: the event to store, or why it cannot be one. */
export type ReadDelivery = { ok: true; event: IncomingEvent } | UnstorableDelivery;

/** Options of {@link readDelivery}. */
export interface ReadDeliveryOptions {
  /** Store without a resource key (no per-resource order): an operator's choice when releasing `unstorable_resource`. */
  unordered?: boolean | undefined;
}

/**
 * The receiver's checks after the signature, in order (UTF-8, JSON, envelope, resource id, storable text): the same
 * for a delivery and for the release of a quarantined one, so a release stores exactly what the receiver would.
 *
 * @example
 * const read = readDelivery(bytes, { 'content-type': 'application/json' });
 * if (!read.ok) console.log(read.kind, read.message); // not_json The body is not valid JSON.
 */
export function readDelivery(rawBody: Uint8Array, headers: Record<string, string>, options: ReadDeliveryOptions = {}): ReadDelivery {
  const text = decodeUtf8(rawBody);
  if (text === undefined) return refused('not_utf8', 'The body is not valid UTF-8.');
  let json: unknown;
  try {
    json = parseBodyJson(text);
  } catch {
    // Also what V8 answers to nesting too deep to parse: refused the same way every time.
    return refused('not_json', 'The body is not valid JSON.');
  }
  // Most bodies are plainly valid envelopes, read without the envelope's schema (which would copy `data` once more);
  // the rest go through it, so that a refusal explains itself the same way every time.
  const envelope = receivedEnvelope(json) ?? envelopeFromSchema(json);
  if ('kind' in envelope) return envelope;
  const { eventId, eventType, data, dataValidUnder } = envelope;
  const resourceKey = options.unordered ? null : resourceKeyOf(eventType, data);
  if (resourceKey !== null && !isStorableKey(resourceKey)) {
    return {
      ...refused(
        'unstorable_resource',
        `The resource id this ${eventType} names cannot be stored: ids of at most ${MAX_IDENTIFIER_LENGTH} characters without U+0000 are.`,
      ),
      logLine: 'signed delivery refused: the resource id it names cannot be stored',
      eventId,
      eventType,
    };
  }
  const event: IncomingEvent = { eventId, eventType, resourceKey, rawBody: text, headers, dataValidUnder };
  const reason = unstorableReason(event);
  if (reason !== undefined) return unstorableEvent(`This event cannot be stored: ${reason}.`, eventId, eventType);
  return { ok: true, event };
}

/**
 * The envelope as its schema reads it (not marked: its data is left for the worker to check), or why it is refused.
 * For what {@link receivedEnvelope} is not certain of.
 */
function envelopeFromSchema(json: unknown): (Envelope & { dataValidUnder: null }) | UnstorableDelivery {
  const envelope = envelopeSchema.safeParse(json);
  if (envelope.success) return { ...envelope.data, dataValidUnder: null };
  const issues = describeIssues(issuesOf(envelope.error));
  const loose = json as { eventId?: unknown; eventType?: unknown } | null;
  return {
    ...refused('not_envelope', `The body is not a webhook envelope ({eventId, eventType, data}): ${issues}.`),
    logLine: 'signed delivery refused: not a storable envelope',
    eventId: typeof loose?.eventId === 'string' ? loose.eventId : undefined,
    eventType: typeof loose?.eventType === 'string' ? loose.eventType : undefined,
  };
}

/**
 * An envelope the database refuses to store (`unstorableReason`, or a data error of its own at the insert), as the
 * quarantine takes it.
 */
export function unstorableEvent(message: string, eventId: string, eventType: string): UnstorableDelivery {
  return { ...refused('unstorable_event', message), eventId, eventType };
}

function refused(kind: QuarantineKind, message: string): UnstorableDelivery {
  return { ok: false, kind, message, logLine: `signed delivery refused: ${message}` };
}

/** A resource key the inbox's index can hold: its id part bounded like an eventId, and no U+0000. */
function isStorableKey(key: string): boolean {
  return key.length <= MAX_IDENTIFIER_LENGTH + 20 && !key.includes('\u0000');
}

// ignoreBOM: a byte order mark stays in the text, so the stored body is byte for byte what was signed.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}
