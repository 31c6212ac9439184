import { PayhooksError } from '../errors.js';
import { EVENT_TYPES, type EventType, isEventType } from '../events/index.js';
import { editDistance } from '../internal/edit-distance.js';

/**
 * `on()` was given an event type that is not in the catalog. Registering it anyway would leave the real type
 * without a handler: its events would be stored and marked `ignored`, and the money they announce never
 * booked. Pass `{ allowUnknownType: true }` for a type this version of payhooks does not know yet.
 */
export class UnknownEventTypeError extends PayhooksError {
  constructor(
    readonly eventType: string,
    /** The catalog types closest to `eventType` (empty when none is close). */
    readonly suggestions: readonly EventType[],
  ) {
    const hint = suggestions.length ? `did you mean ${suggestions.join(' or ')}?` : `the known types are ${EVENT_TYPES.join(', ')}.`;
    super(
      `on() was given the event type ${JSON.stringify(eventType)}, which is not in the catalog: ${hint} ` +
        'For a type this version of payhooks does not know, pass { allowUnknownType: true } as the third argument.',
    );
  }
}

/**
 * The catalog types a mistyped `eventType` most likely meant: the nearest by edit distance, compared in upper
 * case with `.`, `-` and spaces read as `_` (so `invoice.paid` finds INVOICE_PAID), and only when near enough to be
 * a slip (at most 3 edits, and at most a quarter of the name) rather than a different event altogether.
 *
 * @example
 * closestEventTypes('INVOICE_PAYED') // ['INVOICE_PAID']
 */
export function closestEventTypes(eventType: string): EventType[] {
  const normalised = eventType
    .trim()
    .toUpperCase()
    .replace(/[.\-\s]+/g, '_');
  const limit = Math.min(3, Math.floor(normalised.length / 4));
  let best = Number.POSITIVE_INFINITY;
  let closest: EventType[] = [];
  for (const candidate of EVENT_TYPES) {
    const distance = editDistance(normalised, candidate);
    if (distance > limit || distance > best) continue;
    if (distance < best) closest = [];
    best = distance;
    closest.push(candidate);
  }
  return closest;
}

/**
 * Throws {@link UnknownEventTypeError} for the first type outside the catalog unless unknown types are allowed,
 * and a TypeError for anything but a non-empty string (handlers modules are often plain JavaScript).
 */
export function assertKnownEventTypes(types: readonly string[], allowUnknownType: boolean): void {
  for (const type of types) {
    if (typeof type !== 'string' || type.length === 0) {
      throw new TypeError(`on() takes event type names (non-empty strings), not ${JSON.stringify(type) ?? String(type)}.`);
    }
    if (!allowUnknownType && !isEventType(type)) throw new UnknownEventTypeError(type, closestEventTypes(type));
  }
}
