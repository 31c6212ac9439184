/** The middle value (the mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A whole number with thousands separators: 12,345. */
export function whole(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a';
}

/** A ratio to two decimals with its x: 1.87x. */
export function times(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}x` : 'n/a';
}

/** A share as a whole percentage: 0.83 → 83%. */
export function percent(share: number): string {
  return Number.isFinite(share) ? `${Math.round(share * 100)}%` : 'n/a';
}

/** How many rounds each comparison runs; at least 3, so that a median means something. */
export function rounds(): number {
  const fromEnv = Number(process.env.BENCH_ROUNDS ?? 3);
  return Number.isInteger(fromEnv) && fromEnv >= 3 ? fromEnv : 3;
}

/**
 * BENCH_SCALE shrinks (or grows) the counts for a quick look: 0.1 runs a tenth of the events and a tenth of the
 * seconds. Results at another scale than 1 say so at the top of the report.
 */
export function scale(): number {
  const value = Number(process.env.BENCH_SCALE ?? 1);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`BENCH_SCALE must be a positive number, not ${process.env.BENCH_SCALE}`);
  return value;
}

export function scaled(count: number): number {
  return Math.max(1, Math.round(count * scale()));
}
