// C0 and C1 control characters, DEL, and the line and paragraph separators: a stored id or error (sender's
// text) must not move the cursor, recolour the terminal or forge a line of output.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * Stored text made safe to print on a terminal: control characters written as `\u001b`-style escapes.
 *
 * @example
 * printable('evt\u001b[2J') // 'evt\\u001b[2J'
 */
export function printable(text: string): string {
  return text.replace(CONTROL, escapeChar);
}

// What JSON.stringify leaves as it is although a terminal may act on it (it escapes U+0000 to U+001F itself).
const LEFT_BY_JSON = /[\u007f-\u009f\u2028\u2029]/g;

/**
 * JSON text made safe to print: the controls JSON.stringify leaves raw become `\uXXXX` escapes, which keeps the
 * JSON valid and its values the same, while the layout's own newlines stay.
 *
 * @example
 * printableJson(JSON.stringify({ id: 'a\u009bb' })) // '{"id":"a\\u009bb"}'
 */
export function printableJson(json: string): string {
  return json.replace(LEFT_BY_JSON, escapeChar);
}

function escapeChar(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * "1 event", "2 events": a count with its noun.
 *
 * @example
 * countOf(3, 'event') // '3 events'
 */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * At most `size` ids, then how many more there are: never one endless line of ids.
 *
 * @example
 * sampleOf(['a', 'b'], 5) // 'a, b, … and 3 more'
 */
export function sampleOf(ids: readonly string[], total: number, size = ids.length): string {
  const shown = ids.slice(0, size);
  const more = total - shown.length;
  return `${shown.map(printable).join(', ')}${more > 0 ? `, … and ${more} more` : ''}`;
}

/**
 * A duration in its two largest units, for ages.
 *
 * @example
 * formatAge(93_784_000) // '1d 2h'
 */
export function formatAge(ms: number): string {
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  let rest = Math.max(0, Math.floor(ms / 1000) * 1000);
  const parts: string[] = [];
  for (const [unit, size] of units) {
    const amount = Math.floor(rest / size);
    rest -= amount * size;
    if (amount > 0 || parts.length > 0) parts.push(`${amount}${unit}`);
  }
  return parts.length ? parts.slice(0, 2).join(' ') : '0s';
}

/**
 * Columns padded to their widest cell, two spaces apart; the columns in `rightAligned` (indexes) line up
 * on the right, as numbers should.
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[], rightAligned: readonly number[] = []): string {
  const all = [header, ...rows.map((row) => row.map(printable))];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all
    .map((row) =>
      row
        .map((cell, i) => (rightAligned.includes(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
