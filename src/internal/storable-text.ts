// PostgreSQL's text cannot hold U+0000, and jsonb refuses the `\u0000` escape and lone surrogates (`\ud800`), on the
// server and on PGlite alike, although all of them are valid in a JSON string the service may send. Writers of event
// or API data pass their values through `storable` so that such a value is stored (docs/receiver.md#what-postgres-cannot-hold)
// instead of failing the write for ever. U+FFFD is what UTF-8 encoding already makes of a lone surrogate, so one rule
// covers both; the exact original stays in the event's raw body and in the service.

/** What is stored in place of each character Postgres cannot hold: U+FFFD, the Unicode replacement character. */
export const REPLACEMENT_CHARACTER = '\ufffd';

// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is the character to replace
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` with every U+0000 and every lone surrogate replaced by U+FFFD: what Postgres text and jsonb can hold.
 *
 * @example
 * storableText('Ada\u0000Lovelace') // 'Ada\ufffdLovelace'
 */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, REPLACEMENT_CHARACTER);
}

/**
 * `value` with {@link storableText} applied to every string in it, object keys included, at any depth of plain
 * objects and arrays; anything else (numbers, dates, buffers) as it is. Returns `value` itself when nothing changed.
 * Two keys that differ only by the replaced characters become one (the later wins).
 *
 * @example
 * storable({ name: 'Ada\u0000Lovelace', meta: { 'a\u0000': 'b' } }) // { name: 'Ada\ufffdLovelace', meta: { 'a\ufffd': 'b' } }
 */
export function storable<T>(value: T): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (Array.isArray(value)) {
    const mapped = value.map(storable);
    return (mapped.some((item, i) => item !== value[i]) ? mapped : value) as T;
  }
  if (value === null || typeof value !== 'object') return value;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const entry = [storableText(key), storable(item)] as const;
    if (entry[0] !== key || entry[1] !== item) changed = true;
    return entry;
  });
  return changed ? (Object.fromEntries(entries) as T) : value;
}
