import { z } from 'zod';

/**
 * The longest `eventId` or `eventType` payhooks stores. Postgres indexes refuse keys over about 2,700 bytes,
 * so a longer id could be signed but never stored; 255 characters (at most 1,020 bytes) leave room to spare.
 */
export const MAX_IDENTIFIER_LENGTH = 255;

/**
 * An identifier stored exactly as sent: never trimmed (`" evt_1 "` and `"evt_1"` would otherwise be taken for
 * the same event), so white space around it is refused instead, and so is what Postgres text cannot hold (U+0000).
 */
const identifier = z
  .string()
  .min(1, 'must be a non-empty string')
  .max(MAX_IDENTIFIER_LENGTH, `must be at most ${MAX_IDENTIFIER_LENGTH} characters`)
  .refine((value) => value.trim() === value, 'must not begin or end with white space (identifiers are kept exactly as sent)')
  .refine((value) => !value.includes('\u0000'), 'must not contain U+0000, which the database cannot store');

/**
 * Whether `identifier` accepts `value`, asked without building issues (the worker's reading of stored bodies): the
 * same rules, stated beside them so that they change together.
 */
export function isIdentifier(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= MAX_IDENTIFIER_LENGTH &&
    value.trim() === value &&
    !value.includes('\u0000')
  );
}

/** The delivery envelope: all the receiver checks before storing. */
export const envelopeSchema = z.looseObject({
  eventId: identifier,
  eventType: identifier,
  data: z.record(z.string(), z.unknown()),
});
export type Envelope = { eventId: string; eventType: string; data: Record<string, unknown> };

/**
 * Parses a delivery body's JSON text. A UTF-8 byte order mark is kept in the stored body (it is part of the
 * signed bytes) but is not JSON, so it is skipped here.
 *
 * @example
 * parseBodyJson('\uFEFF{"eventId":"evt_1"}') // { eventId: 'evt_1' }
 */
export function parseBodyJson(text: string): unknown {
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
}
