/**
 * Reads a `Retry-After` header, in either of its forms (RFC 9110): delay seconds, or an HTTP date.
 * Returns seconds to wait (never negative), or undefined when absent or unreadable.
 *
 * @example
 * parseRetryAfter('1') // 1
 * parseRetryAfter(new Date(Date.now() + 5000).toUTCString()) // about 5
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  // Date.parse also reads ISO strings and plain numbers; only the HTTP-date shape (with a weekday) is meant here.
  if (!/^[A-Za-z]{3},/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}
