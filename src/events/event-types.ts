import {
  customerEventDataSchema,
  disputeEventDataSchema,
  invoiceEventDataSchema,
  paymentAttemptEventDataSchema,
  paymentCompletedEventDataSchema,
  paymentMethodEventDataSchema,
  refundEventDataSchema,
  subscriptionEventDataSchema,
} from './event-data.js';
import type { Infer } from './primitives.js';

/** The schema of `data` for each of the 19 event types of the spec. */
export const EVENT_DATA_SCHEMAS = {
  INVOICE_CREATED: invoiceEventDataSchema,
  INVOICE_UPDATED: invoiceEventDataSchema,
  INVOICE_CANCELED: invoiceEventDataSchema,
  INVOICE_PAID: invoiceEventDataSchema,
  INVOICE_PAID_OTHER: invoiceEventDataSchema,
  CUSTOMER_CREATED: customerEventDataSchema,
  CUSTOMER_UPDATED: customerEventDataSchema,
  CUSTOMER_ARCHIVED: customerEventDataSchema,
  PAYMENT_ATTEMPT_SUCCEEDED: paymentAttemptEventDataSchema,
  PAYMENT_ATTEMPT_FAILED: paymentAttemptEventDataSchema,
  PAYMENT_COMPLETED: paymentCompletedEventDataSchema,
  PAYMENT_METHOD_CREATED: paymentMethodEventDataSchema,
  PAYMENT_REFUNDED: refundEventDataSchema,
  DISPUTE_CREATED: disputeEventDataSchema,
  DISPUTE_RESPONSE_CREATED: disputeEventDataSchema,
  DISPUTE_RESOLVED: disputeEventDataSchema,
  SUBSCRIPTION_CREATED: subscriptionEventDataSchema,
  SUBSCRIPTION_UPDATED: subscriptionEventDataSchema,
  SUBSCRIPTION_CANCELED: subscriptionEventDataSchema,
} as const;

/** A known event type name. */
export type EventType = keyof typeof EVENT_DATA_SCHEMAS;

/** The 19 event types, in the spec's order. */
export const EVENT_TYPES = Object.keys(EVENT_DATA_SCHEMAS) as readonly EventType[];

/** Each event type's typed `data`. */
export type EventMap = { [K in EventType]: Infer<(typeof EVENT_DATA_SCHEMAS)[K]> };

/** True for the 19 known type names. */
export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_DATA_SCHEMAS, value);
}

/**
 * A known event: a discriminated union on `eventType`, so checking the type narrows `data`.
 *
 * @example
 * if (event.eventType === 'PAYMENT_REFUNDED') event.data.refund.amount; // number
 */
export type WebhookEvent<K extends EventType = EventType> = { [T in K]: { eventId: string; eventType: T; data: EventMap[T] } }[K];

/** An event whose type this version does not know; stored and acknowledged, handed to `onAny` handlers. */
export interface UnknownEvent {
  eventId: string;
  eventType: string;
  data: Record<string, unknown>;
  unknown: true;
}
