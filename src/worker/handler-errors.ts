/**
 * Thrown by a handler when retrying cannot help (the target refused the request as malformed, say): the worker
 * does not spend the remaining attempts on it, and the event goes to `dead` once no other handler of it still
 * has a retry coming. Handlers that completed stay completed; `payhooks replay` runs only the rest.
 *
 * @example
 * if (response.status === 400) throw new DeadLetterError(`the CRM refused the contact: ${await response.text()}`);
 */
export class DeadLetterError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DeadLetterError';
  }
}

/**
 * Thrown by a handler that was told when to come back (a 429 or 503 with `Retry-After`): the next attempt
 * waits at least `afterMs`, or the backoff delay if that is longer, capped at the backoff's `maxMs`.
 *
 * @example
 * throw new RetryLaterError('the CRM is rate limiting us', { afterMs: 2000 });
 */
export class RetryLaterError extends Error {
  readonly afterMs: number;

  constructor(message: string, options: ErrorOptions & { afterMs: number }) {
    super(message, options);
    this.name = 'RetryLaterError';
    this.afterMs = Math.max(0, options.afterMs);
  }
}

/** One handler's failure in a run of an event's handlers. */
export interface HandlerFailure {
  handler: string;
  error: unknown;
}

/**
 * What the failures of one run mean for the event: `dead` when every failure was a {@link DeadLetterError} (or
 * the attempts are used up), else a retry after the longest delay a handler asked for, or the backoff's.
 */
export function failureVerdict(
  failures: readonly HandlerFailure[],
  attempt: number,
  maxAttempts: number,
  backoffDelayMs: number,
  maxDelayMs: number,
): { kind: 'dead' } | { kind: 'retry'; delayMs: number } {
  const retryable = failures.filter((f) => !(f.error instanceof DeadLetterError));
  if (retryable.length === 0 || attempt >= maxAttempts) return { kind: 'dead' };
  const asked = retryable.map((f) => (f.error instanceof RetryLaterError ? f.error.afterMs : 0));
  return { kind: 'retry', delayMs: Math.min(maxDelayMs, Math.max(backoffDelayMs, ...asked)) };
}
