/**
 * The optimal-string-alignment distance between two strings: the fewest single-character insertions,
 * deletions, substitutions and swaps of neighbours that turn `a` into `b`. Swaps count once because
 * `INVOICE_PIAD` is one slip of the fingers, not two. Sizes here are event-type names, so the
 * quadratic table costs nothing.
 *
 * @example
 * editDistance('INVOICE_PAYED', 'INVOICE_PAID') // 2
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j]: distance between the first i characters of a and the first j of b.
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : i)),
  );
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i]!;
    const above = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      row[j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}
