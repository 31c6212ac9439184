const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 } as const;

/**
 * The longest delay a Node timer can hold (2^31 − 1 ms, about 24.8 days). A longer one is not refused by Node:
 * it warns and fires after 1 ms, so a `30d` interval would run back to back and a `30d` timeout would abort at once.
 */
export const MAX_TIMER_MS = 2_147_483_647;

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

/**
 * A number of milliseconds written as the configuration writes durations, largest units first (`ms` below a second).
 *
 * @example
 * formatDuration(90_000) // '1m30s'
 * formatDuration(250) // '250ms'
 */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  let rest = Math.floor(ms / 1000) * 1000;
  let text = '';
  for (const [unit, size] of Object.entries(UNIT_MS)) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return text;
}

/** The bounds a duration setting accepts, inclusive. */
export interface DurationRange {
  minMs: number;
  maxMs: number;
}

/**
 * Why `ms` is outside `range`, in words that name the bounds (`between 1m and 24d`); undefined when it fits.
 *
 * @example
 * durationRangeProblem(30 * 86_400_000, { minMs: 60_000, maxMs: 24 * 86_400_000 }) // 'must be between 1m and 24d'
 */
export function durationRangeProblem(ms: number, range: DurationRange): string | undefined {
  if (Number.isFinite(ms) && ms >= range.minMs && ms <= range.maxMs) return undefined;
  return `must be between ${formatDuration(range.minMs)} and ${formatDuration(range.maxMs)}`;
}

/**
 * `ms` when a timer (setTimeout, setInterval, AbortSignal.timeout) can wait that long; otherwise a RangeError
 * that names the setting, since Node would fire such a timer after 1 ms instead.
 *
 * @example
 * setInterval(run, timerDelay(everyMs, 'the reconciliation interval'));
 */
export function timerDelay(ms: number, what: string, minMs = 1): number {
  if (!Number.isFinite(ms) || ms < minMs || ms > MAX_TIMER_MS) {
    throw new RangeError(
      `${what} must be a number of milliseconds from ${minMs} to ${MAX_TIMER_MS} (about 24.8 days, the longest a timer can wait), not ${String(ms)}.`,
    );
  }
  return ms;
}
