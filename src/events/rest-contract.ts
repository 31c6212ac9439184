import { z } from 'zod';
import { EVENT_TYPES, type EventType } from './event-types.js';
import { dateTime, id, integer, type Infer } from './primitives.js';
import { customerSchema, invoiceSchema, paymentSchema } from './resources.js';

// The wire contract of the service's REST interface, shared by the API client (which checks what it sends
// and, leniently, what it gets) and the simulator (which emulates it). Where the spec says "not shown", the
// shape here is payhooks' documented assumption; docs/client.md lists each one.

/** The paths of the REST interface; the ones marked assumed are not in the spec's table. */
export const API_PATHS = {
  /** POST (spec); GET list and GET /{id} (assumed, REST convention). */
  customers: '/v1/customers',
  /** GET list and POST (spec); GET /{id} (assumed); POST /{id}/payments and /{id}/mark-paid (spec). */
  invoices: '/v1/invoices',
  /** GET /{id} (assumed). */
  payments: '/v1/payments',
  /** POST /{paymentId}/complete (spec, staging only). */
  sandboxPayments: '/v1/sandbox/payments',
  /** POST (spec); GET list (assumed); GET /{id}/secret and POST /{id}/secret/rotate (spec). */
  webhooks: '/v1/webhooks',
  /** GET list and POST /{id}/retry (spec). */
  webhookEvents: '/v1/webhook-events',
  customerPortalSession: '/v1/customer-portal-session',
  authLinks: '/v1/auth-links',
} as const;

/** The page size limits of every list endpoint. */
export const PAGE_SIZE = { default: 20, max: 100 } as const;

/** The service's rate limit: requests per minute per IP address. */
export const API_RATE_LIMIT_PER_MINUTE = 1000;

/** An E.164 phone number: `+`, a country code, at most 15 digits in all. */
export const e164PhoneNumber = z.string().regex(/^\+[1-9]\d{1,14}$/, 'must be an E.164 phone number such as +525512345678');

/** An event type name the service knows. */
export const eventTypeSchema = z.enum(EVENT_TYPES as [EventType, ...EventType[]]);

function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1');
}

/** A webhook URL: https, or http on localhost / 127.0.0.1 for local development (the simulator allows those). */
export const webhookUrlSchema = z.url().refine((value) => {
  // zod runs this even when z.url() has failed; that failure is already reported, and new URL would throw.
  if (!URL.canParse(value)) return true;
  const url = new URL(value);
  return url.protocol === 'https:' || isLoopbackHttp(url);
}, 'must be an https URL (http is allowed only for localhost and 127.0.0.1)');

// ---- request inputs (what goes inside `{ "input": … }`) ----

/** `POST /v1/customers`. Only `username` is required here (the spec does not say which fields are). */
/** Metadata pairs a write may set (assumed: the resources carry `metadata`, the spec's bodies do not show it). */
export const metadataInputSchema = z
  .array(z.object({ key: z.string().min(1).max(100), value: z.string().max(500) }))
  .max(50)
  .refine((pairs) => new Set(pairs.map((pair) => pair.key)).size === pairs.length, 'each metadata key at most once');

export const createCustomerInputSchema = z.object({
  username: z.string().min(1),
  name: z.string().min(1).optional(),
  email: z.email().optional(),
  phoneNumber: e164PhoneNumber.optional(),
  /** Assumed field (see {@link metadataInputSchema}). */
  metadata: metadataInputSchema.optional(),
});
export type CreateCustomerInput = z.input<typeof createCustomerInputSchema>;

/** A payment concept given inline in an invoice item. */
export const inlineConceptSchema = z.object({
  displayName: z.string().min(1),
  amount: integer.nonnegative(),
  currency: z.string().regex(/^[A-Z]{3}$/, 'must be a three-letter ISO 4217 code in upper case'),
});

/** One item of a new invoice: an inline concept (spec) or the id of an existing one (assumed). */
export const createInvoiceItemSchema = z
  .object({ quantity: integer.positive(), concept: inlineConceptSchema.optional(), conceptId: z.string().min(1).optional() })
  .refine((item) => (item.concept === undefined) !== (item.conceptId === undefined), 'give either concept or conceptId');

/** `POST /v1/invoices`. `collectionMethod` defaults to `AUTOMATIC` on the service side (assumed). */
export const createInvoiceInputSchema = z.object({
  customerId: id,
  dueDate: dateTime,
  collectionMethod: z.string().min(1).optional(),
  items: z.array(createInvoiceItemSchema).min(1, 'an invoice needs at least one item'),
  /** Assumed fields: the invoice resource has them, the spec's body does not show them. */
  description: z.string().min(1).optional(),
  metadata: metadataInputSchema.optional(),
});
export type CreateInvoiceInput = z.input<typeof createInvoiceInputSchema>;

/** `POST /v1/invoices/{invoiceId}/payments`. */
export const requestPaymentInputSchema = z.object({ paymentType: z.enum(['CASH', 'TRANSFER']) });
export type RequestPaymentInput = z.input<typeof requestPaymentInputSchema>;

/** `POST /v1/sandbox/payments/{paymentId}/complete`; `SUCCEEDED` is the one outcome the spec names. */
export const completePaymentInputSchema = z.object({ outcome: z.enum(['SUCCEEDED']) });
export type CompletePaymentInput = z.input<typeof completePaymentInputSchema>;

/** `POST /v1/invoices/{invoiceId}/mark-paid`; the body is not shown, so every field is optional (assumed). */
export const markPaidInputSchema = z.object({ paymentTime: dateTime.optional(), description: z.string().optional() });
export type MarkPaidInput = z.input<typeof markPaidInputSchema>;

/** `POST /v1/webhooks`. */
export const createWebhookInputSchema = z.object({
  url: webhookUrlSchema,
  description: z.string(),
  enabledEvents: z.array(eventTypeSchema).min(1, 'enable at least one event type'),
});
export type CreateWebhookInput = z.input<typeof createWebhookInputSchema>;

/** `POST /v1/customer-portal-session`; `home` is the one destination the spec names. */
export const customerPortalSessionInputSchema = z.object({
  destination: z.string().min(1),
  customerId: id,
});
export type CustomerPortalSessionInput = { destination: 'home' | (string & {}); customerId: string };

/** `POST /v1/auth-links`. */
export const authLinkInputSchema = z.object({ customerId: id, url: z.url().optional() });
export type AuthLinkInput = z.input<typeof authLinkInputSchema>;

/** The query of every list endpoint: `take` 1 to 100 (default 20 on the service), `skip` 0 or more. */
export const pageQuerySchema = z.object({
  take: integer
    .min(1, 'take must be at least 1')
    .max(PAGE_SIZE.max, `take must be at most ${PAGE_SIZE.max} (the service's page size limit)`)
    .optional(),
  skip: integer.min(0, 'skip must be 0 or more').optional(),
});

/** Query of `GET /v1/webhook-events`; filters other than paging are assumed. */
export const webhookEventsQuerySchema = pageQuerySchema.extend({
  eventId: z.string().optional(),
  endpointId: z.string().optional(),
  status: z.string().optional(),
});
export type WebhookEventsQuery = z.input<typeof webhookEventsQuerySchema>;

// ---- responses (lenient: unknown fields kept, fields not in the spec optional) ----

/** A customer as the API returns it. */
export const apiCustomerSchema = customerSchema.extend({
  createdAt: dateTime.nullish(),
  updatedAt: dateTime.nullish(),
  archivedAt: dateTime.nullish(),
});
export type ApiCustomer = Infer<typeof apiCustomerSchema>;

/** An invoice as the API returns it; `isPaid` and `canceledAt` are the fields the spec's InvoiceFilter names. */
export const apiInvoiceSchema = invoiceSchema.extend({
  customerId: z.string().nullish(),
  description: z.string().nullish(),
  collectionMethod: z.string().nullish(),
  isPaid: z.boolean().nullish(),
  paidAt: dateTime.nullish(),
  canceledAt: dateTime.nullish(),
  createdAt: dateTime.nullish(),
});
export type ApiInvoice = Infer<typeof apiInvoiceSchema>;

/** A payment as the API returns it. */
export const apiPaymentSchema = paymentSchema.extend({
  invoiceId: z.string().nullish(),
  createdAt: dateTime.nullish(),
});
export type ApiPayment = Infer<typeof apiPaymentSchema>;

/** The answer to a payment request: the pending payment and its instructions (shape not shown). */
export const requestPaymentResponseSchema = z.looseObject({
  payment: apiPaymentSchema,
  instructions: z.record(z.string(), z.unknown()).nullish(),
});
export type RequestPaymentResponse = Infer<typeof requestPaymentResponseSchema>;

/** The answer to a sandbox completion (assumed). */
export const completePaymentResponseSchema = z.looseObject({ payment: apiPaymentSchema, invoice: apiInvoiceSchema.nullish() });
export type CompletePaymentResponse = Infer<typeof completePaymentResponseSchema>;

/** The answer to mark-paid (assumed): the paid invoice and its `OTHER` payment. */
export const markPaidResponseSchema = z.looseObject({ invoice: apiInvoiceSchema, payment: apiPaymentSchema });
export type MarkPaidResponse = Infer<typeof markPaidResponseSchema>;

/** A webhook endpoint (response shape assumed). `enabledEvents` stays strings: the service may know more types. */
export const webhookEndpointSchema = z.looseObject({
  id,
  url: z.string(),
  description: z.string().nullish(),
  enabledEvents: z.array(z.string()),
  createdAt: dateTime.nullish(),
});
export type WebhookEndpoint = Infer<typeof webhookEndpointSchema>;

/** `GET /v1/webhooks/{id}/secret`. */
export const webhookSecretSchema = z.looseObject({ secret: z.string().min(1) });
export type WebhookSecret = Infer<typeof webhookSecretSchema>;

/** `POST /v1/webhooks/{id}/secret/rotate` (assumed): the new secret, and until when the old one still signs. */
export const rotatedWebhookSecretSchema = z.looseObject({ secret: z.string().min(1), previousSecretExpiresAt: dateTime.nullish() });
export type RotatedWebhookSecret = Infer<typeof rotatedWebhookSecretSchema>;

/** One try to deliver a webhook event. */
export const webhookDeliveryAttemptSchema = z.looseObject({
  attemptNumber: integer,
  attemptedAt: dateTime,
  /** The HTTP status the receiver answered; null when it did not answer (timeout, refused connection). */
  responseStatus: integer.nullish(),
  error: z.string().nullish(),
  durationMs: z.number().nullish(),
});
export type WebhookDeliveryAttempt = Infer<typeof webhookDeliveryAttemptSchema>;

/** A webhook event record: one event sent to one endpoint, with its delivery history (shape assumed). */
export const webhookEventRecordSchema = z.looseObject({
  id,
  endpointId: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  /** `pending` (more tries to come), `delivered` or `failed` (tries exhausted). */
  status: z.string(),
  attempts: z.array(webhookDeliveryAttemptSchema),
  createdAt: dateTime,
  nextAttemptAt: dateTime.nullish(),
});
export type WebhookEventRecord = Infer<typeof webhookEventRecordSchema>;

/** A one-time sign-in URL (customer portal, auth links). */
export const signInUrlSchema = z.looseObject({ url: z.url() });
export type SignInUrl = Infer<typeof signInUrlSchema>;

/**
 * One page of a list endpoint (shape assumed: `{data, total, take, skip}`). The client also accepts a bare
 * array, in case the service answers that way.
 */
export function listPageSchema<Item extends z.ZodType>(item: Item) {
  return z.looseObject({
    data: z.array(item),
    total: integer.nullish(),
    take: integer.nullish(),
    skip: integer.nullish(),
  });
}
/** One page of items. */
export interface ListPage<T> {
  data: T[];
  total?: number | null | undefined;
  take?: number | null | undefined;
  skip?: number | null | undefined;
}

/** Query of every list endpoint. */
export interface PageQuery {
  /** Page size, 1 to 100 (default 20 on the service). */
  take?: number | undefined;
  /** Records to skip (default 0). */
  skip?: number | undefined;
}

/** The error body of every failure: `{"error":{"message":"…"}}`. */
export const apiErrorBodySchema = z.object({ error: z.looseObject({ message: z.string() }) });
export type ApiErrorBody = z.infer<typeof apiErrorBodySchema>;

/**
 * The statuses the simulator answers, and the client maps to error classes (the spec does not give codes per
 * endpoint; these are the conventional ones): 400 bad input, 401 missing or bad key, 403 not allowed with this
 * key (sandbox in production), 404 unknown id or path, 409 uniqueness, idempotency-key reuse with another
 * body, or a payment in the wrong state, 429 rate limit (`Retry-After` in seconds), 5xx server trouble.
 */
export const API_ERROR_STATUSES = {
  validation: 400,
  authentication: 401,
  permission: 403,
  notFound: 404,
  conflict: 409,
  rateLimit: 429,
} as const;
