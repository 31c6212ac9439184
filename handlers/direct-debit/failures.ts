import type { HandlerContext, WebhookEvent } from 'payhooks';
import type { ApiClient } from 'payhooks/client';
import type { DirectDebitDb } from './tables.js';

/** A failed collection attempt, as the dunning hook receives it. */
export interface PaymentFailure {
  attemptId: string;
  paymentId: string;
  customerId: string | null;
  /** The invoice the payment settles, when the API says (null without an API key). */
  invoiceId: string | null;
  /** The service's attempt number, from 1. */
  attemptNumber: number;
  errorType: string | null;
  errorCode: string | null;
  amount: number;
  currency: string;
  failedAt: Date;
  /** How many failed attempts of this payment are recorded, this one included. */
  failuresSoFar: number;
}

/**
 * The app's dunning: schedule a retry, notify the customer, suspend after N failures. Called at most once per failed
 * attempt, even across crashes: it runs as the effect step `dunning` (docs/effects.md), before the failure is
 * recorded, so a completed call is not made again when the record is retried. If it throws, nothing is recorded and
 * the worker retries the event (the hook is called again). If the process dies while it runs, its outcome is
 * unknown: a hook whose outside calls go through `ctx.api` (their idempotency key is the step's) or that is declared
 * idempotent (`dunningIdempotent`) is called again; any other is held for an operator (`needs-review`).
 */
export type DunningHook = (failure: PaymentFailure, ctx: HandlerContext<ApiClient>) => Promise<void> | void;

/** A simple dunning policy: retry after the given days, then suspend. */
export interface DunningPolicy {
  /** Days to wait before the retry after the 1st, 2nd, … failure. Default [3, 5, 7]. */
  retryAfterDays?: readonly number[] | undefined;
  /** Failures after which the customer is suspended instead. Default 3. */
  suspendAfter?: number | undefined;
}

/**
 * What a policy says to do after a failure: retry at a date, or suspend.
 *
 * @example
 * dunningDecision({ attemptNumber: 1, failedAt }) // { action: 'retry', retryAt: failedAt + 3 days }
 * dunningDecision({ attemptNumber: 3, failedAt }) // { action: 'suspend' }
 */
export function dunningDecision(
  failure: Pick<PaymentFailure, 'attemptNumber' | 'failedAt'>,
  policy: DunningPolicy = {},
): { action: 'retry'; retryAt: Date } | { action: 'suspend' } {
  const days = policy.retryAfterDays ?? [3, 5, 7];
  const suspendAfter = policy.suspendAfter ?? 3;
  if (failure.attemptNumber >= suspendAfter) return { action: 'suspend' };
  const wait = days[Math.min(failure.attemptNumber, days.length) - 1] ?? days.at(-1) ?? 3;
  return { action: 'retry', retryAt: new Date(failure.failedAt.getTime() + wait * 86_400_000) };
}

/**
 * PAYMENT_ATTEMPT_FAILED, before anything is written: the failure as the dunning hook receives it, or null when this
 * attempt is already recorded (a duplicate, the same attempt resent under another event id, a replay).
 * `failuresSoFar` counts the payment's recorded failures plus this one. Read outside the handler's transaction, so
 * that the hook can run between this and {@link recordFailure}; the failures handler runs the events of one payment
 * one at a time (payhooks orders each resource's events per handler), so no other event of the payment records a
 * failure in between.
 */
export async function pendingFailure(
  db: DirectDebitDb,
  event: WebhookEvent<'PAYMENT_ATTEMPT_FAILED'>,
  invoiceId: string | null,
): Promise<PaymentFailure | null> {
  const { payment, paymentAttempt: attempt, customer } = event.data;
  const recorded = await db.selectFrom('payment_failures').select('attempt_id').where('payment_id', '=', payment.id).execute();
  if (recorded.some((row) => row.attempt_id === attempt.id)) return null;
  return {
    attemptId: attempt.id,
    paymentId: payment.id,
    customerId: customer.id,
    invoiceId,
    attemptNumber: attempt.attemptNumber,
    errorType: attempt.errorType ?? null,
    errorCode: attempt.errorCode ?? null,
    amount: payment.amount,
    currency: payment.currency,
    failedAt: new Date(attempt.createdAt),
    failuresSoFar: recorded.length + 1,
  };
}

/**
 * Records a failure once per attempt (its row is keyed by the attempt), in the handler's transaction; resolves to
 * false when the attempt was already recorded.
 */
export async function recordFailure(db: DirectDebitDb, failure: PaymentFailure, dunningCalled: boolean): Promise<boolean> {
  const inserted = await db
    .insertInto('payment_failures')
    .values({
      attempt_id: failure.attemptId,
      payment_id: failure.paymentId,
      customer_id: failure.customerId,
      invoice_id: failure.invoiceId,
      attempt_number: failure.attemptNumber,
      error_type: failure.errorType,
      error_code: failure.errorCode,
      amount: failure.amount,
      currency: failure.currency,
      failed_at: failure.failedAt,
      dunning_called: dunningCalled,
    })
    .onConflict((conflict) => conflict.column('attempt_id').doNothing())
    .returning('attempt_id')
    .executeTakeFirst();
  return inserted !== undefined;
}
