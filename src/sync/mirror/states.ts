import type { ApiCustomer, ApiInvoice, ApiPayment } from '../../events/rest-contract.js';
import type { Customer, Dispute, DisputeResponse, Invoice, Payment, PaymentMethod, Refund, Subscription } from '../../events/resources.js';

// Maps the service's resources, as the API answers them or as events carry them, to rows of the mirror's
// tables (migrations/mirror/). Only mapping here: the guarded write is in write.ts, the choice of what an
// event touches in event-targets.ts.

/** The mirror's resource tables. */
export const MIRROR_TABLES = ['customers', 'invoices', 'payments', 'payment_methods', 'subscriptions', 'refunds', 'disputes'] as const;
export type MirrorTable = (typeof MIRROR_TABLES)[number];

/**
 * How a state ranks against another with the same `state_at`: a later step of the resource's life wins.
 * API reads rank above every snapshot, since a read is the whole current state.
 */
export const STATE_RANK = { created: 0, changed: 1, final: 2, apiRead: 3 } as const;
export type StateRank = (typeof STATE_RANK)[keyof typeof STATE_RANK];

/** One resource's state, ready for the guarded upsert. */
export interface MirrorState {
  table: MirrorTable;
  id: string;
  /** The table's own columns (not the bookkeeping ones), by column name; an object is a jsonb column's value. */
  columns: Record<string, string | number | boolean | null | Record<string, string>>;
  /** The state itself, stored in `data`. */
  data: unknown;
  source: 'api' | 'event';
  /** The state's own time; null when it has none (then it ranks below any state that has one). */
  stateAt: Date | null;
  rank: StateRank;
  /**
   * Columns that keep their stored value when this state has null there (what one source knows and another does
   * not). Columns missing from `columns` are never touched by an update either.
   */
  keepWhenNull?: readonly string[];
  /** The invoice's items, replacing the stored ones when the row is written. */
  items?: InvoiceItemRow[];
}

export interface InvoiceItemRow {
  description: string | null;
  amount: number;
  currency: string;
  quantity: number;
  conceptId: string | null;
}

const time = (value: string | null | undefined): string | null => value ?? null;

/** The latest of some timestamps (ISO strings), or null when none is a time. */
export function latestTime(...values: (string | null | undefined)[]): Date | null {
  const times = values.map((value) => (typeof value === 'string' ? Date.parse(value) : Number.NaN)).filter(Number.isFinite);
  return times.length ? new Date(Math.max(...times)) : null;
}

function itemsOf(invoice: Pick<Invoice, 'items'>): InvoiceItemRow[] {
  return invoice.items.map((item) => ({
    description: item.description ?? null,
    amount: item.amount,
    currency: item.currency,
    quantity: item.quantity,
    conceptId: item.conceptId ?? null,
  }));
}

const metaOf = (value: { meta?: Record<string, string> | null | undefined }): Record<string, string> => value.meta ?? {};

/** The columns every source of a customer fills. */
function customerColumns(customer: Customer, archived: boolean): MirrorState['columns'] {
  return {
    username: customer.username,
    name: customer.name ?? null,
    email: customer.email ?? null,
    phone_number: customer.phoneNumber ?? null,
    archived,
    meta: metaOf(customer),
  };
}

/** A customer read from the API. */
export function customerFromApi(customer: ApiCustomer, readAt: Date): MirrorState {
  return {
    table: 'customers',
    id: customer.id,
    columns: {
      ...customerColumns(customer, customer.archivedAt != null),
      archived_at: time(customer.archivedAt),
      created_at: time(customer.createdAt),
      updated_at: time(customer.updatedAt),
    },
    data: customer,
    source: 'api',
    stateAt: readAt,
    rank: STATE_RANK.apiRead,
  };
}

/** A customer as a customer event carries it; `archived` comes from the event type. */
export function customerFromEvent(customer: Customer, rank: StateRank, archived: boolean): MirrorState {
  return {
    table: 'customers',
    id: customer.id,
    columns: customerColumns(customer, archived),
    data: customer,
    source: 'event',
    stateAt: null,
    rank,
  };
}

function invoiceStatus(invoice: { isPaid?: boolean | null; canceledAt?: string | null }): 'open' | 'paid' | 'canceled' {
  if (invoice.canceledAt) return 'canceled';
  return invoice.isPaid ? 'paid' : 'open';
}

/** An invoice read from the API, with its items. */
export function invoiceFromApi(invoice: ApiInvoice, readAt: Date): MirrorState {
  return {
    table: 'invoices',
    id: invoice.id,
    columns: {
      customer_id: invoice.customerId ?? null,
      status: invoiceStatus(invoice),
      amount: invoice.amount,
      currency: invoice.currency,
      description: invoice.description ?? null,
      due_date: time(invoice.dueDate),
      expire_date: time(invoice.expireDate),
      collection_method: invoice.collectionMethod ?? null,
      is_paid: invoice.isPaid === true,
      paid_at: time(invoice.paidAt),
      canceled_at: time(invoice.canceledAt),
      created_at: time(invoice.createdAt),
      meta: metaOf(invoice),
    },
    data: invoice,
    source: 'api',
    stateAt: readAt,
    rank: STATE_RANK.apiRead,
    items: itemsOf(invoice),
  };
}

/** What an invoice event says beyond the invoice snapshot. */
export interface InvoiceEventFacts {
  customerId: string | null;
  description: string | null;
  status: 'open' | 'paid' | 'canceled';
}

/** An invoice as an invoice event carries it; its status comes from the event type. */
export function invoiceFromEvent(invoice: Invoice, facts: InvoiceEventFacts, rank: StateRank): MirrorState {
  return {
    table: 'invoices',
    id: invoice.id,
    columns: {
      customer_id: facts.customerId,
      status: facts.status,
      amount: invoice.amount,
      currency: invoice.currency,
      description: facts.description,
      due_date: time(invoice.dueDate),
      expire_date: time(invoice.expireDate),
      is_paid: facts.status === 'paid',
      meta: metaOf(invoice),
    },
    data: invoice,
    source: 'event',
    stateAt: null,
    rank,
    keepWhenNull: ['customer_id'],
    items: itemsOf(invoice),
  };
}

/** Links of a payment that its events know and the API's payment may not carry. */
export interface PaymentLinks {
  invoiceId: string | null;
  customerId: string | null;
}

function paymentColumns(payment: Payment, links: PaymentLinks): MirrorState['columns'] {
  return {
    invoice_id: links.invoiceId,
    customer_id: links.customerId,
    amount: payment.amount,
    currency: payment.currency,
    type: payment.type ?? null,
    status: payment.status ?? null,
    is_completed: payment.isCompleted ?? null,
    payment_time: time(payment.paymentTime),
    authorization_code: payment.authorizationCode ?? null,
    meta: metaOf(payment),
  };
}

const PAYMENT_LINKS = ['invoice_id', 'customer_id', 'type', 'status', 'is_completed', 'payment_time', 'created_at'] as const;

/** A payment read from the API. */
export function paymentFromApi(payment: ApiPayment, links: PaymentLinks, readAt: Date): MirrorState {
  return {
    table: 'payments',
    id: payment.id,
    columns: {
      ...paymentColumns(payment, { invoiceId: payment.invoiceId ?? links.invoiceId, customerId: links.customerId }),
      created_at: time(payment.createdAt),
    },
    data: payment,
    source: 'api',
    stateAt: readAt,
    rank: STATE_RANK.apiRead,
    keepWhenNull: ['invoice_id', 'customer_id'],
  };
}

/** A payment as an event carries it (events carry different subsets: what one lacks is kept). */
export function paymentFromEvent(payment: Payment, links: PaymentLinks, rank: StateRank): MirrorState {
  return {
    table: 'payments',
    id: payment.id,
    columns: paymentColumns(payment, links),
    data: payment,
    source: 'event',
    stateAt: latestTime(payment.paymentTime),
    rank,
    keepWhenNull: PAYMENT_LINKS,
  };
}

/** A payment method (the spec shows no read: always the event's snapshot). */
export function paymentMethodFromEvent(method: PaymentMethod, customerId: string | null, rank: StateRank): MirrorState {
  return {
    table: 'payment_methods',
    id: method.id,
    columns: {
      customer_id: customerId,
      type: method.type,
      confirmed: method.confirmed,
      charges_consented: method.chargesConsented,
      card_brand: method.cardDetail?.brand ?? null,
      card_last4: method.cardDetail?.last4 ?? null,
      bank_name: method.bankAccount?.bankName ?? null,
    },
    data: method,
    source: 'event',
    stateAt: null,
    rank,
  };
}

/** A subscription (no read in the spec); its own time is its last collection. */
export function subscriptionFromEvent(subscription: Subscription, customerId: string | null, rank: StateRank): MirrorState {
  return {
    table: 'subscriptions',
    id: subscription.id,
    columns: {
      customer_id: customerId,
      description: subscription.description ?? null,
      status: subscription.status ?? null,
      is_active: subscription.isActive,
      is_completed: subscription.isCompleted,
      first_collection_date: time(subscription.firstCollectionDate),
      last_collection_date: time(subscription.lastCollectionDate),
      next_collection_date: time(subscription.nextCollectionDate),
      number_of_payments: subscription.numberOfPayments ?? null,
      collection_method: subscription.collectionMethod,
      meta: metaOf(subscription),
    },
    data: subscription,
    source: 'event',
    stateAt: latestTime(subscription.lastCollectionDate),
    rank,
  };
}

/** A refund (no read in the spec); its own time is `statusUpdatedAt`. */
export function refundFromEvent(refund: Refund, links: { paymentId: string; customerId: string | null }, rank: StateRank): MirrorState {
  return {
    table: 'refunds',
    id: refund.id,
    columns: {
      payment_id: links.paymentId,
      customer_id: links.customerId,
      amount: refund.amount,
      currency: refund.currency,
      status: refund.status,
      reason: refund.customRefundReason ?? null,
      created_at: refund.createdAt,
      status_updated_at: refund.statusUpdatedAt,
    },
    data: refund,
    source: 'event',
    stateAt: latestTime(refund.statusUpdatedAt, refund.createdAt),
    rank,
  };
}

/** A dispute with its response (no read in the spec); its own time is the latest of its steps. */
export function disputeFromEvent(
  dispute: Dispute,
  response: DisputeResponse | null | undefined,
  links: { paymentId: string; customerId: string | null },
  rank: StateRank,
): MirrorState {
  return {
    table: 'disputes',
    id: dispute.id,
    columns: {
      payment_id: links.paymentId,
      customer_id: links.customerId,
      status: dispute.status,
      reason: dispute.reason ?? null,
      respond_by: time(dispute.respondBy),
      created_at: dispute.createdAt,
      resolved_at: time(dispute.resolvedAt),
      lost_reason: dispute.lostReason ?? null,
      response_id: response?.id ?? null,
      response_created_at: time(response?.createdAt),
    },
    data: { ...dispute, response: response ?? null },
    source: 'event',
    stateAt: latestTime(dispute.createdAt, response?.createdAt, dispute.resolvedAt),
    rank,
    // A later event may omit the response (it is nullable in every dispute event): keep the one recorded.
    keepWhenNull: ['response_id', 'response_created_at'],
  };
}
