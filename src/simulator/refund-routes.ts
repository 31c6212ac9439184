import type { SimulatorContext } from './context.js';
import { refundEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { badRequest, conflict } from './route-error.js';
import { defineRoute, type Route } from './route.js';
import { sandboxRefundInputSchema, sandboxRefundResponseSchema } from './sandbox-contract.js';
import type { SimPayment, SimRefund, SimulatorState } from './state.js';

/**
 * Simulator only: `POST /v1/sandbox/payments/{paymentId}/refund` returns money from a completed payment and
 * emits PAYMENT_REFUNDED. The spec shows no refund call; this one exists so the event can be caused through
 * the simulator's state.
 */
export function refundRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/payments/{paymentId}/refund',
      operationId: 'refundSandboxPayment',
      summary:
        'Simulator only (assumed, not in the spec): refund a completed CASH or TRANSFER payment, the whole remaining amount unless `amount` is given; emits PAYMENT_REFUNDED. The payment stays completed.',
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxRefundInputSchema,
      inputOptional: true,
      response: sandboxRefundResponseSchema,
      errors: [400, 403, 404, 409],
      handle({ params, input }) {
        const payment = state.payment(params.paymentId!);
        assertSettledThroughService(payment, 'refunded');
        const remaining = payment.amount - refundedAmount(state, payment.id);
        if (remaining <= 0) throw conflict(`Payment ${payment.id} is already refunded in full.`);
        const amount = input.amount ?? remaining;
        if (amount > remaining) {
          throw badRequest(
            `amount ${amount} is more than what is left to refund of payment ${payment.id} (${remaining} ${payment.currency}).`,
          );
        }
        const now = ctx.clock.iso();
        const refund: SimRefund = {
          id: newId('ref'),
          amount,
          currency: payment.currency,
          status: 'SUCCEEDED',
          createdAt: now,
          statusUpdatedAt: now,
          customRefundReason: input.reason ?? null,
          paymentId: payment.id,
        };
        state.refunds.set(refund.id, refund);
        ctx.emit('PAYMENT_REFUNDED', refundEventData(state, refund));
        return { status: 200, body: { refund, payment } };
      },
    }),
  ];
}

/**
 * 409 unless the payment was completed through the service (CASH or TRANSFER): money paid outside it (`OTHER`)
 * cannot be refunded or disputed through it, and a pending payment has nothing to return.
 */
export function assertSettledThroughService(payment: SimPayment, action: 'refunded' | 'disputed'): void {
  if (payment.type === 'OTHER') {
    throw conflict(`Payment ${payment.id} was recorded as paid outside the service (OTHER); it cannot be ${action} through the service.`);
  }
  if (!payment.isCompleted)
    throw conflict(`Payment ${payment.id} is not completed (status ${payment.status}); only completed payments can be ${action}.`);
}

function refundedAmount(state: SimulatorState, paymentId: string): number {
  let sum = 0;
  for (const refund of state.refunds.values()) if (refund.paymentId === paymentId) sum += refund.amount;
  return sum;
}
