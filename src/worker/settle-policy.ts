import { describeThrown, capText } from '../internal/scrub.js';
import type { GivenUpHandler } from '../store/claim.js';
import type { Outcome } from '../store/outcomes.js';
import { failureVerdict, type HandlerFailure } from './handler-errors.js';
import { eventRetryDelay } from './retry-delay.js';

/** What one attempt of an event came to, handler by handler: what the settle policy decides on. */
export interface AttemptResult {
  account: string;
  eventId: string;
  /** This attempt's number, from 1. */
  attempt: number;
  /** The resource whose order the event keeps (`invoice:inv_1`), for the words of a park. */
  resourceKey: string | null;
  /** Handlers that failed in this attempt (a {@link DeadLetterError} among them gives up at once). */
  failures: readonly HandlerFailure[];
  /** Handlers not run: an earlier event of the resource still owes them. */
  skipped: readonly string[];
  /** Handlers stopped by an effect step of unknown outcome that may not be called again: held for an operator. */
  reviews: readonly HandlerFailure[];
  /** Handlers that gave up on the event in an earlier attempt. */
  givenUpBefore: readonly GivenUpHandler[];
}

/** The worker's settings the policy reads. */
export interface SettleRules {
  maxAttempts: number;
  backoff: { baseMs: number; maxMs: number };
  /** The backoff's jitter; tests pass a fixed one. */
  random?: (() => number) | undefined;
}

/**
 * How an attempt ends. `gaveUp` lists the handlers that give up on the event in this attempt (each is recorded as
 * such before the `outcome`); `outcome` is the event's next state, for the outcome writer.
 */
export type Settlement =
  | { kind: 'done'; gaveUp: readonly HandlerFailure[]; outcome: Extract<Outcome, { kind: 'finished' }> }
  | { kind: 'dead'; gaveUp: readonly HandlerFailure[]; outcome: Extract<Outcome, { kind: 'finished' }>; deadHandlers: string[] }
  | { kind: 'needs-review'; gaveUp: readonly HandlerFailure[]; outcome: Extract<Outcome, { kind: 'finished' }>; held: string[] }
  | { kind: 'retry'; gaveUp: readonly HandlerFailure[]; outcome: Extract<Outcome, { kind: 'retry' }>; retried: string[] }
  | { kind: 'park'; gaveUp: readonly HandlerFailure[]; outcome: Extract<Outcome, { kind: 'park' }>; waitingFor: string }
  | { kind: 'failed-outside-handlers'; gaveUp: readonly HandlerFailure[]; outcome: Extract<Outcome, { kind: 'retry' | 'finished' }> };

/**
 * The `lastError` of a run: the failures of this run and the handlers that gave up on an earlier one. A single failure
 * of this run reads as it was thrown; otherwise each is prefixed by its handler's name, so that the operator sees
 * which sink failed or gave up. Null when there is none.
 */
export function describeFailures(failures: readonly HandlerFailure[], givenUpBefore: readonly GivenUpHandler[]): string | null {
  const only = failures.length === 1 && givenUpBefore.length === 0 ? failures[0] : undefined;
  if (only) return describeThrown(only.error);
  const parts = [
    ...failures.map((f) => `${f.handler}: ${describeThrown(f.error)}`),
    ...givenUpBefore.map((g) => `${g.handler}: ${g.error}`),
  ];
  return parts.length > 0 ? capText(parts.join('; ')) : null;
}

/**
 * Decides how an attempt whose handlers have all run (or been skipped) ends, without I/O: retried when a handler failed
 * and may be retried (after the longest of the backoff and what handlers asked for); parked when nothing failed but
 * handlers were left for an earlier event of the resource; `needs-review` when a handler is held at an effect step of
 * unknown outcome; else finished, `dead` when any handler gave up (now or earlier), `done` otherwise.
 *
 * @example
 * settleAttempt({ account: 'default', eventId: 'evt_1', attempt: 1, resourceKey: null, failures: [], skipped: [], reviews: [], givenUpBefore: [] }, rules)
 * // { kind: 'done', gaveUp: [], outcome: { kind: 'finished', account: 'default', eventId: 'evt_1', status: 'done', lastError: null } }
 */
export function settleAttempt(result: AttemptResult, rules: SettleRules): Settlement {
  const { account, eventId, attempt, failures, skipped, reviews, givenUpBefore } = result;
  const verdict =
    failures.length === 0
      ? { givenUp: [], retried: [], delayMs: 0 }
      : failureVerdict(failures, attempt, rules.maxAttempts, eventRetryDelay(attempt, rules.backoff, rules.random), rules.backoff.maxMs);
  const gaveUp = verdict.givenUp;
  const lastError =
    failures.length + reviews.length + givenUpBefore.length === 0 ? null : describeFailures([...reviews, ...failures], givenUpBefore);
  // A handler held for review is owed like a failed one while the event is still retried or parked: it runs again
  // then, and stops at the same step, calling nothing, until an operator has resolved it.
  const held = reviews.map((r) => r.handler);
  if (verdict.retried.length > 0) {
    const retried = verdict.retried.map((f) => f.handler);
    const owed = [...retried, ...skipped, ...held];
    return {
      kind: 'retry',
      gaveUp,
      retried,
      outcome: { kind: 'retry', account, eventId, delayMs: verdict.delayMs, lastError: lastError ?? '', owed },
    };
  }
  if (skipped.length > 0) {
    const waitingFor = `an earlier event of ${result.resourceKey} at ${skipped.join(', ')}`;
    return {
      kind: 'park',
      gaveUp,
      waitingFor,
      outcome: { kind: 'park', account, eventId, owed: [...skipped, ...held], lastError: lastError ?? `Waiting for ${waitingFor}.` },
    };
  }
  if (held.length > 0) {
    // Out of the queue like a final state; resolving the step puts it back (docs/effects.md#needs-review).
    return { kind: 'needs-review', gaveUp, held, outcome: { kind: 'finished', account, eventId, status: 'needs-review', lastError } };
  }
  if (gaveUp.length > 0 || givenUpBefore.length > 0) {
    const deadHandlers = [...gaveUp.map((f) => f.handler), ...givenUpBefore.map((g) => g.handler)];
    return { kind: 'dead', gaveUp, deadHandlers, outcome: { kind: 'finished', account, eventId, status: 'dead', lastError } };
  }
  return { kind: 'done', gaveUp, outcome: { kind: 'finished', account, eventId, status: 'done', lastError: null } };
}

/**
 * A failure outside any handler (the event could not be run at all): the whole event is retried, every handler
 * owed, or is dead on the last attempt.
 */
export function settleFailureOutsideHandlers(
  { account, eventId }: { account: string; eventId: string },
  attempt: number,
  error: unknown,
  rules: SettleRules,
): Extract<Settlement, { kind: 'failed-outside-handlers' }> {
  const lastError = describeThrown(error);
  if (attempt >= rules.maxAttempts) {
    return { kind: 'failed-outside-handlers', gaveUp: [], outcome: { kind: 'finished', account, eventId, status: 'dead', lastError } };
  }
  const delayMs = eventRetryDelay(attempt, rules.backoff, rules.random);
  return { kind: 'failed-outside-handlers', gaveUp: [], outcome: { kind: 'retry', account, eventId, delayMs, lastError, owed: null } };
}
