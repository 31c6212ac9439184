import type { SimulatorContext } from './context.js';
import { disputeEventData } from './event-payloads.js';
import { newId } from './ids.js';
import { assertSettledThroughService } from './refund-routes.js';
import { conflict } from './route-error.js';
import { defineRoute, type Route } from './route.js';
import {
  sandboxDisputeSchema,
  sandboxOpenDisputeInputSchema,
  sandboxResolveDisputeInputSchema,
  sandboxRespondDisputeInputSchema,
} from './sandbox-contract.js';
import type { SimDispute } from './state.js';

/** How long the organization has to respond to a dispute (assumed; the spec gives no deadline). */
const RESPONSE_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Simulator only: a dispute's life, `NEEDS_RESPONSE → UNDER_REVIEW → WON | LOST` (assumed state names): open one
 * on a completed payment (DISPUTE_CREATED), record the organization's response (DISPUTE_RESPONSE_CREATED),
 * resolve it (DISPUTE_RESOLVED). The spec shows none of these calls.
 */
export function disputeRoutes(ctx: SimulatorContext): Route[] {
  const { state } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/payments/{paymentId}/dispute',
      operationId: 'openSandboxDispute',
      summary:
        'Simulator only (assumed, not in the spec): the payer disputes a completed CASH or TRANSFER payment; the dispute starts NEEDS_RESPONSE. Emits DISPUTE_CREATED.',
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxOpenDisputeInputSchema,
      inputOptional: true,
      response: sandboxDisputeSchema,
      errors: [400, 403, 404, 409],
      handle({ params, input }) {
        const payment = state.payment(params.paymentId!);
        assertSettledThroughService(payment, 'disputed');
        for (const other of state.disputes.values()) {
          if (other.paymentId === payment.id && !isResolved(other)) {
            throw conflict(`Payment ${payment.id} already has an open dispute, ${other.id}.`);
          }
        }
        const now = ctx.clock.now();
        const dispute: SimDispute = {
          id: newId('dsp'),
          status: 'NEEDS_RESPONSE',
          respondBy: new Date(now + RESPONSE_WINDOW_MS).toISOString(),
          reason: input.reason ?? 'GENERAL',
          createdAt: new Date(now).toISOString(),
          resolvedAt: null,
          lostReason: null,
          response: null,
          paymentId: payment.id,
        };
        state.disputes.set(dispute.id, dispute);
        ctx.emit('DISPUTE_CREATED', disputeEventData(state, dispute));
        return { status: 200, body: dispute };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/disputes/{disputeId}/respond',
      operationId: 'respondSandboxDispute',
      summary:
        "Simulator only (assumed, not in the spec): record the organization's response to a dispute that needs one; it moves to UNDER_REVIEW. Emits DISPUTE_RESPONSE_CREATED.",
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxRespondDisputeInputSchema,
      inputOptional: true,
      response: sandboxDisputeSchema,
      errors: [400, 403, 404, 409],
      handle({ params }) {
        const dispute = state.dispute(params.disputeId!);
        if (dispute.status !== 'NEEDS_RESPONSE') {
          throw conflict(`Dispute ${dispute.id} is ${dispute.status}; only a dispute in NEEDS_RESPONSE takes a response.`);
        }
        dispute.response = { id: newId('dspr'), createdAt: ctx.clock.iso() };
        dispute.status = 'UNDER_REVIEW';
        ctx.emit('DISPUTE_RESPONSE_CREATED', disputeEventData(state, dispute));
        return { status: 200, body: dispute };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/sandbox/disputes/{disputeId}/resolve',
      operationId: 'resolveSandboxDispute',
      summary:
        'Simulator only (assumed, not in the spec): close a dispute as WON or LOST (lostReason defaults to NO_RESPONSE without a response, else INSUFFICIENT_EVIDENCE). Emits DISPUTE_RESOLVED.',
      tag: 'Sandbox',
      stagingOnly: true,
      input: sandboxResolveDisputeInputSchema,
      response: sandboxDisputeSchema,
      errors: [400, 403, 404, 409],
      handle({ params, input }) {
        const dispute = state.dispute(params.disputeId!);
        if (isResolved(dispute)) throw conflict(`Dispute ${dispute.id} is already resolved (${dispute.status}).`);
        dispute.status = input.outcome;
        dispute.resolvedAt = ctx.clock.iso();
        dispute.lostReason =
          input.outcome === 'LOST' ? (input.lostReason ?? (dispute.response ? 'INSUFFICIENT_EVIDENCE' : 'NO_RESPONSE')) : null;
        ctx.emit('DISPUTE_RESOLVED', disputeEventData(state, dispute));
        return { status: 200, body: dispute };
      },
    }),
  ];
}

function isResolved(dispute: SimDispute): boolean {
  return dispute.status === 'WON' || dispute.status === 'LOST';
}
