import type { EventMap } from '../events/index.js';
import type {
  SimCustomer,
  SimDispute,
  SimInvoice,
  SimPayment,
  SimPaymentAttempt,
  SimRefund,
  SimSubscription,
  SimulatorState,
} from './state.js';

// The `data` of each event the REST actions cause, built from the state at the moment of the action, in the
// shapes of the spec's "Shape of data" table (so each one passes the catalog's schema).

type InvoiceEventType = 'INVOICE_CREATED' | 'INVOICE_UPDATED' | 'INVOICE_CANCELED' | 'INVOICE_PAID' | 'INVOICE_PAID_OTHER';

const INVOICE_EVENT_DESCRIPTIONS: Record<InvoiceEventType, string> = {
  INVOICE_CREATED: 'Payment request created',
  INVOICE_UPDATED: 'Payment request updated',
  INVOICE_CANCELED: 'Payment request canceled',
  INVOICE_PAID: 'Payment request paid',
  INVOICE_PAID_OTHER: 'Payment received outside the service recorded',
};

/** `data` of the customer events: the customer itself, as the spec lists it. */
export function customerEventData(customer: SimCustomer): EventMap['CUSTOMER_CREATED'] {
  const { id, name, email, phoneNumber, username, metadata, meta } = customer;
  return structuredClone({ id, name, email, phoneNumber, username, metadata, meta });
}

function invoiceSnapshot(invoice: SimInvoice): EventMap['INVOICE_CREATED']['invoice'] {
  const { id, amount, currency, dueDate, expireDate, items, metadata, meta } = invoice;
  return structuredClone({ id, amount, currency, dueDate, expireDate, items, metadata, meta });
}

function paymentSnapshot(payment: SimPayment): EventMap['PAYMENT_COMPLETED']['payment'] {
  const { invoiceId: _invoiceId, createdAt: _createdAt, ...rest } = payment;
  return structuredClone(rest);
}

/** `data` of an invoice event; `payment` is the payment that settled it, for the paid events. */
export function invoiceEventData(
  state: SimulatorState,
  eventType: InvoiceEventType,
  invoice: SimInvoice,
  payment: SimPayment | null = null,
): EventMap['INVOICE_CREATED'] {
  const customer = state.customers.get(invoice.customerId);
  return {
    invoiceId: invoice.id,
    description: INVOICE_EVENT_DESCRIPTIONS[eventType],
    amount: payment?.amount ?? invoice.amount,
    invoice: invoiceSnapshot(invoice),
    payment: payment ? { ...paymentSnapshot(payment), monthlyInstallments: null } : null,
    customer: customer ? { ...customerEventData(customer), customerId: customer.id } : null,
    organization: { ...state.organization },
    metadata: structuredClone(invoice.metadata),
    meta: { ...invoice.meta },
    formAnswers: null,
  };
}

/** `data` of PAYMENT_ATTEMPT_SUCCEEDED / _FAILED. */
export function paymentAttemptEventData(
  state: SimulatorState,
  payment: SimPayment,
  attempt: SimPaymentAttempt,
): EventMap['PAYMENT_ATTEMPT_SUCCEEDED'] {
  return {
    payment: paymentSnapshot(payment),
    paymentAttempt: { ...attempt },
    customer: customerEventData(customerOfPayment(state, payment)),
    paymentSession: null,
  };
}

/** `data` of PAYMENT_COMPLETED: the charged items with their concepts resolved, and the invoice settled. */
export function paymentCompletedEventData(
  state: SimulatorState,
  payment: SimPayment,
  attempt: SimPaymentAttempt | null,
): EventMap['PAYMENT_COMPLETED'] {
  const invoice = state.invoice(payment.invoiceId);
  const items = invoice.items.map((item) => ({ ...item, concept: structuredClone(state.concepts.get(item.conceptId) ?? null) }));
  return {
    payment: paymentSnapshot(payment),
    items,
    relatedInvoices: [
      { id: invoice.id, items: structuredClone(items), metadata: structuredClone(invoice.metadata), meta: { ...invoice.meta } },
    ],
    paymentAttempt: attempt ? { ...attempt } : null,
    customer: customerEventData(customerOfPayment(state, payment)),
    paymentSession: null,
  };
}

/** `data` of PAYMENT_REFUNDED: the refund, the payment it returns money from, its customer and the organization. */
export function refundEventData(state: SimulatorState, refund: SimRefund): EventMap['PAYMENT_REFUNDED'] {
  const payment = state.payment(refund.paymentId);
  const { paymentId: _paymentId, ...view } = refund;
  return {
    refund: structuredClone(view),
    payment: paymentSnapshot(payment),
    customer: customerEventData(customerOfPayment(state, payment)),
    organization: { ...state.organization },
  };
}

/** `data` of the dispute events: the dispute, its response (null until one is recorded), the disputed payment. */
export function disputeEventData(state: SimulatorState, dispute: SimDispute): EventMap['DISPUTE_CREATED'] {
  const payment = state.payment(dispute.paymentId);
  const { paymentId: _paymentId, response, ...view } = dispute;
  return {
    dispute: structuredClone(view),
    response: response ? { ...response } : null,
    payment: paymentSnapshot(payment),
    customer: customerEventData(customerOfPayment(state, payment)),
    organization: { ...state.organization },
  };
}

/** `data` of the subscription events: the subscription in the spec's fields, its customer, the organization. */
export function subscriptionEventData(state: SimulatorState, subscription: SimSubscription): EventMap['SUBSCRIPTION_CREATED'] {
  return {
    subscription: subscriptionView(subscription),
    customer: customerEventData(state.customer(subscription.customerId)),
    organization: { ...state.organization },
  };
}

/** A subscription in the spec's fields only (what events carry). */
export function subscriptionView(subscription: SimSubscription): EventMap['SUBSCRIPTION_CREATED']['subscription'] {
  const { customerId: _customerId, invoiceIds: _invoiceIds, createdAt: _createdAt, canceledAt: _canceledAt, ...view } = subscription;
  return structuredClone(view);
}

function customerOfPayment(state: SimulatorState, payment: SimPayment): SimCustomer {
  return state.customer(state.invoice(payment.invoiceId).customerId);
}
