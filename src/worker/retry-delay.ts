import { backoffDelay } from '../internal/backoff.js';
import { WORKER_DEFAULTS } from './defaults.js';

/** How retries are spaced: exponential from `baseMs`, capped at `maxMs`, with jitter. */
export interface BackoffOptions {
  /** Delay before the second attempt, before jitter. Default 1000 ms. */
  baseMs?: number | undefined;
  /** Longest delay. Default 1 hour. */
  maxMs?: number | undefined;
}

/**
 * The delay before attempt `failedAttempt + 1`, by the worker's backoff (`WORKER_DEFAULTS.backoff` unless given):
 * payhooks' one backoff ({@link backoffDelay}), jittered so that events failing together do not all come back at the
 * same instant.
 *
 * @example
 * eventRetryDelay(3) // between 2000 and 4000 ms
 */
export function eventRetryDelay(failedAttempt: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  const rule = { baseMs: options.baseMs ?? WORKER_DEFAULTS.backoff.baseMs, maxMs: options.maxMs ?? WORKER_DEFAULTS.backoff.maxMs };
  // An attempt numbered 0 or less (none failed yet) waits as the first retry does.
  return Math.round(backoffDelay(Math.max(1, failedAttempt), rule, random));
}
