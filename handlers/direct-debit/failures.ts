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
 * The app's dunning: schedule a retry, notify the customer, suspend after N failures. Called once per failed
 * attempt, in the transaction that records it: if it throws, nothing is recorded and the worker retries the
 * event, so effects outside the database (an email) should be idempotent too, keyed by `failure.attemptId`.
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
 * PAYMENT_ATTEMPT_FAILED: records the failure (error type and code, attempt number) once per attempt and, when it
 * is new, calls the dunning hook. Returns the failure, or null when this attempt was already recorded.
 */
export async function recordFailure(
  db: DirectDebitDb,
  event: WebhookEvent<'PAYMENT_ATTEMPT_FAILED'>,
  ctx: HandlerContext<ApiClient>,
  invoiceId: string | null,
  dunning: DunningHook | undefined,
): Promise<PaymentFailure | null> {
  const { payment, paymentAttempt: attempt, customer } = event.data;
  const failedAt = new Date(attempt.createdAt);
  const inserted = await db
    .insertInto('payment_failures')
    .values({
      attempt_id: attempt.id,
      payment_id: payment.id,
      customer_id: customer.id,
      invoice_id: invoiceId,
      attempt_number: attempt.attemptNumber,
      error_type: attempt.errorType ?? null,
      error_code: attempt.errorCode ?? null,
      amount: payment.amount,
      currency: payment.currency,
      failed_at: failedAt,
      dunning_called: dunning !== undefined,
    })
    .onConflict((conflict) => conflict.column('attempt_id').doNothing())
    .returning('attempt_id')
    .executeTakeFirst();
  if (!inserted) return null;
  const { count } = await db
    .selectFrom('payment_failures')
    .select((eb) => eb.fn.countAll<string | number>().as('count'))
    .where('payment_id', '=', payment.id)
    .executeTakeFirstOrThrow();
  const failure: PaymentFailure = {
    attemptId: attempt.id,
    paymentId: payment.id,
    customerId: customer.id,
    invoiceId,
    attemptNumber: attempt.attemptNumber,
    errorType: attempt.errorType ?? null,
    errorCode: attempt.errorCode ?? null,
    amount: payment.amount,
    currency: payment.currency,
    failedAt,
    failuresSoFar: Number(count),
  };
  await dunning?.(failure, ctx);
  return failure;
}
