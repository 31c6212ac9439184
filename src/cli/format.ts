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
  return `${shown.join(', ')}${more > 0 ? `, … and ${more} more` : ''}`;
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
  const all = [header, ...rows];
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
