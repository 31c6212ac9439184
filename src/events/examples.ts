import { randomUUID } from 'node:crypto';
import type { EventMap, EventType, WebhookEvent } from './event-types.js';

// Realistic payloads written from the spec, shared by tests, the simulator and `payhooks trigger`.
// Personal data is obviously fake: example.com addresses, +52 55 0000 numbers.

const organization = { id: 'org_7Hq2', name: 'Colegio Ejemplo' };
const metadata = [{ key: 'crmId', value: 'CRM-1042' }];
const meta = { crmId: 'CRM-1042' };

const customer = {
  id: 'cus_8Jd3kQ',
  name: 'Ada Example',
  email: 'ada@example.com',
  phoneNumber: '+525500000001',
  username: 'ada-example',
  metadata,
  meta,
};

const concept = {
  id: 'con_Tuition',
  createdAt: '2026-01-05T10:00:00.000Z',
  updatedAt: '2026-01-05T10:00:00.000Z',
  amount: 250000,
  currency: 'MXN',
  displayName: 'Tuition, November',
  description: 'Monthly tuition',
  sku: 'TUI-11',
  organizationId: organization.id,
  active: true,
  recurrentDetailId: null,
  amountEditable: false,
  quantityEditable: false,
  archivedAt: null,
  archivedById: null,
  oneOff: false,
  groupId: null,
  createdById: 'usr_1',
  updatedById: null,
  group: null,
  metadata: [],
  meta: {},
};

const item = { description: 'Tuition, November', amount: 250000, currency: 'MXN', quantity: 1, conceptId: concept.id };

const invoice = {
  id: 'inv_5Rk9Lm',
  amount: 250000,
  currency: 'MXN',
  dueDate: '2026-11-30T06:00:00.000Z',
  expireDate: '2026-12-31T06:00:00.000Z',
  items: [item],
  metadata,
  meta,
};

const cardDetail = {
  id: 'card_2Wq',
  cardholder: 'ADA EXAMPLE',
  last4: '4242',
  brand: 'VISA',
  expiryMonth: 12,
  expiryYear: 2029,
  funding: 'CREDIT',
  issuer: 'Example Bank',
  country: 'MX',
};

const payment = {
  id: 'pay_3Hn7Zx',
  amount: 250000,
  currency: 'MXN',
  paymentTime: '2026-11-20T17:45:12.000Z',
  type: 'CARD',
  status: 'SUCCEEDED',
  isCompleted: true,
  authorizationCode: 'A12345',
  cardDetail,
  metadata: [],
  meta: {},
};

const paymentAttempt = {
  id: 'att_9Kd',
  createdAt: '2026-11-20T17:45:10.000Z',
  success: true,
  startedOn: 'CHECKOUT',
  automatic: false,
  scheduled: false,
  wasAttemptedByOrganization: false,
  attemptNumber: 1,
  errorCode: null,
  errorType: null,
  errorResponse: null,
};

const paymentSession = {
  id: 'ps_4Lp',
  returnUrl: 'https://pay.example.com/thanks',
  cancelUrl: 'https://pay.example.com/cancel',
  totalAmount: 250000,
  currency: 'MXN',
  status: 'COMPLETED',
  displayMode: 'HOSTED',
  origin: 'INVOICE',
  metadata: [],
  meta: {},
};

const dispute = {
  id: 'dp_6Vb',
  status: 'NEEDS_RESPONSE',
  respondBy: '2026-12-05T00:00:00.000Z',
  reason: 'FRAUDULENT',
  createdAt: '2026-11-25T09:00:00.000Z',
  resolvedAt: null,
  lostReason: null,
};

const subscription = {
  id: 'sub_1Mz',
  description: 'Monthly tuition 2026-2027',
  status: 'ACTIVE',
  isActive: true,
  isCompleted: false,
  firstCollectionDate: '2026-09-01T06:00:00.000Z',
  lastCollectionDate: '2026-11-01T06:00:00.000Z',
  nextCollectionDate: '2026-12-01T06:00:00.000Z',
  numberOfPayments: 10,
  collectionMethod: 'AUTOMATIC',
  onlyAutomaticCollection: true,
  items: [{ ...item, conceptId: null }],
  metadata,
  meta,
};

function invoiceData(description: string, extra: Partial<EventMap['INVOICE_PAID']> = {}): EventMap['INVOICE_PAID'] {
  return {
    invoiceId: invoice.id,
    description,
    amount: invoice.amount,
    invoice,
    payment: null,
    customer: { ...customer, customerId: customer.id },
    organization,
    metadata,
    meta,
    formAnswers: null,
    ...extra,
  };
}

const EXAMPLE_DATA: EventMap = {
  INVOICE_CREATED: invoiceData('Payment request created'),
  INVOICE_UPDATED: invoiceData('Payment request updated'),
  INVOICE_CANCELED: invoiceData('Payment request canceled'),
  INVOICE_PAID: invoiceData('Payment request paid', { payment: { ...payment, monthlyInstallments: 1 }, formAnswers: { grade: '5B' } }),
  INVOICE_PAID_OTHER: invoiceData('Paid outside the service', {
    payment: { ...payment, id: 'pay_Oth1', type: 'OTHER', cardDetail: null, authorizationCode: null, monthlyInstallments: null },
  }),
  CUSTOMER_CREATED: customer,
  CUSTOMER_UPDATED: { ...customer, name: 'Ada Example-Lovelace' },
  CUSTOMER_ARCHIVED: customer,
  PAYMENT_ATTEMPT_SUCCEEDED: { payment, paymentAttempt, customer, paymentSession },
  PAYMENT_ATTEMPT_FAILED: {
    payment: { ...payment, status: 'FAILED', isCompleted: false, paymentTime: null, authorizationCode: null },
    paymentAttempt: { ...paymentAttempt, success: false, errorCode: '05', errorType: 'CARD_DECLINED', errorResponse: 'Do not honor' },
    customer,
    paymentSession,
  },
  PAYMENT_COMPLETED: {
    payment,
    items: [{ ...item, concept }],
    relatedInvoices: [{ id: invoice.id, items: [{ ...item, concept }], metadata, meta }],
    paymentAttempt,
    customer,
    paymentSession,
  },
  PAYMENT_METHOD_CREATED: {
    paymentMethod: { id: 'pm_5Tr', type: 'CARD', confirmed: true, chargesConsented: true, cardDetail, bankAccount: null },
    customer,
  },
  PAYMENT_REFUNDED: {
    refund: {
      id: 're_2Gh',
      amount: 50000,
      currency: 'MXN',
      status: 'SUCCEEDED',
      createdAt: '2026-11-21T10:00:00.000Z',
      statusUpdatedAt: '2026-11-21T10:05:00.000Z',
      customRefundReason: 'Charged twice',
    },
    payment,
    customer,
    organization,
  },
  DISPUTE_CREATED: { dispute, response: null, payment, customer, organization },
  DISPUTE_RESPONSE_CREATED: {
    dispute: { ...dispute, status: 'UNDER_REVIEW' },
    response: { id: 'dpr_1Qa', createdAt: '2026-11-27T12:00:00.000Z' },
    payment,
    customer,
    organization,
  },
  DISPUTE_RESOLVED: {
    dispute: { ...dispute, status: 'WON', resolvedAt: '2026-12-20T00:00:00.000Z' },
    response: { id: 'dpr_1Qa', createdAt: '2026-11-27T12:00:00.000Z' },
    payment,
    customer,
    organization,
  },
  SUBSCRIPTION_CREATED: { subscription, customer, organization },
  SUBSCRIPTION_UPDATED: { subscription: { ...subscription, numberOfPayments: 12 }, customer, organization },
  SUBSCRIPTION_CANCELED: {
    subscription: { ...subscription, status: 'CANCELED', isActive: false, nextCollectionDate: null },
    customer,
    organization,
  },
};

/** One realistic event of each of the 19 types. */
export const EXAMPLE_EVENTS: { readonly [K in EventType]: WebhookEvent<K> } = Object.fromEntries(
  Object.entries(EXAMPLE_DATA).map(([eventType, data]) => [
    eventType,
    { eventId: `evt_example_${eventType.toLowerCase()}`, eventType, data },
  ]),
) as { [K in EventType]: WebhookEvent<K> };

/**
 * A deep copy of the example of `eventType`, with a fresh eventId (or the one given) and `data` fields overridden.
 *
 * @example
 * const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_1', data: { amount: 0 } });
 */
export function exampleEvent<K extends EventType>(
  eventType: K,
  overrides: { eventId?: string; data?: Partial<EventMap[K]> } = {},
): WebhookEvent<K> {
  const base = structuredClone(EXAMPLE_EVENTS[eventType]) as { eventId: string; eventType: K; data: EventMap[K] };
  return {
    eventId: overrides.eventId ?? `evt_${randomUUID()}`,
    eventType,
    data: { ...base.data, ...overrides.data },
  } as WebhookEvent<K>;
}

/** Edge cases per group: nulls where allowed, optional fields absent, unknown fields at several depths. */
export const EDGE_CASE_EVENTS: readonly { name: string; event: { eventId: string; eventType: EventType; data: unknown } }[] = [
  {
    name: 'invoice event with every optional field null and an extra field',
    event: {
      eventId: 'evt_edge_inv_null',
      eventType: 'INVOICE_CREATED',
      data: {
        ...invoiceData('x'),
        description: null,
        payment: null,
        customer: null,
        formAnswers: null,
        invoice: { ...invoice, expireDate: null, newInvoiceField: { nested: true } },
        futureTopLevel: 'kept',
      },
    },
  },
  {
    name: 'invoice event with optional fields absent and no metadata',
    event: {
      eventId: 'evt_edge_inv_absent',
      eventType: 'INVOICE_UPDATED',
      data: {
        invoiceId: invoice.id,
        amount: 0,
        invoice: { id: invoice.id, amount: 0, currency: 'MXN', dueDate: '2026-11-30T00:00:00Z', items: [] },
        organization,
      },
    },
  },
  {
    name: 'customer with null name, email and phone',
    event: {
      eventId: 'evt_edge_cus',
      eventType: 'CUSTOMER_CREATED',
      data: { ...customer, name: null, email: null, phoneNumber: null, tags: ['vip'] },
    },
  },
  {
    name: 'failed attempt with no card detail and no session',
    event: {
      eventId: 'evt_edge_att',
      eventType: 'PAYMENT_ATTEMPT_FAILED',
      data: {
        payment: { ...payment, cardDetail: null, type: 'TRANSFER', isCompleted: false },
        paymentAttempt: { ...paymentAttempt, success: false, startedOn: null },
        customer,
        paymentSession: null,
      },
    },
  },
  {
    name: 'payment completed with no attempt, no session, concept-less items',
    event: {
      eventId: 'evt_edge_paid',
      eventType: 'PAYMENT_COMPLETED',
      data: {
        payment: { ...payment, type: 'CASH', cardDetail: null },
        items: [{ ...item, conceptId: null, concept: null }],
        relatedInvoices: [{ id: invoice.id, items: [] }],
        paymentAttempt: null,
        customer,
        paymentSession: null,
      },
    },
  },
  {
    name: 'bank-account payment method with an extra nested field',
    event: {
      eventId: 'evt_edge_pm',
      eventType: 'PAYMENT_METHOD_CREATED',
      data: {
        paymentMethod: {
          id: 'pm_bank',
          type: 'BANK_ACCOUNT',
          confirmed: false,
          chargesConsented: true,
          cardDetail: null,
          bankAccount: {
            id: 'ba_1',
            clabeFirst: '002',
            clabeLast: '1234',
            bankCode: '002',
            bankName: 'Example Bank',
            verified: false,
            extra: 1,
          },
        },
        customer,
      },
    },
  },
  {
    name: 'refund without a custom reason',
    event: {
      eventId: 'evt_edge_re',
      eventType: 'PAYMENT_REFUNDED',
      data: { ...EXAMPLE_DATA.PAYMENT_REFUNDED, refund: { ...EXAMPLE_DATA.PAYMENT_REFUNDED.refund, customRefundReason: null } },
    },
  },
  {
    name: 'dispute created with the response absent and respondBy null',
    event: {
      eventId: 'evt_edge_dp',
      eventType: 'DISPUTE_CREATED',
      data: { dispute: { ...dispute, respondBy: null, reason: null }, payment, customer, organization },
    },
  },
  {
    name: 'subscription without limits or next date',
    event: {
      eventId: 'evt_edge_sub',
      eventType: 'SUBSCRIPTION_UPDATED',
      data: {
        subscription: { ...subscription, numberOfPayments: null, lastCollectionDate: null, nextCollectionDate: null, description: null },
        customer,
        organization,
      },
    },
  },
];
