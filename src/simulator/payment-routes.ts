import { randomInt } from 'node:crypto';
import {
  apiPaymentSchema,
  completePaymentResponseSchema,
  requestPaymentInputSchema,
  requestPaymentResponseSchema,
} from '../events/rest-contract.js';
import { conflict } from './route-error.js';
import type { SimulatorContext } from './context.js';
import { invoiceEventData, paymentAttemptEventData, paymentCompletedEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { assertPayable } from './invoice-routes.js';
import { defineRoute, type Route } from './route.js';
import { sandboxCompleteInputSchema } from './sandbox-contract.js';
import type { SimInvoice, SimPayment, SimPaymentAttempt } from './state.js';

/**
 * Payments: requesting a CASH or TRANSFER payment of an invoice (spec), reading a payment (assumed), and the
 * staging sandbox's completion, which settles a pending CASH/TRANSFER payment and emits
 * PAYMENT_ATTEMPT_SUCCEEDED, INVOICE_PAID and PAYMENT_COMPLETED, or (outcome FAILED, simulator only) records a
 * failed attempt and emits PAYMENT_ATTEMPT_FAILED.
 */
export function paymentRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/invoices/{invoiceId}/payments',
      operationId: 'requestPayment',
      summary: 'Request a CASH or TRANSFER payment of an unpaid invoice: a pending payment and its instructions.',
      tag: 'Payments',
      input: requestPaymentInputSchema,
      response: requestPaymentResponseSchema,
      errors: [400, 404, 409],
      handle({ params, input }) {
        const invoice = state.invoice(params.invoiceId!);
        assertPayable(invoice);
        const payment: SimPayment = {
          id: newId('pay'),
          amount: invoice.amount,
          currency: invoice.currency,
          paymentTime: null,
          type: input.paymentType,
          status: 'PENDING',
          isCompleted: false,
          authorizationCode: null,
          cardDetail: null,
          metadata: [],
          meta: {},
          invoiceId: invoice.id,
          createdAt: ctx.clock.iso(),
        };
        state.payments.set(payment.id, payment);
        return { status: 200, body: { payment, instructions: instructionsFor(ctx, payment, invoice) } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/payments/{paymentId}',
      operationId: 'getPayment',
      summary: 'Read a payment (assumed read).',
      tag: 'Payments',
      response: apiPaymentSchema,
      errors: [404],
      handle: ({ params }) => ({ status: 200, body: state.payment(params.paymentId!) }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/payments/{paymentId}/complete',
      operationId: 'completeSandboxPayment',
      summary:
        'Staging only: settle a pending CASH or TRANSFER payment (outcome SUCCEEDED). Simulator only (assumed value): outcome FAILED records a failed attempt and emits PAYMENT_ATTEMPT_FAILED; the payment stays pending.',
      tag: 'Payments',
      stagingOnly: true,
      input: sandboxCompleteInputSchema,
      response: completePaymentResponseSchema,
      errors: [400, 403, 404, 409],
      handle({ params, input }) {
        const payment = state.payment(params.paymentId!);
        if (payment.status !== 'PENDING' || (payment.type !== 'CASH' && payment.type !== 'TRANSFER')) {
          throw conflict(
            `Only pending CASH or TRANSFER payments can be completed in the sandbox; payment ${payment.id} is a ${payment.status} ${payment.type} payment.`,
          );
        }
        const invoice = state.invoice(payment.invoiceId);
        if (invoice.isPaid) throw conflict(`Invoice ${invoice.id} was already paid by another payment.`);
        const succeeded = input.outcome === 'SUCCEEDED';
        const now = ctx.clock.iso();
        const previous = state.attempts.get(payment.id) ?? [];
        const attempt: SimPaymentAttempt = {
          id: newId('att'),
          createdAt: now,
          success: succeeded,
          startedOn: 'SANDBOX',
          automatic: false,
          scheduled: false,
          wasAttemptedByOrganization: true,
          attemptNumber: previous.length + 1,
          errorCode: succeeded ? null : 'SANDBOX_FAILED',
          errorType: succeeded ? null : 'DECLINED',
          errorResponse: succeeded ? null : 'The sandbox completion was called with outcome FAILED.',
        };
        state.attempts.set(payment.id, [...previous, attempt]);
        if (!succeeded) {
          // A failed attempt settles nothing: the payment stays pending and can be completed (or fail) again.
          ctx.emit('PAYMENT_ATTEMPT_FAILED', paymentAttemptEventData(state, payment, attempt));
          return { status: 200, body: { payment, invoice } };
        }
        Object.assign(payment, { status: 'SUCCEEDED', isCompleted: true, paymentTime: now } satisfies Partial<SimPayment>);
        Object.assign(invoice, { isPaid: true, paidAt: now } satisfies Partial<SimInvoice>);
        ctx.emit('PAYMENT_ATTEMPT_SUCCEEDED', paymentAttemptEventData(state, payment, attempt));
        ctx.emit('INVOICE_PAID', invoiceEventData(state, 'INVOICE_PAID', invoice, payment));
        ctx.emit('PAYMENT_COMPLETED', paymentCompletedEventData(state, payment, attempt));
        return { status: 200, body: { payment, invoice } };
      },
    }),
  ];
}

// The spec does not show the instructions; these are what a payer needs, plainly marked as simulated.
function instructionsFor(ctx: SimulatorContext, payment: SimPayment, invoice: SimInvoice): Record<string, unknown> {
  const reference = `SIM-${randomInt(10_000_000, 100_000_000)}`;
  const common = {
    method: payment.type,
    reference,
    amount: payment.amount,
    currency: payment.currency,
    payBefore: invoice.expireDate ?? invoice.dueDate,
    simulated: true,
    sandbox: `POST /v1/sandbox/payments/${payment.id}/complete with {"input":{"outcome":"SUCCEEDED"}} settles it.`,
  };
  if (payment.type === 'CASH') return { ...common, note: 'Pay in cash at a participating store, quoting the reference.' };
  return {
    ...common,
    beneficiary: ctx.state.organization.name,
    bankName: 'Simulated Bank',
    clabe: `6461800000${String(randomInt(0, 100_000_000)).padStart(8, '0')}`,
    note: 'Transfer the exact amount, quoting the reference.',
  };
}
