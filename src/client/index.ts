// The `payhooks/client` entry: the typed API client of the Payment Collection Service, its errors, its rate
// limiters, and the types of the REST contract (what each method takes and returns). Each export by name;
// test/public-surface.snapshot.json lists the run-time ones.

export { createClient, type ClientOptions } from './create-client.js';
export { ApiClient, type ApiPaths, type ClientEnvironment } from './api-client.js';
export type { ApiRequestObservation, ClientLogger, HttpMethod, RequestOptions } from './http-transport.js';
export {
  ApiConnectionError,
  ApiError,
  ApiInputError,
  ApiResponseValidationError,
  ApiTimeoutError,
  AuthenticationError,
  ConflictError,
  makeApiError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  ValidationError,
  type ApiErrorDetails,
  type FieldIssue,
} from './errors.js';
export { createRateLimiter, type RateLimiter, type RateLimiterOptions } from './rate-limiter.js';
export { createPostgresRateLimiter, type PostgresRateLimiter, type PostgresRateLimiterOptions } from '../store/rate-budget.js';
export { parseRetryAfter } from './retry-after.js';

// The resource groups (`client.invoices`, …) are made by the client; users need their types, not their classes.
export type { AuthLinks } from './auth-links.js';
export type { CustomerPortal } from './customer-portal.js';
export type { Customers } from './customers.js';
export type { Invoices } from './invoices.js';
export type { Payments } from './payments.js';
export type { Sandbox } from './sandbox.js';
export type { WebhookEvents } from './webhook-events.js';
export type { Webhooks } from './webhooks.js';

// The REST contract: the default base paths (ClientOptions.paths), request inputs and response shapes.
export {
  API_PATHS,
  type ApiCustomer,
  type ApiErrorBody,
  type ApiInvoice,
  type ApiPayment,
  type AuthLinkInput,
  type CompletePaymentInput,
  type CompletePaymentResponse,
  type CreateCustomerInput,
  type CreateInvoiceInput,
  type CreateWebhookInput,
  type CustomerPortalSessionInput,
  type ListPage,
  type MarkPaidInput,
  type MarkPaidResponse,
  type PageQuery,
  type RequestPaymentInput,
  type RequestPaymentResponse,
  type RotatedWebhookSecret,
  type SignInUrl,
  type WebhookDeliveryAttempt,
  type WebhookEndpoint,
  type WebhookEventRecord,
  type WebhookEventsQuery,
  type WebhookSecret,
} from '../events/rest-contract.js';
