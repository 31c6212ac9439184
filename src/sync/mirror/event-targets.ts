import type { EventType, WebhookEvent } from '../../events/index.js';
import {
  customerFromEvent,
  disputeFromEvent,
  invoiceFromEvent,
  type MirrorState,
  type PaymentLinks,
  paymentFromEvent,
  paymentMethodFromEvent,
  refundFromEvent,
  STATE_RANK,
  type StateRank,
  subscriptionFromEvent,
} from './states.js';

/**
 * What one event makes the mirror do to one resource: read its current state from the API (falling back to
 * the event's snapshot when there is no API key or the read finds nothing), or write the snapshot (resources the
 * spec shows no read for).
 */
export type MirrorTarget =
  | { kind: 'read'; table: 'customers'; id: string; snapshot: MirrorState | null }
  | { kind: 'read'; table: 'invoices'; id: string; snapshot: MirrorState | null }
  | { kind: 'read'; table: 'payments'; id: string; snapshot: MirrorState | null; links: PaymentLinks }
  | { kind: 'snapshot'; state: MirrorState };

/** Where each event type sits in its resource's life: the tie-break between snapshots of equal time. */
const RANK_OF: Record<EventType, StateRank> = {
  INVOICE_CREATED: STATE_RANK.created,
  INVOICE_UPDATED: STATE_RANK.changed,
  INVOICE_CANCELED: STATE_RANK.final,
  INVOICE_PAID: STATE_RANK.final,
  INVOICE_PAID_OTHER: STATE_RANK.final,
  CUSTOMER_CREATED: STATE_RANK.created,
  CUSTOMER_UPDATED: STATE_RANK.changed,
  CUSTOMER_ARCHIVED: STATE_RANK.final,
  PAYMENT_ATTEMPT_SUCCEEDED: STATE_RANK.changed,
  PAYMENT_ATTEMPT_FAILED: STATE_RANK.changed,
  PAYMENT_COMPLETED: STATE_RANK.final,
  PAYMENT_METHOD_CREATED: STATE_RANK.created,
  PAYMENT_REFUNDED: STATE_RANK.changed,
  DISPUTE_CREATED: STATE_RANK.created,
  DISPUTE_RESPONSE_CREATED: STATE_RANK.changed,
  DISPUTE_RESOLVED: STATE_RANK.final,
  SUBSCRIPTION_CREATED: STATE_RANK.created,
  SUBSCRIPTION_UPDATED: STATE_RANK.changed,
  SUBSCRIPTION_CANCELED: STATE_RANK.final,
};

function invoiceStatusOf(type: EventType): 'open' | 'paid' | 'canceled' {
  if (type === 'INVOICE_PAID' || type === 'INVOICE_PAID_OTHER') return 'paid';
  return type === 'INVOICE_CANCELED' ? 'canceled' : 'open';
}

function paymentTarget(payment: Parameters<typeof paymentFromEvent>[0], links: PaymentLinks, rank: StateRank): MirrorTarget {
  return { kind: 'read', table: 'payments', id: payment.id, snapshot: paymentFromEvent(payment, links, rank), links };
}

/**
 * The resources an event concerns, each with what to do. Embedded customers are not written from other
 * resources' events (they are partial there); customer events and backfill keep the customers table.
 *
 * @example
 * mirrorTargets(event) // INVOICE_PAID → [invoice (read), its payment (read)]
 */
export function mirrorTargets(event: WebhookEvent): MirrorTarget[] {
  const rank = RANK_OF[event.eventType];
  switch (event.eventType) {
    case 'CUSTOMER_CREATED':
    case 'CUSTOMER_UPDATED':
    case 'CUSTOMER_ARCHIVED': {
      const snapshot = customerFromEvent(event.data, rank, event.eventType === 'CUSTOMER_ARCHIVED');
      return [{ kind: 'read', table: 'customers', id: event.data.id, snapshot }];
    }
    case 'INVOICE_CREATED':
    case 'INVOICE_UPDATED':
    case 'INVOICE_CANCELED':
    case 'INVOICE_PAID':
    case 'INVOICE_PAID_OTHER': {
      const { data } = event;
      const customerId = data.customer?.customerId ?? data.customer?.id ?? null;
      const facts = { customerId, description: data.description ?? null, status: invoiceStatusOf(event.eventType) };
      const targets: MirrorTarget[] = [
        {
          kind: 'read',
          table: 'invoices',
          id: data.invoiceId,
          snapshot: invoiceFromEvent({ ...data.invoice, id: data.invoiceId }, facts, rank),
        },
      ];
      if (data.payment) targets.push(paymentTarget(data.payment, { invoiceId: data.invoiceId, customerId }, rank));
      return targets;
    }
    case 'PAYMENT_ATTEMPT_SUCCEEDED':
    case 'PAYMENT_ATTEMPT_FAILED':
      return [paymentTarget(event.data.payment, { invoiceId: null, customerId: event.data.customer.id }, rank)];
    case 'PAYMENT_COMPLETED': {
      const { data } = event;
      const links = { invoiceId: data.relatedInvoices[0]?.id ?? null, customerId: data.customer.id };
      // The related invoices changed too (paid); with an API key they are read, without one INVOICE_PAID carries them.
      const invoices: MirrorTarget[] = data.relatedInvoices.map((invoice) => ({
        kind: 'read',
        table: 'invoices',
        id: invoice.id,
        snapshot: null,
      }));
      return [paymentTarget(data.payment, links, rank), ...invoices];
    }
    case 'PAYMENT_METHOD_CREATED':
      return [{ kind: 'snapshot', state: paymentMethodFromEvent(event.data.paymentMethod, event.data.customer.id, rank) }];
    case 'PAYMENT_REFUNDED': {
      const { data } = event;
      const links = { paymentId: data.payment.id, customerId: data.customer.id };
      return [
        { kind: 'snapshot', state: refundFromEvent(data.refund, links, rank) },
        paymentTarget(data.payment, { invoiceId: null, customerId: data.customer.id }, rank),
      ];
    }
    case 'DISPUTE_CREATED':
    case 'DISPUTE_RESPONSE_CREATED':
    case 'DISPUTE_RESOLVED': {
      const { data } = event;
      const links = { paymentId: data.payment.id, customerId: data.customer.id };
      return [{ kind: 'snapshot', state: disputeFromEvent(data.dispute, data.response, links, rank) }];
    }
    case 'SUBSCRIPTION_CREATED':
    case 'SUBSCRIPTION_UPDATED':
    case 'SUBSCRIPTION_CANCELED':
      return [{ kind: 'snapshot', state: subscriptionFromEvent(event.data.subscription, event.data.customer.id, rank) }];
  }
}
