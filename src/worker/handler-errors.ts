import { PayhooksError } from '../errors.js';

/**
 * Thrown by a handler when retrying cannot help (the target refused the request as malformed, say): this handler
 * gives up on the event and is not run for it again, while the event's other handlers go on (and are retried if
 * they failed); the event ends `dead` once they are through. Handlers that completed stay completed;
 * `payhooks replay` runs only the rest.
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

/** A handler that ran past `handlerTimeoutMs`: its run fails with this, and its signal aborts with it. */
export class HandlerTimeoutError extends PayhooksError {
  constructor(
    readonly handler: string,
    readonly timeoutMs: number,
  ) {
    super(`handler ${handler} timed out after ${timeoutMs} ms`);
  }
}

/**
 * A handler's error as the worker records it: Postgres refusing a U+0000 or a lone surrogate that the handler wrote
 * (SQLSTATE 22021 `… 0x00` for text, 22P05 for jsonb) becomes a {@link DeadLetterError} that says what to do, since
 * the same data fails the same way on every attempt; any other error is returned as it is.
 *
 * @example
 * unstorableTextExplained(pgError) // DeadLetterError: Postgres cannot store … (SQLSTATE 22021: …). Retrying cannot help: …
 */
export function unstorableTextExplained(error: unknown): unknown {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message !== 'string') return error;
  const refused = (code === '22021' && message.includes('0x00')) || code === '22P05';
  if (!refused) return error;
  return new DeadLetterError(
    `Postgres cannot store a U+0000 or lone surrogate that this handler wrote (SQLSTATE ${code}: ${message}). Retrying cannot help: ` +
      "replace them before writing, as payhooks' own writers do (U+FFFD, docs/receiver.md#what-postgres-cannot-hold), then replay the event.",
    { cause: error },
  );
}

/** One handler's failure in a run of an event's handlers. */
export interface HandlerFailure {
  handler: string;
  error: unknown;
}

/** What the failures of one run mean for each failed handler; see {@link failureVerdict}. */
export interface FailureVerdict {
  /** Handlers that give up on the event: a {@link DeadLetterError}, or any failure on the last allowed attempt. */
  givenUp: HandlerFailure[];
  /** Handlers to run again for the event, after `delayMs`. */
  retried: HandlerFailure[];
  /** The wait before the retry (0 when nothing is retried). */
  delayMs: number;
}

/**
 * Sorts the failures of one run: each handler that threw a {@link DeadLetterError}, and every failure on the last
 * allowed attempt, gives up (for this handler only: the event's other handlers go on); the rest are retried after
 * the longest delay a handler asked for, or the backoff's, capped at `maxDelayMs`.
 *
 * @example
 * failureVerdict([{ handler: 'forward:erp', error: new DeadLetterError('400') }], 1, 10, 500, 3_600_000)
 * // { givenUp: [that failure], retried: [], delayMs: 0 }
 */
export function failureVerdict(
  failures: readonly HandlerFailure[],
  attempt: number,
  maxAttempts: number,
  backoffDelayMs: number,
  maxDelayMs: number,
): FailureVerdict {
  const lastAttempt = attempt >= maxAttempts;
  const givenUp = failures.filter((f) => lastAttempt || f.error instanceof DeadLetterError);
  const retried = failures.filter((f) => !givenUp.includes(f));
  if (retried.length === 0) return { givenUp, retried, delayMs: 0 };
  const asked = retried.map((f) => (f.error instanceof RetryLaterError ? f.error.afterMs : 0));
  return { givenUp, retried, delayMs: Math.min(maxDelayMs, Math.max(backoffDelayMs, ...asked)) };
}

/** The longest error class kept: a class name, not a message. */
const MAX_ERROR_CLASS_CHARS = 120;

/**
 * The class an issue groups a handler's failure by (migrations/020): the thrown error's constructor name
 * (`TypeError`, `HandlerTimeoutError`, an API client's error class …), or `typeof` of a thrown non-error. The
 * worker's own signals, {@link DeadLetterError} and {@link RetryLaterError}, say what to do, not what went wrong:
 * when they wrap an error (`cause`), its class is taken instead.
 *
 * @example
 * errorClassOf(new TypeError('x')) // 'TypeError'
 * errorClassOf(new DeadLetterError('refused', { cause: new RangeError('y') })) // 'RangeError'
 */
export function errorClassOf(error: unknown): string {
  if ((error instanceof DeadLetterError || error instanceof RetryLaterError) && error.cause instanceof Error)
    return errorClassOf(error.cause);
  if (!(error instanceof Error)) return error === null ? 'null' : typeof error;
  const constructorName = (error.constructor as { name?: unknown } | undefined)?.name;
  const name = typeof constructorName === 'string' && constructorName !== '' ? constructorName : error.name || 'Error';
  return name.slice(0, MAX_ERROR_CLASS_CHARS);
}
