import { storableText } from './storable-text.js';

/** The longest text payhooks logs or stores as an error: longer text is cut, saying how long it was. */
export const MAX_TEXT_CHARS = 8 * 1024;

/**
 * `text` cut to `max` characters, with the original length noted, so that a 10 MB error message costs 8 KB
 * of log or of `last_error`, not 10 MB at every attempt; and as Postgres can store it ({@link storableText}): an
 * error that quotes event data holding U+0000 must not make its own outcome impossible to record.
 *
 * @example
 * capText('x'.repeat(10_000), 10) // 'xxxxxxxxxx… [cut: 10000 characters in all]'
 */
export function capText(text: string, max = MAX_TEXT_CHARS): string {
  return storableText(text.length <= max ? text : `${text.slice(0, max)}… [cut: ${text.length} characters in all]`);
}

// Keys whose values are secrets or personal data, whatever their depth (compared in lower case, without - and _).
const SECRET_KEYS = new Set([
  'secret',
  'secrets',
  'apikey',
  'password',
  'authorization',
  'token',
  'accesstoken',
  'email',
  'phone',
  'phonenumber',
  'secondaryphonenumber',
  'cardholder',
  'rawbody',
  'xwebhooksignature',
  'webhooksignature',
  'svixsignature',
]);

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;
// E.164 as the service requires (+ and 7 to 15 digits), also written with spaces, dots or dashes.
const PHONE = /\+\d(?:[\s.-]?\d){6,14}/g;
const KEY = /\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]+|\bwhsec_[A-Za-z0-9+/=]+/g;
const MAX_DEPTH = 8;

/** A string with emails, phone numbers and keys masked, and capped in length. */
export function scrubText(text: string): string {
  return capText(text).replace(EMAIL, '[email]').replace(PHONE, '[phone]').replace(KEY, '[key]');
}

/**
 * A copy of `value` that is safe to log: secrets and personal data masked at any depth (by key name, and by
 * shape inside any string: emails, E.164 phone numbers, API keys), long text capped, errors reduced to their
 * type, message, code and stack. Never throws, whatever it is given (null prototypes, getters that throw,
 * cycles).
 *
 * @example
 * scrubForLog({ customer: { email: 'ada@example.com' }, note: 'call +52 55 1234 5678' })
 * // { customer: { email: '[redacted]' }, note: 'call [phone]' }
 */
export function scrubForLog(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (value === null || typeof value !== 'object') return typeof value === 'function' || typeof value === 'symbol' ? String(value) : value;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  seen.add(value);
  try {
    if (value instanceof Error) return scrubError(value, depth, seen);
    if (value instanceof Date) return value;
    if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
    if (Array.isArray(value)) return value.slice(0, 100).map((item) => scrubForLog(item, depth + 1, seen));
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      copy[key] = SECRET_KEYS.has(key.toLowerCase().replace(/[-_]/g, ''))
        ? '[redacted]'
        : scrubForLog((value as Record<string, unknown>)[key], depth + 1, seen);
    }
    return copy;
  } catch {
    return '[unreadable]';
  }
}

function scrubError(error: Error, depth: number, seen: WeakSet<object>): Record<string, unknown> {
  const scrubbed: Record<string, unknown> = { type: error.name, message: scrubText(String(error.message)) };
  const code = (error as { code?: unknown }).code;
  if (code !== undefined) scrubbed.code = scrubForLog(code, depth + 1, seen);
  if (typeof error.stack === 'string') scrubbed.stack = scrubText(error.stack);
  if (error.cause !== undefined) scrubbed.cause = scrubForLog(error.cause, depth + 1, seen);
  return scrubbed;
}

/**
 * Any thrown value as one line of text for logs and `last_error`: never throws, whatever was thrown
 * (`Object.create(null)`, a getter that throws, a 10 MB message), and capped.
 *
 * @example
 * describeThrown(new TypeError('bad')) // 'TypeError: bad'
 * describeThrown(Object.create(null))   // '[object without prototype] {}'
 */
export function describeThrown(thrown: unknown): string {
  try {
    if (thrown instanceof Error) return capText(`${thrown.name}: ${thrown.message}`);
    if (typeof thrown === 'string') return capText(thrown);
    if (thrown !== null && typeof thrown === 'object' && Object.getPrototypeOf(thrown) === null) {
      return capText(`[object without prototype] ${JSON.stringify(thrown) ?? ''}`.trim());
    }
    return capText(String(thrown));
  } catch {
    return '[a value that cannot be turned into text]';
  }
}
