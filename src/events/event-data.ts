import { z } from 'zod';
import { amount, metadataFields, type Infer } from './primitives.js';
import {
  customerSchema,
  disputeResponseSchema,
  disputeSchema,
  invoiceCustomerSchema,
  invoiceItemSchema,
  invoiceSchema,
  organizationSchema,
  paymentAttemptSchema,
  paymentMethodSchema,
  paymentSchema,
  paymentSessionSchema,
  refundSchema,
  relatedInvoiceSchema,
  subscriptionSchema,
} from './resources.js';

/** `data` of the invoice events (INVOICE_CREATED, _UPDATED, _CANCELED, _PAID, _PAID_OTHER). */
export const invoiceEventDataSchema = z.looseObject({
  invoiceId: z.string().min(1),
  description: z.string().nullish(),
  amount,
  invoice: invoiceSchema,
  payment: paymentSchema.nullish(),
  customer: invoiceCustomerSchema.nullish(),
  organization: organizationSchema,
  ...metadataFields,
  formAnswers: z.record(z.string(), z.string()).nullish(),
});
export type InvoiceEventData = Infer<typeof invoiceEventDataSchema>;

/** `data` of the customer events: the customer itself. */
export const customerEventDataSchema = customerSchema;
export type CustomerEventData = Infer<typeof customerEventDataSchema>;

/** `data` of PAYMENT_ATTEMPT_SUCCEEDED and PAYMENT_ATTEMPT_FAILED. */
export const paymentAttemptEventDataSchema = z.looseObject({
  payment: paymentSchema,
  paymentAttempt: paymentAttemptSchema,
  customer: customerSchema,
  paymentSession: paymentSessionSchema.nullish(),
});
export type PaymentAttemptEventData = Infer<typeof paymentAttemptEventDataSchema>;

/** `data` of PAYMENT_COMPLETED. */
export const paymentCompletedEventDataSchema = z.looseObject({
  payment: paymentSchema,
  items: z.array(invoiceItemSchema),
  relatedInvoices: z.array(relatedInvoiceSchema),
  paymentAttempt: paymentAttemptSchema.nullish(),
  customer: customerSchema,
  paymentSession: paymentSessionSchema.nullish(),
});
export type PaymentCompletedEventData = Infer<typeof paymentCompletedEventDataSchema>;

/** `data` of PAYMENT_METHOD_CREATED. */
export const paymentMethodEventDataSchema = z.looseObject({ paymentMethod: paymentMethodSchema, customer: customerSchema });
export type PaymentMethodEventData = Infer<typeof paymentMethodEventDataSchema>;

/** `data` of PAYMENT_REFUNDED. */
export const refundEventDataSchema = z.looseObject({
  refund: refundSchema,
  payment: paymentSchema,
  customer: customerSchema,
  organization: organizationSchema,
});
export type RefundEventData = Infer<typeof refundEventDataSchema>;

/** `data` of the dispute events (DISPUTE_CREATED, DISPUTE_RESPONSE_CREATED, DISPUTE_RESOLVED). */
export const disputeEventDataSchema = z.looseObject({
  dispute: disputeSchema,
  response: disputeResponseSchema.nullish(),
  payment: paymentSchema,
  customer: customerSchema,
  organization: organizationSchema,
});
export type DisputeEventData = Infer<typeof disputeEventDataSchema>;

/** `data` of the subscription events (SUBSCRIPTION_CREATED, _UPDATED, _CANCELED). */
export const subscriptionEventDataSchema = z.looseObject({
  subscription: subscriptionSchema,
  customer: customerSchema,
  organization: organizationSchema,
});
export type SubscriptionEventData = Infer<typeof subscriptionEventDataSchema>;
