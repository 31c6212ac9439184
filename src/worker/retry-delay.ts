import { WORKER_DEFAULTS } from './defaults.js';

/** How retries are spaced: exponential from `baseMs`, capped at `maxMs`, with jitter. */
export interface BackoffOptions {
  /** Delay before the second attempt, before jitter. Default 1000 ms. */
  baseMs?: number | undefined;
  /** Longest delay. Default 1 hour. */
  maxMs?: number | undefined;
}

/**
 * The delay before attempt `failedAttempt + 1`: base · 2^(failedAttempt − 1), capped, then scaled by a
 * random factor in [0.5, 1) so that events failing together do not all come back at the same instant.
 *
 * @example
 * eventRetryDelay(3) // between 2000 and 4000 ms
 */
export function eventRetryDelay(failedAttempt: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  const base = options.baseMs ?? WORKER_DEFAULTS.backoff.baseMs;
  const max = options.maxMs ?? WORKER_DEFAULTS.backoff.maxMs;
  const exponential = Math.min(max, base * 2 ** Math.max(0, failedAttempt - 1));
  return Math.round(exponential * (0.5 + random() / 2));
}
