const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 } as const;

/**
 * Parses a duration such as `30d`, `12h`, `4d7h` or `90m` into milliseconds.
 *
 * @example
 * parseDuration('4d7h') // 370_800_000
 */
export function parseDuration(text: string): number {
  const parts = [...text.trim().matchAll(/(\d+)\s*([dhms])/g)];
  const consumed = parts.map((p) => p[0]).join('');
  if (parts.length === 0 || consumed.replace(/\s/g, '') !== text.replace(/\s/g, '')) {
    throw new Error(`Invalid duration ${JSON.stringify(text)}: use a number with d, h, m or s, e.g. 30d or 4d7h.`);
  }
  return parts.reduce((sum, [, amount, unit]) => sum + Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS], 0);
}
