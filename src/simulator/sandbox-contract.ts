import { z } from 'zod';
import { apiInvoiceSchema, apiPaymentSchema, createInvoiceItemSchema } from '../events/rest-contract.js';
import { dateTime, id, integer, type Infer } from '../events/primitives.js';
import { disputeResponseSchema, disputeSchema, paymentMethodSchema, refundSchema, subscriptionSchema } from '../events/resources.js';

// The wire shapes of the simulator's own sandbox calls: routes the spec does not have, which the simulator adds
// so that every event type can be caused through its state (refunds, disputes, subscriptions, failed attempts).
// They are payhooks' assumptions, served by the simulator only; the real service may have none of them.
// The API client of the real service (src/client) does not know them; the flows call them with
// `createSandboxClient` (./sandbox-client.ts).

/** Input of `POST /v1/sandbox/payments/{paymentId}/complete` in the simulator: `SUCCEEDED` (spec) or `FAILED` (simulator only). */
export const sandboxCompleteInputSchema = z.object({ outcome: z.enum(['SUCCEEDED', 'FAILED']) });
export type SandboxCompleteInput = z.input<typeof sandboxCompleteInputSchema>;

/** `POST /v1/sandbox/payments/{paymentId}/refund`: the whole remaining amount unless `amount` is given. */
export const sandboxRefundInputSchema = z.object({
  amount: integer.positive().optional(),
  reason: z.string().min(1).optional(),
});
export type SandboxRefundInput = z.input<typeof sandboxRefundInputSchema>;

/** A refund as the simulator answers it: the event's fields and the payment it belongs to. */
export const sandboxRefundSchema = refundSchema.extend({ paymentId: id });

/** The answer to a refund: the refund and the payment, which stays completed. */
export const sandboxRefundResponseSchema = z.looseObject({ refund: sandboxRefundSchema, payment: apiPaymentSchema });
export type SandboxRefundResponse = Infer<typeof sandboxRefundResponseSchema>;

/** `POST /v1/sandbox/payments/{paymentId}/dispute`. */
export const sandboxOpenDisputeInputSchema = z.object({ reason: z.string().min(1).optional() });
export type SandboxOpenDisputeInput = z.input<typeof sandboxOpenDisputeInputSchema>;

/** `POST /v1/sandbox/disputes/{disputeId}/respond`; the evidence is not kept, only that a response exists. */
export const sandboxRespondDisputeInputSchema = z.object({ evidence: z.string().optional() });
export type SandboxRespondDisputeInput = z.input<typeof sandboxRespondDisputeInputSchema>;

/** `POST /v1/sandbox/disputes/{disputeId}/resolve`. */
export const sandboxResolveDisputeInputSchema = z.object({
  outcome: z.enum(['WON', 'LOST']),
  lostReason: z.string().min(1).optional(),
});
export type SandboxResolveDisputeInput = z.input<typeof sandboxResolveDisputeInputSchema>;

/** A dispute as the simulator answers it: the event's fields, its response and the disputed payment's id. */
export const sandboxDisputeSchema = disputeSchema.extend({ paymentId: id, response: disputeResponseSchema.nullable() });
export type SandboxDispute = Infer<typeof sandboxDisputeSchema>;

/** `POST /v1/sandbox/subscriptions`: items as in an invoice; one collection a month from `firstCollectionDate`. */
export const sandboxCreateSubscriptionInputSchema = z.object({
  customerId: id,
  description: z.string().min(1).optional(),
  items: z.array(createInvoiceItemSchema).min(1, 'a subscription needs at least one item'),
  /** Default: now. */
  firstCollectionDate: dateTime.optional(),
  /** How many collections in all; absent: until canceled. */
  numberOfPayments: integer.positive().optional(),
  /** Default `AUTOMATIC`. */
  collectionMethod: z.string().min(1).optional(),
  /** Default false. */
  onlyAutomaticCollection: z.boolean().optional(),
});
export type SandboxCreateSubscriptionInput = z.input<typeof sandboxCreateSubscriptionInputSchema>;

/** A subscription as the simulator answers it: the event's fields, the customer and the invoices issued so far. */
export const sandboxSubscriptionSchema = subscriptionSchema.extend({
  customerId: id,
  invoiceIds: z.array(id),
  createdAt: dateTime,
  canceledAt: dateTime.nullable(),
});
export type SandboxSubscription = Infer<typeof sandboxSubscriptionSchema>;

/** The answer to a subscription cycle: the subscription, moved on, and the invoice the cycle issued. */
export const sandboxCycleResponseSchema = z.looseObject({ subscription: sandboxSubscriptionSchema, invoice: apiInvoiceSchema });
export type SandboxCycleResponse = Infer<typeof sandboxCycleResponseSchema>;

/** One event the simulator emitted, as `GET /v1/sandbox/events` lists it. */
export const sandboxEventSchema = z.looseObject({ eventId: id, eventType: z.string(), data: z.unknown() });
export type SandboxEvent = Infer<typeof sandboxEventSchema>;

/**
 * `POST /v1/sandbox/customers/{customerId}/payment-methods`: a customer saves a card or a bank account (CLABE) for
 * direct debit. Only masked details are kept: a card's last four digits and brand, a CLABE's first and last digits.
 */
export const sandboxSavePaymentMethodInputSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('CARD'),
    brand: z.string().min(1).optional(),
    last4: z
      .string()
      .regex(/^\d{4}$/, 'last4 must be four digits')
      .optional(),
    expiryMonth: integer.min(1).max(12).optional(),
    expiryYear: integer.min(2000).optional(),
    cardholder: z.string().min(1).optional(),
    chargesConsented: z.boolean().optional(),
  }),
  z.object({
    type: z.literal('BANK_ACCOUNT'),
    clabe: z.string().regex(/^\d{18}$/, 'clabe must be 18 digits'),
    bankName: z.string().min(1).optional(),
    chargesConsented: z.boolean().optional(),
  }),
]);
export type SandboxSavePaymentMethodInput = z.input<typeof sandboxSavePaymentMethodInputSchema>;

/** A saved payment method as the simulator answers it: the event's fields and its customer's id. */
export const sandboxPaymentMethodSchema = paymentMethodSchema.extend({ customerId: id });
export type SandboxPaymentMethod = Infer<typeof sandboxPaymentMethodSchema>;

/** The input of `POST /v1/sandbox/customers/{customerId}/update`: the fields to change. */
export const sandboxUpdateCustomerInputSchema = z.object({
  name: z.string().min(1).nullable().optional(),
  email: z.string().min(3).nullable().optional(),
});
