import { notFound } from './route-error.js';
import { newId } from './ids.js';

// The simulator's in-memory data: plain records in insertion order (so offset pages are stable) and the
// indexes the uniqueness rules need. Business rules live in the route modules; this module only stores.

type MetadataPair = { key: string; value: string };

/** A customer as stored and answered (apiCustomerSchema). */
export interface SimCustomer {
  id: string;
  name: string | null;
  email: string | null;
  phoneNumber: string | null;
  username: string;
  metadata: MetadataPair[];
  meta: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
}

/** A payment concept (catalog item), created when an invoice names one inline. */
export interface SimConcept {
  id: string;
  createdAt: string;
  updatedAt: string;
  amount: number;
  currency: string;
  displayName: string;
  description: string | null;
  sku: string | null;
  organizationId: string;
  active: boolean;
  recurrentDetailId: string | null;
  amountEditable: boolean;
  quantityEditable: boolean;
  archivedAt: string | null;
  archivedById: string | null;
  oneOff: boolean;
  groupId: string | null;
  createdById: string | null;
  updatedById: string | null;
  group: null;
  metadata: MetadataPair[];
  meta: Record<string, string>;
}

/** One line of an invoice. */
export interface SimInvoiceItem {
  description: string;
  amount: number;
  currency: string;
  quantity: number;
  conceptId: string;
}

/** An invoice as stored and answered (apiInvoiceSchema). */
export interface SimInvoice {
  id: string;
  amount: number;
  currency: string;
  dueDate: string;
  expireDate: string | null;
  items: SimInvoiceItem[];
  metadata: MetadataPair[];
  meta: Record<string, string>;
  customerId: string;
  description: string | null;
  collectionMethod: string;
  isPaid: boolean;
  paidAt: string | null;
  canceledAt: string | null;
  createdAt: string;
}

/** The payment types the simulator creates. */
export type SimPaymentType = 'CASH' | 'TRANSFER' | 'OTHER';

/** A payment as stored and answered (apiPaymentSchema). */
export interface SimPayment {
  id: string;
  amount: number;
  currency: string;
  paymentTime: string | null;
  type: SimPaymentType;
  status: 'PENDING' | 'SUCCEEDED';
  isCompleted: boolean;
  authorizationCode: string | null;
  cardDetail: null;
  metadata: MetadataPair[];
  meta: Record<string, string>;
  invoiceId: string;
  createdAt: string;
}

/** One collection attempt of a payment. */
export interface SimPaymentAttempt {
  id: string;
  createdAt: string;
  success: boolean;
  startedOn: string | null;
  automatic: boolean;
  scheduled: boolean;
  wasAttemptedByOrganization: boolean;
  attemptNumber: number;
  errorCode: string | null;
  errorType: string | null;
  errorResponse: string | null;
}

/**
 * A refund of a payment (simulator only: the spec shows no refund call). The simulator settles a refund as it
 * creates it, so its one status is `SUCCEEDED`.
 */
export interface SimRefund {
  id: string;
  amount: number;
  currency: string;
  status: 'SUCCEEDED';
  createdAt: string;
  statusUpdatedAt: string;
  customRefundReason: string | null;
  paymentId: string;
}

/** The states of a simulated dispute (assumed names; the spec shows none). */
export type SimDisputeStatus = 'NEEDS_RESPONSE' | 'UNDER_REVIEW' | 'WON' | 'LOST';

/** A dispute (chargeback) of a payment, opened through the simulator's sandbox. */
export interface SimDispute {
  id: string;
  status: SimDisputeStatus;
  respondBy: string | null;
  reason: string | null;
  createdAt: string;
  resolvedAt: string | null;
  lostReason: string | null;
  /** The organization's response, once recorded. */
  response: { id: string; createdAt: string } | null;
  paymentId: string;
}

/** The states of a simulated subscription (assumed names; the spec shows none). */
export type SimSubscriptionStatus = 'ACTIVE' | 'COMPLETED' | 'CANCELED';

/** A subscription created through the simulator's sandbox; each cycle issues one invoice. */
export interface SimSubscription {
  id: string;
  description: string | null;
  status: SimSubscriptionStatus;
  isActive: boolean;
  isCompleted: boolean;
  firstCollectionDate: string;
  lastCollectionDate: string | null;
  nextCollectionDate: string | null;
  numberOfPayments: number | null;
  collectionMethod: string;
  onlyAutomaticCollection: boolean;
  items: SimInvoiceItem[];
  metadata: MetadataPair[];
  meta: Record<string, string>;
  customerId: string;
  /** The invoices its cycles issued, oldest first. */
  invoiceIds: string[];
  createdAt: string;
  canceledAt: string | null;
}

/** A registered webhook endpoint, with its secrets (never answered except by GET …/secret). */
export interface SimWebhookEndpoint {
  id: string;
  url: string;
  description: string;
  enabledEvents: string[];
  createdAt: string;
  secret: string;
  /** The secret before the last rotation, which still signs until `expiresAt` (ms since the epoch). */
  previousSecret: { secret: string; expiresAt: number } | null;
}

/** The public view of an endpoint: everything but its secrets. */
export function endpointView(endpoint: SimWebhookEndpoint): Omit<SimWebhookEndpoint, 'secret' | 'previousSecret'> {
  const { secret: _secret, previousSecret: _previous, ...view } = endpoint;
  return view;
}

/** A payment method a customer saved (PAYMENT_METHOD_CREATED's `paymentMethod`), with its customer's id. */
export interface SimPaymentMethod {
  id: string;
  type: string;
  confirmed: boolean;
  chargesConsented: boolean;
  cardDetail: {
    id: string;
    cardholder: string | null;
    last4: string;
    brand: string;
    expiryMonth: number;
    expiryYear: number;
    funding: string | null;
    issuer: string | null;
    country: string | null;
  } | null;
  bankAccount: { id: string; clabeFirst: string; clabeLast: string; bankCode: string; bankName: string; verified: boolean } | null;
  customerId: string;
  createdAt: string;
}

/** A copy of the records the simulator holds, oldest first: what a mirror of its organization should show. */
export interface SimulatorRecords {
  customers: SimCustomer[];
  invoices: SimInvoice[];
  payments: SimPayment[];
  refunds: SimRefund[];
  disputes: SimDispute[];
  subscriptions: SimSubscription[];
  paymentMethods: SimPaymentMethod[];
}

/** The in-memory data of one simulated organization. */
export class SimulatorState {
  readonly organization: { id: string; name: string };
  readonly customers = new Map<string, SimCustomer>();
  readonly concepts = new Map<string, SimConcept>();
  readonly invoices = new Map<string, SimInvoice>();
  readonly payments = new Map<string, SimPayment>();
  readonly attempts = new Map<string, SimPaymentAttempt[]>();
  readonly endpoints = new Map<string, SimWebhookEndpoint>();
  readonly refunds = new Map<string, SimRefund>();
  readonly disputes = new Map<string, SimDispute>();
  readonly subscriptions = new Map<string, SimSubscription>();
  readonly paymentMethods = new Map<string, SimPaymentMethod>();

  /** @param name The organization's name (a payment's beneficiary). */
  constructor(name = 'Simulated Organization') {
    this.organization = { id: newId('org'), name };
  }

  /** Whether this organization holds a resource (customer, concept, invoice, payment, endpoint, …) with this id. */
  holds(id: string): boolean {
    const maps: readonly Map<string, unknown>[] = [
      this.customers,
      this.concepts,
      this.invoices,
      this.payments,
      this.endpoints,
      this.refunds,
      this.disputes,
      this.subscriptions,
      this.paymentMethods,
    ];
    return maps.some((map) => map.has(id));
  }

  /** A deep copy of the records, so that a caller cannot change the simulator's state through it. */
  records(): SimulatorRecords {
    return structuredClone({
      customers: [...this.customers.values()],
      invoices: [...this.invoices.values()],
      payments: [...this.payments.values()],
      refunds: [...this.refunds.values()],
      disputes: [...this.disputes.values()],
      subscriptions: [...this.subscriptions.values()],
      paymentMethods: [...this.paymentMethods.values()],
    });
  }

  /** The customer with this id, or a 404. */
  customer(id: string): SimCustomer {
    return this.customers.get(id) ?? throwError(notFound('customer', id));
  }

  /** The invoice with this id, or a 404. */
  invoice(id: string): SimInvoice {
    return this.invoices.get(id) ?? throwError(notFound('invoice', id));
  }

  /** The payment with this id, or a 404. */
  payment(id: string): SimPayment {
    return this.payments.get(id) ?? throwError(notFound('payment', id));
  }

  /** The concept with this id, or a 404. */
  concept(id: string): SimConcept {
    return this.concepts.get(id) ?? throwError(notFound('payment concept', id));
  }

  /** The webhook endpoint with this id, or a 404. */
  endpoint(id: string): SimWebhookEndpoint {
    return this.endpoints.get(id) ?? throwError(notFound('webhook endpoint', id));
  }

  /** The dispute with this id, or a 404. */
  dispute(id: string): SimDispute {
    return this.disputes.get(id) ?? throwError(notFound('dispute', id));
  }

  /** The subscription with this id, or a 404. */
  subscription(id: string): SimSubscription {
    return this.subscriptions.get(id) ?? throwError(notFound('subscription', id));
  }

  /** The name of the unique customer field that `candidate` would repeat, if any. */
  duplicateCustomerField(
    candidate: Pick<SimCustomer, 'username' | 'email' | 'phoneNumber'>,
  ): 'username' | 'email' | 'phoneNumber' | undefined {
    for (const field of ['username', 'email', 'phoneNumber'] as const) {
      const value = candidate[field];
      if (value === null) continue;
      for (const customer of this.customers.values()) {
        if (customer[field] !== null && sameValue(field, customer[field], value)) return field;
      }
    }
    return undefined;
  }
}

// Email addresses differ only in case are one mailbox; usernames and E.164 numbers compare exactly.
function sameValue(field: string, a: string, b: string): boolean {
  return field === 'email' ? a.toLowerCase() === b.toLowerCase() : a === b;
}

function throwError(error: Error): never {
  throw error;
}
