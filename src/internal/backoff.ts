/** How a run of retries is spaced: see {@link backoffDelay}. */
export interface BackoffRule {
  /** The delay after the first failure, before jitter. */
  baseMs: number;
  /** The longest delay, before jitter. */
  maxMs: number;
  /**
   * Draw each delay from the upper half of its value (`[0.5, 1)` of it), so that what failed together does not all
   * come back at the same instant. Off where one caller waits alone (a restart of its own child, one address's
   * failed logins), where the plain doubling is easier to read in a log. Default true.
   */
  jitter?: boolean | undefined;
}

/**
 * The one exponential backoff of payhooks (the worker's retries, the API client's, the sinks' through the worker,
 * the worker process's restarts, the console's login throttle): `baseMs · 2^(failures − 1)`, capped at `maxMs`, then
 * jittered. `failures` counts the failures so far, from 1; 0 or less waits nothing.
 *
 * @example
 * backoffDelay(3, { baseMs: 1000, maxMs: 60_000 }) // between 2000 and 4000
 * backoffDelay(3, { baseMs: 1000, maxMs: 60_000, jitter: false }) // 4000
 */
export function backoffDelay(failures: number, rule: BackoffRule, random: () => number = Math.random): number {
  if (failures <= 0) return 0;
  // The exponent stops growing once the cap is reached, so that a long run of failures cannot overflow to Infinity.
  const delay = Math.min(rule.maxMs, rule.baseMs * 2 ** Math.min(failures - 1, 52));
  return rule.jitter === false ? delay : delay * (0.5 + random() / 2);
}

/**
 * Why a backoff rule is unusable, each with the field it names; empty when it is fine: both positive, finite
 * milliseconds, the cap not below the base. The worker refuses such options, and the configuration file reports
 * them under their own keys.
 *
 * @example
 * backoffProblems({ baseMs: -1 }) // [{ option: 'baseMs', message: 'must be a positive number of milliseconds, not -1.' }]
 */
export function backoffProblems(rule: Partial<Pick<BackoffRule, 'baseMs' | 'maxMs'>>): { option: 'baseMs' | 'maxMs'; message: string }[] {
  const problems: { option: 'baseMs' | 'maxMs'; message: string }[] = [];
  for (const option of ['baseMs', 'maxMs'] as const) {
    const value = rule[option];
    if (value !== undefined && (!Number.isFinite(value) || value <= 0)) {
      problems.push({ option, message: `must be a positive number of milliseconds, not ${value}.` });
    }
  }
  if (problems.length === 0 && rule.baseMs !== undefined && rule.maxMs !== undefined && rule.maxMs < rule.baseMs) {
    problems.push({ option: 'maxMs', message: `(${rule.maxMs}) must not be shorter than baseMs (${rule.baseMs}): it caps every delay.` });
  }
  return problems;
}
