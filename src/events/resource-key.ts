import { type EventType, isEventType } from './event-types.js';

function field(value: unknown, ...path: string[]): string | undefined {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === 'string' && current.length > 0 ? current : undefined;
}

const prefixed = (kind: ResourceKind, id: string | undefined) => (id ? `${kind}:${id}` : null);

/**
 * The kinds of resource an event's key names (`invoice:inv_1`, `customer:cus_1` …): the prefixes the key functions
 * below write, and what a resource's story (`payhooks events history`) accepts before the colon.
 */
export const RESOURCE_KINDS = ['invoice', 'customer', 'payment', 'dispute', 'subscription'] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

/** Reads an event's ordering key from its (unvalidated) data; null when the data does not name the resource. */
export type ResourceKeyFunction = (data: unknown) => string | null;

const invoiceKey: ResourceKeyFunction = (data) => prefixed('invoice', field(data, 'invoiceId') ?? field(data, 'invoice', 'id'));
const customerKey: ResourceKeyFunction = (data) => prefixed('customer', field(data, 'id'));
const paymentKey: ResourceKeyFunction = (data) => prefixed('payment', field(data, 'payment', 'id'));
// A payment method only matters as the customer's way to pay: ordering it with the customer's own events
// keeps "customer created" ahead of "method saved".
const paymentMethodKey: ResourceKeyFunction = (data) => prefixed('customer', field(data, 'customer', 'id'));
const disputeKey: ResourceKeyFunction = (data) => prefixed('dispute', field(data, 'dispute', 'id'));
const subscriptionKey: ResourceKeyFunction = (data) => prefixed('subscription', field(data, 'subscription', 'id'));

/**
 * The ordering key of each event type, spelled out per type: `satisfies Record<EventType, …>` makes a type added
 * to the catalog without a key here a compile error, instead of an event that silently runs unordered.
 */
export const RESOURCE_KEYS = {
  INVOICE_CREATED: invoiceKey,
  INVOICE_UPDATED: invoiceKey,
  INVOICE_CANCELED: invoiceKey,
  INVOICE_PAID: invoiceKey,
  INVOICE_PAID_OTHER: invoiceKey,
  CUSTOMER_CREATED: customerKey,
  CUSTOMER_UPDATED: customerKey,
  CUSTOMER_ARCHIVED: customerKey,
  PAYMENT_ATTEMPT_SUCCEEDED: paymentKey,
  PAYMENT_ATTEMPT_FAILED: paymentKey,
  PAYMENT_COMPLETED: paymentKey,
  PAYMENT_METHOD_CREATED: paymentMethodKey,
  PAYMENT_REFUNDED: paymentKey,
  DISPUTE_CREATED: disputeKey,
  DISPUTE_RESPONSE_CREATED: disputeKey,
  DISPUTE_RESOLVED: disputeKey,
  SUBSCRIPTION_CREATED: subscriptionKey,
  SUBSCRIPTION_UPDATED: subscriptionKey,
  SUBSCRIPTION_CANCELED: subscriptionKey,
} as const satisfies Record<EventType, ResourceKeyFunction>;

/**
 * The key that orders an event among the events of its resource (`invoice:inv_1`, `payment:pay_1` …), or null:
 * for a type this version does not know (its data's shape is unknown, so it runs unordered) or data that names
 * no resource. Safe on unvalidated data: the receiver calls it before any schema check.
 *
 * @example
 * resourceKeyOf('INVOICE_PAID', { invoiceId: 'inv_1' }) // 'invoice:inv_1'
 * resourceKeyOf('INVOICE_EXPLODED', { invoiceId: 'inv_1' }) // null
 */
export function resourceKeyOf(eventType: string, data: unknown): string | null {
  return isEventType(eventType) ? RESOURCE_KEYS[eventType](data) : null;
}
