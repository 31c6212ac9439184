import { z } from 'zod';
import { amount, currency, dateTime, id, integer, metadataFields, type Infer } from './primitives.js';

/** A customer (also the whole `data` of customer events). */
export const customerSchema = z.looseObject({
  id,
  name: z.string().nullish(),
  email: z.string().nullish(),
  phoneNumber: z.string().nullish(),
  username: z.string(),
  ...metadataFields,
});
export type Customer = Infer<typeof customerSchema>;

/** The customer embedded in invoice events, which also carries `customerId`. */
export const invoiceCustomerSchema = customerSchema.extend({ customerId: z.string().nullish() });
export type InvoiceCustomer = Infer<typeof invoiceCustomerSchema>;

export const organizationSchema = z.looseObject({ id, name: z.string() });
export type Organization = Infer<typeof organizationSchema>;

/** A payment concept (catalog item). */
export const paymentConceptSchema = z.looseObject({
  id,
  createdAt: dateTime,
  updatedAt: dateTime,
  amount: integer,
  currency,
  displayName: z.string(),
  description: z.string().nullish(),
  sku: z.string().nullish(),
  organizationId: z.string(),
  active: z.boolean(),
  recurrentDetailId: z.string().nullish(),
  amountEditable: z.boolean(),
  quantityEditable: z.boolean(),
  archivedAt: dateTime.nullish(),
  archivedById: z.string().nullish(),
  oneOff: z.boolean(),
  groupId: z.string().nullish(),
  createdById: z.string().nullish(),
  updatedById: z.string().nullish(),
  group: z.looseObject({ id, name: z.string() }).nullish(),
  ...metadataFields,
});
export type PaymentConcept = Infer<typeof paymentConceptSchema>;

/** An invoice item. `conceptId` is nullable: the spec has it as `string?` in payment-completed and subscription events. */
export const invoiceItemSchema = z.looseObject({
  description: z.string(),
  amount,
  currency,
  quantity: z.number().finite(),
  conceptId: z.string().nullish(),
  concept: paymentConceptSchema.nullish(),
});
export type InvoiceItem = Infer<typeof invoiceItemSchema>;

/** An invoice (payment request) as embedded in events. */
export const invoiceSchema = z.looseObject({
  id,
  amount,
  currency,
  dueDate: dateTime,
  expireDate: dateTime.nullish(),
  items: z.array(invoiceItemSchema),
  ...metadataFields,
});
export type Invoice = Infer<typeof invoiceSchema>;

/** Sanitized card details: never a full number. */
export const cardDetailSchema = z.looseObject({
  id,
  cardholder: z.string().nullish(),
  last4: z.string(),
  brand: z.string(),
  expiryMonth: integer,
  expiryYear: integer,
  funding: z.string().nullish(),
  issuer: z.string().nullish(),
  country: z.string().nullish(),
});
export type CardDetail = Infer<typeof cardDetailSchema>;

export const bankAccountSchema = z.looseObject({
  id,
  clabeFirst: z.string(),
  clabeLast: z.string(),
  bankCode: z.string(),
  bankName: z.string(),
  verified: z.boolean(),
});
export type BankAccount = Infer<typeof bankAccountSchema>;

/** A payment; events carry different subsets, so only `id`, `amount` and `currency` are required. */
export const paymentSchema = z.looseObject({
  id,
  amount,
  currency,
  paymentTime: dateTime.nullish(),
  type: z.string().nullish(),
  status: z.string().nullish(),
  isCompleted: z.boolean().nullish(),
  authorizationCode: z.string().nullish(),
  cardDetail: cardDetailSchema.nullish(),
  monthlyInstallments: integer.nullish(),
  ...metadataFields,
});
export type Payment = Infer<typeof paymentSchema>;

export const paymentMethodSchema = z.looseObject({
  id,
  type: z.string(),
  confirmed: z.boolean(),
  chargesConsented: z.boolean(),
  cardDetail: cardDetailSchema.nullish(),
  bankAccount: bankAccountSchema.nullish(),
});
export type PaymentMethod = Infer<typeof paymentMethodSchema>;

export const paymentAttemptSchema = z.looseObject({
  id,
  createdAt: dateTime,
  success: z.boolean(),
  startedOn: z.string().nullish(),
  automatic: z.boolean(),
  scheduled: z.boolean(),
  wasAttemptedByOrganization: z.boolean(),
  attemptNumber: integer,
  errorCode: z.string().nullish(),
  errorType: z.string().nullish(),
  errorResponse: z.string().nullish(),
});
export type PaymentAttempt = Infer<typeof paymentAttemptSchema>;

export const paymentSessionSchema = z.looseObject({
  id,
  returnUrl: z.string().nullish(),
  cancelUrl: z.string().nullish(),
  totalAmount: amount,
  currency,
  status: z.string(),
  displayMode: z.string(),
  origin: z.string(),
  ...metadataFields,
});
export type PaymentSession = Infer<typeof paymentSessionSchema>;

export const refundSchema = z.looseObject({
  id,
  amount,
  currency,
  status: z.string(),
  createdAt: dateTime,
  statusUpdatedAt: dateTime,
  customRefundReason: z.string().nullish(),
});
export type Refund = Infer<typeof refundSchema>;

export const disputeSchema = z.looseObject({
  id,
  status: z.string(),
  respondBy: dateTime.nullish(),
  reason: z.string().nullish(),
  createdAt: dateTime,
  resolvedAt: dateTime.nullish(),
  lostReason: z.string().nullish(),
});
export type Dispute = Infer<typeof disputeSchema>;

export const disputeResponseSchema = z.looseObject({ id, createdAt: dateTime });
export type DisputeResponse = Infer<typeof disputeResponseSchema>;

export const subscriptionItemSchema = z.looseObject({
  description: z.string(),
  amount,
  currency,
  quantity: z.number().finite(),
  conceptId: z.string().nullish(),
});
export type SubscriptionItem = Infer<typeof subscriptionItemSchema>;

export const subscriptionSchema = z.looseObject({
  id,
  description: z.string().nullish(),
  status: z.string().nullish(),
  isActive: z.boolean(),
  isCompleted: z.boolean(),
  firstCollectionDate: dateTime,
  lastCollectionDate: dateTime.nullish(),
  nextCollectionDate: dateTime.nullish(),
  numberOfPayments: integer.nullish(),
  collectionMethod: z.string(),
  onlyAutomaticCollection: z.boolean(),
  items: z.array(subscriptionItemSchema),
  ...metadataFields,
});
export type Subscription = Infer<typeof subscriptionSchema>;

/** An invoice a payment settled, as PAYMENT_COMPLETED lists it. */
export const relatedInvoiceSchema = z.looseObject({
  id,
  items: z.array(invoiceItemSchema),
  ...metadataFields,
});
export type RelatedInvoice = Infer<typeof relatedInvoiceSchema>;
