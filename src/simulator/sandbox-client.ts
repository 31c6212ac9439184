import type { z } from 'zod';
import {
  apiCustomerSchema,
  apiInvoiceSchema,
  completePaymentResponseSchema,
  pageQuerySchema,
  type ApiCustomer,
  type ApiInvoice,
  type CompletePaymentResponse,
  type ListPage,
  type PageQuery,
} from '../events/rest-contract.js';
import { ApiInputError } from '../client/errors.js';
import { HttpTransport, type RequestOptions } from '../client/http-transport.js';
import { unlimited } from '../client/rate-limiter.js';
import {
  sandboxAdvanceInputSchema,
  sandboxAdvanceSchema,
  sandboxClockSchema,
  type SandboxAdvance,
  type SandboxAdvanceInput,
  type SandboxClock,
} from './clock-routes.js';
import {
  sandboxCompleteInputSchema,
  sandboxCreateSubscriptionInputSchema,
  sandboxCycleResponseSchema,
  sandboxDisputeSchema,
  sandboxEventSchema,
  sandboxUpdateCustomerInputSchema,
  sandboxOpenDisputeInputSchema,
  sandboxRefundInputSchema,
  sandboxRefundResponseSchema,
  sandboxResolveDisputeInputSchema,
  sandboxRespondDisputeInputSchema,
  sandboxSubscriptionSchema,
  sandboxPaymentMethodSchema,
  sandboxSavePaymentMethodInputSchema,
  type SandboxPaymentMethod,
  type SandboxSavePaymentMethodInput,
  type SandboxCreateSubscriptionInput,
  type SandboxCycleResponse,
  type SandboxDispute,
  type SandboxEvent,
  type SandboxOpenDisputeInput,
  type SandboxRefundInput,
  type SandboxRefundResponse,
  type SandboxResolveDisputeInput,
  type SandboxRespondDisputeInput,
  type SandboxSubscription,
} from './sandbox-contract.js';

/** Options of {@link createSandboxClient}. */
export interface SandboxClientOptions {
  /** The simulator's base URL, e.g. `http://127.0.0.1:4010`. */
  baseUrl: string;
  /** A staging key (`sk_test_…`); the sandbox refuses production keys. */
  apiKey: string;
  /** Time allowed for each attempt, in ms. Default 30000. */
  timeoutMs?: number | undefined;
}

/**
 * The simulator's own sandbox calls (./sandbox-contract.ts), which the real service's client does not have.
 * Requests go through the client's transport, so they get the same `{input}` bodies, idempotency keys,
 * retries and typed errors (`ConflictError`, `NotFoundError`, …) as every other call.
 */
export interface SandboxClient {
  /** Records a failed attempt of a pending CASH or TRANSFER payment (PAYMENT_ATTEMPT_FAILED); the payment stays pending. */
  failPayment(paymentId: string, options?: RequestOptions): Promise<CompletePaymentResponse>;
  /** Refunds a completed payment, all of what is left unless `amount` is given (PAYMENT_REFUNDED). */
  refundPayment(paymentId: string, input?: SandboxRefundInput, options?: RequestOptions): Promise<SandboxRefundResponse>;
  /** Opens a dispute of a completed payment (DISPUTE_CREATED). */
  openDispute(paymentId: string, input?: SandboxOpenDisputeInput, options?: RequestOptions): Promise<SandboxDispute>;
  /** Records the organization's response (DISPUTE_RESPONSE_CREATED). */
  respondToDispute(disputeId: string, input?: SandboxRespondDisputeInput, options?: RequestOptions): Promise<SandboxDispute>;
  /** Closes a dispute as WON or LOST (DISPUTE_RESOLVED). */
  resolveDispute(disputeId: string, input: SandboxResolveDisputeInput, options?: RequestOptions): Promise<SandboxDispute>;
  /** Creates a subscription (SUBSCRIPTION_CREATED). */
  createSubscription(input: SandboxCreateSubscriptionInput, options?: RequestOptions): Promise<SandboxSubscription>;
  /** Issues the next collection's invoice (INVOICE_CREATED) and moves the schedule on (SUBSCRIPTION_UPDATED). */
  cycleSubscription(subscriptionId: string, options?: RequestOptions): Promise<SandboxCycleResponse>;
  /** Changes a customer's name or email, as the service's dashboard would (CUSTOMER_UPDATED). */
  updateCustomer(
    customerId: string,
    input: z.input<typeof sandboxUpdateCustomerInputSchema>,
    options?: RequestOptions,
  ): Promise<ApiCustomer>;
  /** Cancels an unpaid invoice, as the service's dashboard would (INVOICE_CANCELED). */
  cancelInvoice(invoiceId: string, options?: RequestOptions): Promise<ApiInvoice>;
  /** Cancels a subscription (SUBSCRIPTION_CANCELED). */
  cancelSubscription(subscriptionId: string, options?: RequestOptions): Promise<SandboxSubscription>;
  /** Saves a card or a bank account (CLABE) for a customer's direct debit (PAYMENT_METHOD_CREATED). */
  savePaymentMethod(customerId: string, input: SandboxSavePaymentMethodInput, options?: RequestOptions): Promise<SandboxPaymentMethod>;
  /** One page of the events the simulator emitted, oldest first. */
  listEvents(query?: PageQuery, options?: RequestOptions): Promise<ListPage<SandboxEvent>>;
  /** The simulator's time (real or manual) and when each pending retry or collection is due. */
  clock(options?: RequestOptions): Promise<SandboxClock>;
  /**
   * Moves a manual clock `by` a duration (`1d`, `2h30m`) or `to` a time; resolves once what came due on the way has
   * run and been delivered. A 409 (`ConflictError`) on the real clock.
   */
  advanceClock(input: SandboxAdvanceInput, options?: RequestOptions): Promise<SandboxAdvance>;
}

/**
 * Makes a {@link SandboxClient} for a running simulator.
 *
 * @example
 * const sandbox = createSandboxClient({ baseUrl: simulator.url, apiKey: 'sk_test_local' });
 * await sandbox.refundPayment(paymentId, { amount: 1000, reason: 'damaged' });
 */
export function createSandboxClient(options: SandboxClientOptions): SandboxClient {
  if (typeof options.apiKey !== 'string' || !options.apiKey.startsWith('sk_test_')) {
    throw new ApiInputError('The simulator sandbox needs a staging key (sk_test_…); production keys are refused');
  }
  const transport = new HttpTransport({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    apiKey: options.apiKey,
    fetch: (input, init) => globalThis.fetch(input, init),
    timeoutMs: options.timeoutMs ?? 30_000,
    maxRetries: 2,
    maxRetryAfterMs: 60_000,
    // The simulator counts requests itself and answers 429 with Retry-After, which the transport honours.
    rateLimiter: unlimited,
  });
  const at = (...parts: string[]) => {
    if (parts.some((part) => typeof part !== 'string' || part.trim() === '')) {
      throw new ApiInputError('/v1/sandbox/…: every id must be a non-empty string, no request was sent');
    }
    return `/v1/sandbox/${parts.map(encodeURIComponent).join('/')}`;
  };
  const body = (schema: z.ZodType, value: unknown) => ({ schema, value: value ?? {} });
  return {
    failPayment: (paymentId, requestOptions) =>
      transport.post(
        at('payments', paymentId, 'complete'),
        body(sandboxCompleteInputSchema, { outcome: 'FAILED' }),
        completePaymentResponseSchema,
        requestOptions,
      ),
    refundPayment: (paymentId, input, requestOptions) =>
      transport.post(
        at('payments', paymentId, 'refund'),
        body(sandboxRefundInputSchema, input),
        sandboxRefundResponseSchema,
        requestOptions,
      ),
    savePaymentMethod: (customerId, input, requestOptions) =>
      transport.post(
        at('customers', customerId, 'payment-methods'),
        body(sandboxSavePaymentMethodInputSchema, input),
        sandboxPaymentMethodSchema,
        requestOptions,
      ),
    openDispute: (paymentId, input, requestOptions) =>
      transport.post(
        at('payments', paymentId, 'dispute'),
        body(sandboxOpenDisputeInputSchema, input),
        sandboxDisputeSchema,
        requestOptions,
      ),
    respondToDispute: (disputeId, input, requestOptions) =>
      transport.post(
        at('disputes', disputeId, 'respond'),
        body(sandboxRespondDisputeInputSchema, input),
        sandboxDisputeSchema,
        requestOptions,
      ),
    resolveDispute: (disputeId, input, requestOptions) =>
      transport.post(
        at('disputes', disputeId, 'resolve'),
        body(sandboxResolveDisputeInputSchema, input),
        sandboxDisputeSchema,
        requestOptions,
      ),
    createSubscription: (input, requestOptions) =>
      transport.post(at('subscriptions'), body(sandboxCreateSubscriptionInputSchema, input), sandboxSubscriptionSchema, requestOptions),
    cycleSubscription: (subscriptionId, requestOptions) =>
      transport.post(at('subscriptions', subscriptionId, 'cycle'), undefined, sandboxCycleResponseSchema, requestOptions),
    updateCustomer: (customerId, input, requestOptions) =>
      transport.post(
        at('customers', customerId, 'update'),
        body(sandboxUpdateCustomerInputSchema, input),
        apiCustomerSchema,
        requestOptions,
      ),
    cancelInvoice: (invoiceId, requestOptions) =>
      transport.post(at('invoices', invoiceId, 'cancel'), undefined, apiInvoiceSchema, requestOptions),
    cancelSubscription: (subscriptionId, requestOptions) =>
      transport.post(at('subscriptions', subscriptionId, 'cancel'), undefined, sandboxSubscriptionSchema, requestOptions),
    clock: (requestOptions) => transport.get(at('clock'), sandboxClockSchema, requestOptions),
    advanceClock: (input, requestOptions) =>
      transport.post(at('clock', 'advance'), body(sandboxAdvanceInputSchema, input), sandboxAdvanceSchema, requestOptions),
    listEvents: (query = {}, requestOptions) =>
      transport.list(at('events'), sandboxEventSchema, { schema: pageQuerySchema, value: query }, requestOptions) as Promise<
        ListPage<SandboxEvent>
      >,
  };
}
